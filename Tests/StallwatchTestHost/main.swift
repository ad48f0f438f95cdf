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
        let ok = await MainActor.run { mainActorCheck() }
        finish("mainActor.run", ok)
    }
    // A watchdog for the test: never hang the suite.
    loop.schedule(after: .seconds(10)) { _ in
        print("timeout=1")
        loop.stop()
    }
    loop.run()
    report("returned", true)
default:
    FileHandle.standardError.write(Data("usage: StallwatchTestHost main-queue\n".utf8))
    exit(2)
}
