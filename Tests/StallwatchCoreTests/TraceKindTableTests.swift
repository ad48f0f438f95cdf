// The record-kind table of docs/trace-format.md is `TraceRecordKind`: the same ids and names,
// the same next id, and no kind in the reserved ranges.
import Foundation
import Testing

@testable import StallwatchCore

@Suite struct TraceKindTableTests {
    /// The rows of the table under "## Record kinds": (first column, second column) with the
    /// backticks and emphasis taken off.
    func documentedRows() throws -> [(id: String, kind: String)] {
        let docs = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/trace-format.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let start = try #require(text.range(of: "\n## Record kinds\n"))
        let section = text[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        return section[..<end].split(separator: "\n").filter { $0.hasPrefix("|") }.compactMap { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let first = cells.first, first.first?.isNumber == true else { return nil }
            return (first, cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`*")))
        }
    }

    @Test func theDocumentedTableIsTheEnum() throws {
        let rows = try documentedRows()
        let kinds = rows.filter { UInt8($0.id) != nil && $0.kind != "reserved" && $0.kind != "next id" }
        let documented = kinds.map { "\($0.id) \($0.kind)" }
        let code = TraceRecordKind.allCases.map { "\($0.rawValue) \($0)" }
        #expect(documented == code)
        #expect(rows.contains { $0.id == "0" && $0.kind == "reserved" })
        #expect(rows.contains { $0.id == "128–255" && $0.kind == "reserved" })
        // One "next id" row, the enum's.
        #expect(rows.filter { $0.kind == "next id" }.map(\.id) == ["\(TraceRecordKind.nextID)"])
    }

    @Test func theDocumentHasOneTableOfKinds() throws {
        let docs = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/trace-format.md")
        let lines = try String(contentsOf: docs, encoding: .utf8).split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("|") && $0.contains("next id") }.count == 1)
        #expect(lines.filter { $0.hasPrefix("| Id | Kind |") }.count == 1)
    }

    @Test func theNextIDFollowsTheLastKindAndNoKindIsReserved() {
        let ids = TraceRecordKind.allCases.map(\.rawValue)
        #expect(TraceRecordKind.nextID == ids.max()! + 1)
        #expect(!ids.contains(0))
        #expect(ids.allSatisfy { $0 < 128 })
        #expect(Set(ids).count == ids.count)
    }
}
