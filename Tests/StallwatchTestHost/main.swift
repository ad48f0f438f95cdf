import Dispatch
import Foundation
import Stallwatch

// A helper the tests run as a subprocess: unlike the test runner, it owns the process's
// real main thread, so it can run `MainLoop.main`. Prints one `key=value` line per check.

func report(_ key: String, _ value: Bool) {
    print("\(key)=\(value ? 1 : 0)")
}

/// Whether the caller runs on the main thread inside a callout of `MainLoop.main`.
func insideMainLoop() -> Bool {
    MainLoop.main.isCurrent && MainLoop.main.currentMode == .default
}

@MainActor func mainActorCheck() -> Bool { insideMainLoop() }

let scenario = CommandLine.arguments.dropFirst().first ?? ""
switch scenario {
case "main-queue":
    let loop = MainLoop.main
    let expected = 4
    nonisolated(unsafe) var done = 0
    @Sendable func finish(_ key: String, _ ok: Bool) {
        report(key, ok)
        done += 1
        if done == expected { loop.stop() }
    }
    DispatchQueue.main.async { finish("dispatch.async", insideMainLoop()) }
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(30)) {
        finish("dispatch.asyncAfter", insideMainLoop())
    }
    Task { @MainActor in finish("task.mainActor", insideMainLoop()) }
    Task.detached {
        // Every check reports from the main thread: `done` is the main thread's alone.
        await MainActor.run { finish("mainActor.run", mainActorCheck()) }
    }
    // A watchdog for the test: never hang the suite.
    loop.schedule(after: .seconds(10)) { _ in
        print("timeout=1")
        loop.stop()
    }
    loop.run()
    report("returned", true)
case "stalls":
    // Zero-code recording: STALLWATCH_TRACE set by the test makes MainLoop.main record.
    let loop = MainLoop.main
    loop.post(label: "spin") { spinForHost(milliseconds: 80) }
    loop.post(label: "sleep") { usleep(60_000) }
    loop.schedule(after: .milliseconds(400)) { _ in loop.stop() }
    loop.run()
    report("returned", true)
case "hang":
    // Hangs forever in a callout; the test kills the process mid-hang.
    let loop = MainLoop.main
    loop.post(label: "hang forever") {
        FileHandle.standardOutput.write(Data("hanging\n".utf8))
        spinForHost(milliseconds: 3_600_000)
    }
    loop.run()
default:
    FileHandle.standardError.write(Data("usage: StallwatchTestHost main-queue|stalls|hang\n".utf8))
    exit(2)
}

@inline(never) func spinForHost(milliseconds: UInt64) {
    let end = MainLoop.monotonicNanos() + milliseconds * 1_000_000
    var x: UInt64 = 0
    while MainLoop.monotonicNanos() < end { x = x &* 31 &+ 1 }
    if x == 7 { print("") }
}
