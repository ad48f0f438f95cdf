// The demo, the README's main job: an app-like main loop (a 60 Hz frame clock doing light
// per-frame work, small updates) that stalls once in each category, each step bounded by time
// so it stalls on every machine: decoding an image (compute), saving a document with
// `Data(contentsOf:)` + write + fsync (I/O), reading settings while another thread holds their
// lock (lock wait), searching posts in SQLite (database) and a retry back-off (`usleep`, other).
//
//   scripts/demo.sh                          build, record in full mode, report
//   stallwatch record --mode full -o demo.swtrace -- .build/release/Demo
//   stallwatch report demo.swtrace
import Foundation
import SampleSupport
import Stallwatch

let run = SampleRun(name: "Demo", defaultSeconds: 2.5, hasFixedVariant: false)
// Setup happens before the loop runs: neither a stall nor part of the run time.
let photos = PhotoLibrary()
let documents = DocumentStore(directory: makeTemporaryDirectory("Demo", removedAfter: run))
let posts = PostsDatabase(rows: 200_000)
let settings = LockedSettings()

/// Light per-frame work: the layout of a few hundred items, well inside the budget.
@inline(never) func layout(items: Int) -> Int {
    var total = 0
    for item in 0..<items { total &+= (item &* 2_654_435_761) >> 7 }
    return total
}

var layoutTotal = 0
run.onFrame = { tick in
    layoutTotal &+= layout(items: 300 + Int(tick.frameIndex % 7))
    return 1
}

run.run { run in
    let loop = run.loop
    func at(_ fraction: Double) -> Duration { .nanoseconds(Int64(run.options.seconds * fraction * 1e9)) }
    // One timer per stall, each on its own line: the report names where each was scheduled.
    loop.schedule(after: at(0.10), label: "decode image") { _ in
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for chunk in 0..<photos.chunkCount { hash = photos.hashChunk(chunk, seed: hash) }
        run.note("compute", "decoded \(photos.chunkCount) chunks of 64 KiB, hash \(String(hash, radix: 16))")
    }
    loop.schedule(after: at(0.26), label: "save document") { _ in
        let saved = documents.loadAndSave(minimum: blockerDuration)
        run.note("file I/O", "read \(saved.bytesRead >> 20) MiB, saved \(saved.chunksSaved) × 256 KiB with fsync")
    }
    loop.schedule(after: at(0.42), label: "read settings") { _ in
        let read = settings.readWhileAnotherThreadRefreshes(version: 2, key: "version")
        run.note(
            "lock wait", "settings v\(read.value ?? "?") after \(String(format: "%.1f", read.waitedMilliseconds)) ms")
    }
    loop.schedule(after: at(0.58), label: "search posts") { _ in
        let found = posts.search(minimum: blockerDuration)
        run.note("database", "\(found.queries) LIKE queries over \(posts.rowCount) rows, \(found.matches) matches")
    }
    loop.schedule(after: at(0.74), label: "retry backoff") { _ in
        usleep(120_000)
        run.note("other", "backed off 120 ms before retrying")
    }
    for index in 0..<20 {
        loop.schedule(after: at(0.02 + 0.045 * Double(index)), label: "small update") { _ in
            layoutTotal &+= layout(items: 2_000)
        }
    }
}
