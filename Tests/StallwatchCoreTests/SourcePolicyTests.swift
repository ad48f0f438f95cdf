// Rules the sources keep that no compiler checks.
import Foundation
import StallwatchCore
import Testing

@Suite struct SourcePolicyTests {
    /// `precondition` loses its message in an optimised build ("precondition failure" is all a
    /// release build printed for a second `StallMonitor`, a `ChunkedTask` budget of 0…): the
    /// sources check their callers' arguments with `require`, which keeps it.
    @Test func noPreconditionLosesItsMessageInARelease() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path))
        var offenders: [String] = []
        var swiftFiles = 0
        for case let file as String in files where file.hasSuffix(".swift") {
            swiftFiles += 1
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains("precondition(") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                offenders.append("\(file):\(number + 1)")
            }
        }
        #expect(swiftFiles > 100)
        #expect(offenders.isEmpty, "\(offenders)")
    }

    /// The environment's names have one owner, `StallwatchEnvironment`: no Swift source spells
    /// one out, and every name the preload shim's C reads is one of them.
    @Test func environmentVariablesAreNamedOnce() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path))
        let quoted = try Regex(#""STALLWATCH_[A-Z_]+"#)
        var spelled: [String] = []
        var cNames: Set<String> = []
        for case let file as String in files where file.hasSuffix(".swift") || file.hasSuffix(".c") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            let names = text.matches(of: quoted).map { String(text[$0.range].dropFirst()) }
            if file.hasSuffix(".c") {
                cNames.formUnion(names)
            } else if !file.hasSuffix("StallwatchEnvironment.swift"), !names.isEmpty {
                spelled.append("\(file): \(names)")
            }
        }
        #expect(spelled.isEmpty, "\(spelled)")
        #expect(!cNames.isEmpty, "the preload shim reads its variables by name")
        #expect(cNames.isSubset(of: StallwatchEnvironment.all), "\(cNames.subtracting(StallwatchEnvironment.all))")
    }
}
