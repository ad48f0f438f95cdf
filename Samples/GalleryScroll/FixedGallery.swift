// The fixed gallery: a `Loader` decodes off the loop, at most 2 at a time (the cores), keeps
// thumbnails in a memory `LRUCache` (two screens' worth) over a `DiskCache` of decoded
// thumbnails, and a `Prefetcher` warms the 4 rows ahead in the scroll direction. The frame
// tick never waits: a cell whose image is not in memory shows a placeholder until it lands.
import Foundation
import SampleSupport
import Stallwatch
import StallwatchRemedies

final class FixedGallery: Gallery {
    private let loader: Loader<Thumbnail>
    private let prefetcher: Prefetcher<Thumbnail>
    private var visible: Range<Int> = 0..<0
    private var cells: [Int: Thumbnail] = [:]
    private var waiting: [Int: LoadRequest] = [:]
    private var cellFrames = 0
    private var placeholders = 0
    private var fromMemory = 0
    private var drawn: UInt64 = 0

    /// Loop thread.
    init(run: SampleRun, cacheDirectory: String, items: Int) {
        let disk = try? DiskCache(directory: cacheDirectory)
        loader = Loader(
            loop: run.loop, concurrencyLimit: 2, memory: LRUCache(countLimit: 24), disk: disk,
            encode: { $0.encoded }, decode: { try Thumbnail(encoded: $0) },
            load: { key in try photos.decode(key) })
        prefetcher = Prefetcher(
            loader: loader, keyForIndex: { $0 < items ? PhotoFiles.key($0) : nil },
            lookahead: ScrollPath.columns * ScrollPath.visibleRows)
    }

    func frame(_ visible: Range<Int>) -> Int {
        self.visible = visible
        // Cells that scrolled off are reused: forget their image and what they waited for.
        cells = cells.filter { visible.contains($0.key) }
        for (index, request) in waiting where !visible.contains(index) {
            request.cancel()
            waiting[index] = nil
        }
        for index in visible where cells[index] == nil {
            if let thumbnail = loader.cachedValue(forKey: PhotoFiles.key(index)) {
                cells[index] = thumbnail
                fromMemory += 1
            } else if waiting[index] == nil {
                waiting[index] = loader.mainActor.load(PhotoFiles.key(index)) { result in self.loaded(index, result) }
            }
        }
        // After the cells' own loads: the loader starts loads first in, first out, and what is on
        // screen comes before what might be.
        prefetcher.visibleRangeChanged(visible)
        for index in visible {
            if let thumbnail = cells[index] { drawn = drawn &+ thumbnail.checksum } else { placeholders += 1 }
        }
        cellFrames += visible.count
        return visible.count / ScrollPath.columns
    }

    private func loaded(_ index: Int, _ result: Result<Thumbnail, any Error>) {
        waiting[index] = nil
        if visible.contains(index), case .success(let thumbnail) = result { cells[index] = thumbnail }
    }

    /// Withdraws the warm-ups and lets the decodes already running finish, so no worker is
    /// mid-read when the process exits.
    func finish() {
        prefetcher.cancelAll()
        loader.waitUntilIdle(timeout: .seconds(5))
    }

    var statistics: GalleryStatistics {
        let stats = loader.statistics
        return GalleryStatistics(
            cellFrames: cellFrames, placeholders: placeholders,
            decodes: "\(stats.loadsStarted) decoded off the loop (\(loader.concurrencyLimit) at a time), "
                + "\(stats.diskHits) read from the disk cache, \(fromMemory) cells filled from memory, "
                + "\(prefetcher.started) prefetched, \(stats.cancelledLoads) cancelled")
    }
}
