// On MainLoop.main, DispatchQueue.main and @MainActor work runs on the main thread inside the
// loop (checked in a subprocess: the test runner does not own the main thread).
import Foundation
import StallwatchTestSupport
import Testing

@Suite struct MainQueueTests {
    @Test func dispatchMainAndMainActorRunInsideMainLoop() throws {
        let run = try runProduct("StallwatchTestHost", ["main-queue"])
        #expect(run.exitCode == 0, "\(run)")
        let lines = Set(run.output.split(separator: "\n").map(String.init))
        for key in [
            "dispatch.async", "dispatch.asyncAfter", "task.mainActor", "mainActor.run", "returned",
        ] {
            #expect(lines.contains("\(key)=1"), "\(key) in \(run.output)\n\(run)")
        }
        #expect(!lines.contains("timeout=1"), "\(run.output)\n\(run)")
    }
}

// The async form of `annotate`, on the main actor inside MainLoop.main: samples of a stall
// inside the scope record it (and its category).
@Suite struct AsyncAnnotationTests {
    @Test func samplesInsideAnAsyncScopeRecordIt() throws {
        let run = try runProduct("StallwatchTestHost", ["annotate-async"])
        #expect(run.exitCode == 0, "\(run)")
        #expect(
            run.output.split(separator: "\n").contains("annotation=refresh feed:database"), "\(run.output)\n\(run)")
    }
}
