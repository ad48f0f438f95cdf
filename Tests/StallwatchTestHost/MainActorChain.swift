// Three @MainActor async layers over a blocking call, each a real suspension away from the
// next: the repository yields before it blocks, so when it runs again (a job of the main queue,
// drained inside MainLoop.main) its callers live only in their async contexts.
import Glibc
import Stallwatch

@MainActor enum MainActorChain {
    @inline(never) static func handleRequest(sleep: Bool) async -> Int {
        let rows = await service(sleep: sleep)
        return rows &+ 1
    }

    @inline(never) static func service(sleep: Bool) async -> Int {
        let rows = await repository(sleep: sleep)
        return rows &* 2
    }

    @inline(never) static func repository(sleep: Bool) async -> Int {
        await Task.yield()
        loadRowsBlocking(sleep: sleep)
        return 3
    }

    /// The blocking call: 250 ms of spinning or sleeping on the main thread.
    @inline(never) static func loadRowsBlocking(sleep: Bool) {
        if sleep { usleep(250_000) } else { spinForHost(milliseconds: 250) }
    }
}
