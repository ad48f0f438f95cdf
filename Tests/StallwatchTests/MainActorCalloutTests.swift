// On MainLoop.main, posted closures, timers, sources, observers, frame ticks, offload and loader
// completions and the remedies' callbacks are main-actor code: the test host uses main-actor
// state in each with no wrapper (so it compiles only if they are) and each runs on the main
// thread inside the loop (checked in a subprocess: the test runner does not own the main thread).
import Foundation
import StallwatchTestSupport
import Testing

@Suite struct MainActorCalloutTests {
    @Test func mainActorStateIsUsedInEveryKindOfCallout() throws {
        let run = try runProduct("StallwatchTestHost", ["main-actor"])
        #expect(run.exitCode == 0, "\(run)")
        let lines = Set(run.output.split(separator: "\n").map(String.init))
        for key in [
            "post", "post.remote", "timer", "observer", "source", "frame", "chunked", "throttle", "debounce", "idle",
            "transaction", "offload", "loader", "prefetch.key", "returned",
        ] {
            #expect(lines.contains("\(key)=1"), "\(key) in \(run.output)\n\(run)")
        }
        // The chunked task's items (1 + 2 + 3) and the offloaded work's result (42).
        #expect(lines.contains("total=48"), "\(run.output)")
        #expect(!lines.contains("timeout=1"), "\(run.output)\n\(run)")
    }
}
