// The four classic main-thread blockers, each a distinct callout on the main loop:
// heavy compute (hashing a large buffer), file I/O (`Data(contentsOf:)` + write + fsync), a
// SQLite query over a 200,000-row table, and a lock the main loop needs while another thread
// holds it. With `--fixed` the same work runs without stalling: the hash, the I/O and the query
// with `loop.offload` (only their results come back to the loop), and the settings behind a
// `ReadMostlyCache` whose readers never wait for the slow refresher.
//
//   swift run BlockingMain [--fixed] [--seconds S]
//   stallwatch record -o blocking.swtrace -- .build/debug/BlockingMain
//   stallwatch report blocking.swtrace      (or STALLWATCH_TRACE=blocking.swtrace ...)
import Foundation
import SampleSupport
import Stallwatch
import StallwatchRemedies

let run = SampleRun(name: "BlockingMain")
// Setup happens before the loop runs, so it is neither a stall nor part of the run time.
let photos = PhotoLibrary()
let documents = DocumentStore(directory: makeTemporaryDirectory("BlockingMain", removedAfter: run))
let posts = PostsDatabase(rows: 200_000)

// The screen keeps rendering a dozen feed rows per frame, whatever else the loop does.
var frameHash: UInt64 = 0
run.onFrame = { tick in
    for row in 0..<12 { frameHash = frameHash &* 31 &+ UInt64(row) &+ tick.frameIndex }
    return 12
}

run.run { run in
    // When each blocker starts, as a fraction of the run: one after another, all done in time.
    let seconds = run.options.seconds
    func at(_ fraction: Double) -> Duration { .nanoseconds(Int64(seconds * fraction * 1e9)) }
    let blockers: any Blockers = run.options.fixed ? FixedBlockers(run: run) : MainThreadBlockers(run: run)
    run.loop.schedule(after: at(0.075), label: "hash photos") { _ in blockers.hashPhotos() }
    run.loop.schedule(after: at(0.275), label: "load document") { _ in blockers.loadDocument() }
    run.loop.schedule(after: at(0.475), label: "search posts") { _ in blockers.searchPosts() }
    run.loop.schedule(after: at(0.675), label: "refresh settings") { _ in blockers.refreshSettings() }
}
