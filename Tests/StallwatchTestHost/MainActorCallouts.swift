// The main loop's callouts and the remedies' callbacks are main-actor code: this file uses
// main-actor state (`MainActorScreen`) in each of them with no wrapper, so it compiles only
// because they are; each callout reports whether it ran on the main thread inside the loop.
import Dispatch
import Glibc
import Stallwatch
import StallwatchRemedies

/// Main-actor state, as an app's screen is.
@MainActor final class MainActorScreen {
    static let expected = [
        "post", "post.remote", "timer", "observer", "source", "frame", "chunked", "throttle", "debounce", "idle",
        "transaction", "offload", "loader", "prefetch.key",
    ]
    private var seen: [String: Bool] = [:]
    var total = 0

    /// Records that `key` ran, and whether it ran on the main thread inside `MainLoop.main`.
    func ran(_ key: String) {
        guard seen[key] == nil else { return }
        seen[key] = insideMainLoop()
        if Self.expected.allSatisfy({ seen[$0] != nil }) { MainLoop.main.stop() }
    }

    func report() {
        for key in Self.expected { print("\(key)=\(seen[key] == true ? 1 : 0)") }
        print("total=\(total)")
    }
}

/// Registers one of each callout on `MainLoop.main` and runs it until all have run.
@MainActor func runMainActorCallouts() {
    let loop = MainLoop.main
    let screen = MainActorScreen()
    loop.mainActor.post { screen.ran("post") }
    DispatchQueue.global().async {
        loop.mainActor.post(label: "remote") { screen.ran("post.remote") }
    }
    loop.schedule(after: .milliseconds(1)) { _ in screen.ran("timer") }
    loop.addObserver(.beforeWaiting, repeats: false) { _, _ in screen.ran("observer") }
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    _ = try! loop.addSource(fd: fds[0], .readable) { source, _ in
        screen.ran("source")
        source.cancel()
    }
    _ = write(fds[1], "x", 1)
    let clock = FrameClock(loop: loop) { _ in screen.ran("frame") }
    clock.start()
    let chunked = ChunkedTask(
        loop: loop, items: [1, 2, 3], process: { screen.total += $0 }, completion: { _ in screen.ran("chunked") })
    chunked.start()
    let throttle = Throttle(loop: loop, minimumInterval: .milliseconds(1))
    throttle.request { screen.ran("throttle") }
    let debounce = Debounce(loop: loop, quietPeriod: .milliseconds(1))
    debounce.request { screen.ran("debounce") }
    let idle = IdleScheduler(loop: loop)
    idle.schedule { _ in screen.ran("idle") }
    let transactions = LoopTransactions(loop: loop)
    transactions.request(screen, "commit") { $0.ran("transaction") }
    loop.mainActor.offload {
        21 * 2
    } completion: { result in
        screen.total += (try? result.get()) ?? 0
        screen.ran("offload")
    }
    let loader = Loader<Int>(loop: loop, memory: LRUCache()) { _ in 7 }
    loader.mainActor.load("k") { _ in screen.ran("loader") }
    let prefetcher = Prefetcher(loader: loader) { index in
        screen.ran("prefetch.key")
        return "row \(index)"
    }
    loop.mainActor.post { prefetcher.visibleRangeChanged(0..<2) }
    // A watchdog for the test: never hang the suite.
    loop.schedule(after: .seconds(10)) { _ in
        print("timeout=1")
        loop.stop()
    }
    loop.run()
    clock.stop()
    screen.report()
    close(fds[0])
    close(fds[1])
}
