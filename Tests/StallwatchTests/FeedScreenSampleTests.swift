// The feed screen's remedy works and the tool proves it: the FeedScreen sample that queries
// SQLite on the main thread records a database stall; the fixed one records no database stall
// and no stall of the query's size (100 ms or more).
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct FeedScreenSampleTests {
    func record(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> DecodedTrace {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID()).swtrace").path
        defer { unlink(path) }
        let run = try runProduct(
            "FeedScreen", arguments, environment: ["STALLWATCH_TRACE": path], sourceLocation: sourceLocation)
        #expect(run.exitCode == 0, "\(run)", sourceLocation: sourceLocation)
        return DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
    }

    @Test(
        .disabled(
            if: Sanitizer.thread,
            "a running query's libsqlite3 frames are what says database; TSan delivers the sampling signal late"))
    func theBlockingFeedStallsInTheDatabaseAndTheFixedOneDoesNot() throws {
        let blocking = try record([])
        let categories = blocking.stalls.map { Classifier().breakdown(of: $0).dominant }
        #expect(categories.contains(.database), "\(categories)")
        let fixed = try record(["--fixed"])
        // No database stall and no stall of the query's size (under ASan the sample's start-up
        // allocations alone can make one ~20 ms hitch).
        let fixedCategories = fixed.stalls.map { Classifier().breakdown(of: $0).dominant }
        #expect(!fixedCategories.contains(.database), "\(fixed.stalls.map(\.callout))")
        #expect(
            fixed.stalls.allSatisfy { ($0.duration ?? .zero) < .milliseconds(100) }, "\(fixed.stalls.map(\.callout))")
    }
}
