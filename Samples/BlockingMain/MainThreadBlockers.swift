// The blocking variant: each blocker runs right inside its loop callout, on the main thread,
// as code that causes stalls does.
import Foundation
import SampleSupport
import Stallwatch

/// The four jobs a screen starts; a variant decides where they run. Main actor (the main loop).
@MainActor protocol Blockers {
    func hashPhotos()
    func loadDocument()
    func searchPosts()
    func refreshSettings()
}

/// Every job on the main loop.
struct MainThreadBlockers: Blockers {
    let run: SampleRun

    func hashPhotos() {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for chunk in 0..<photos.chunkCount { hash = photos.hashChunk(chunk, seed: hash) }
        run.note("compute", "hashed \(photos.chunkCount) chunks of 64 KiB, fnv \(hex(hash))")
    }

    func loadDocument() {
        let result = documents.loadAndSave(minimum: blockerDuration)
        run.note("file I/O", "read \(result.bytesRead >> 20) MiB, saved \(result.chunksSaved) × 256 KiB with fsync")
    }

    func searchPosts() {
        let result = posts.search(minimum: blockerDuration)
        run.note("database", "\(result.queries) LIKE queries over \(posts.rowCount) rows, \(result.matches) matches")
    }

    func refreshSettings() {
        let settings = LockedSettings()
        let run = self.run
        let loop = run.loop
        // The refresher holds the lock for its whole refresh; the screen reads as soon as it
        // is held, and waits.
        Thread.detachNewThread {
            settings.refresh(version: 2) {
                loop.mainActor.post(label: "read settings") {
                    let watch = Stopwatch()
                    let version = settings.value("version") ?? "?"
                    run.note(
                        "lock", "read settings v\(version) after waiting \(ms(watch.elapsedMilliseconds)) ms")
                }
            }
        }
    }
}

func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
func ms(_ value: Double) -> String { String(format: "%.1f", value) }
