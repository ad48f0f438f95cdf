// The fixed variant: the same four jobs, none of them on the loop for more than a slice. The
// results still arrive on the loop, where the screen applies them.
import Foundation
import SampleSupport
import Stallwatch

/// The remedies of seed 000: offloading, and a read-mostly cache.
struct FixedBlockers: Blockers {
    let run: SampleRun
    /// The app's settings, version 1 until the refresher swaps in version 2.
    let settings = ReadMostlyCache<String, String>()

    init(run: SampleRun) {
        self.run = run
        settings.setValue("1", forKey: "version")
        settings.setValue("light", forKey: "theme")
    }

    /// The hash runs on a background queue; only its result comes back. (A `ChunkedTask` in
    /// 4 ms slices keeps the loop responsive on a quiet machine, but a loop that is busy back
    /// to back is preempted on a loaded one and its slices overrun the frame anyway.)
    func hashPhotos() {
        let bound = LoopBound(run)
        run.loop.offload(label: "photos hashed") {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for chunk in 0..<photos.chunkCount { hash = photos.hashChunk(chunk, seed: hash) }
            return hash
        } completion: { result in
            guard case .success(let hash) = result else { return }
            bound.value.note("compute", "hashed \(photos.chunkCount) chunks of 64 KiB, fnv \(hex(hash)) (offloaded)")
        }
    }

    func loadDocument() {
        let bound = LoopBound(run)
        run.loop.offload(label: "document loaded") {
            documents.loadAndSave(minimum: blockerDuration)
        } completion: { result in
            guard case .success(let result) = result else { return }
            bound.value.note(
                "file I/O",
                "read \(result.bytesRead >> 20) MiB, saved \(result.chunksSaved) × 256 KiB with fsync (offloaded)")
        }
    }

    func searchPosts() {
        let bound = LoopBound(run)
        run.loop.offload(label: "posts found") {
            posts.search(minimum: blockerDuration)
        } completion: { result in
            guard case .success(let result) = result else { return }
            bound.value.note(
                "database",
                "\(result.queries) LIKE queries over \(posts.rowCount) rows, \(result.matches) matches (offloaded)")
        }
    }
}
