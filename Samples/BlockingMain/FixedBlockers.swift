// The fixed variant: the same four jobs, none of them on the loop for more than a slice. The
// results still arrive on the loop, where the screen applies them.
import Foundation
import SampleSupport
import Stallwatch
import StallwatchRemedies

/// The usual remedies for the four blockers: chunking, offloading, and a read-mostly cache.
struct FixedBlockers: Blockers {
    let run: SampleRun
    /// The app's settings, version 1 until the refresher swaps in version 2.
    let settings = ReadMostlyCache<String, String>()

    init(run: SampleRun) {
        self.run = run
        settings.setValue("1", forKey: "version")
        settings.setValue("light", forKey: "theme")
    }

    /// The hash stays on the loop (its state is the screen's) but runs in 4 ms slices, one per
    /// loop iteration, so frames keep coming while it works; only the checksum is noted at the end.
    func hashPhotos() {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var slices = 0
        let task = ChunkedTask(
            loop: run.loop, items: 0..<photos.chunkCount, budget: .milliseconds(4), label: "hash photos",
            process: { chunk in hash = photos.hashChunk(chunk, seed: hash) },
            progress: { _, _ in slices += 1 },
            completion: { [run] _ in
                run.note(
                    "compute",
                    "hashed \(photos.chunkCount) chunks of 64 KiB, fnv \(hex(hash)) (\(slices) slices of 4 ms)")
            })
        task.start()
    }

    func loadDocument() {
        run.loop.mainActor.offload(label: "document loaded") {
            documents.loadAndSave(minimum: blockerDuration)
        } completion: { [run] result in
            guard case .success(let result) = result else { return }
            run.note(
                "file I/O",
                "read \(result.bytesRead >> 20) MiB, saved \(result.chunksSaved) × 256 KiB with fsync (offloaded)")
        }
    }

    func searchPosts() {
        run.loop.mainActor.offload(label: "posts found") {
            posts.search(minimum: blockerDuration)
        } completion: { [run] result in
            guard case .success(let result) = result else { return }
            run.note(
                "database",
                "\(result.queries) LIKE queries over \(posts.rowCount) rows, \(result.matches) matches (offloaded)")
        }
    }
}
