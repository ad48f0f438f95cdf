// The blocking gallery: a cell that scrolls on screen reads and decodes its image right in the
// frame tick, and forgets it when it scrolls off (cell reuse without a cache).
import Foundation
import SampleSupport
import Stallwatch

/// What a gallery reports at the end.
struct GalleryStatistics {
    var cellFrames = 0
    var placeholders = 0
    var decodes = ""
}

/// A gallery screen: renders the visible items each frame. Main actor (the main loop).
@MainActor protocol Gallery {
    /// Renders `visible`; returns the grid rows drawn.
    func frame(_ visible: Range<Int>) -> Int
    var statistics: GalleryStatistics { get }
    /// Called when the run is over: nothing may still be working in the background.
    func finish()
}

/// Decodes on the loop.
final class BlockingGallery: Gallery {
    func finish() {}

    private var cells: [Int: Thumbnail] = [:]
    private var decoded = 0
    private var cellFrames = 0
    private var drawn: UInt64 = 0

    func frame(_ visible: Range<Int>) -> Int {
        cells = cells.filter { visible.contains($0.key) }
        for index in visible where cells[index] == nil {
            cells[index] = try? photos.decode(PhotoFiles.key(index))
            decoded += 1
        }
        for index in visible { drawn = drawn &+ (cells[index]?.checksum ?? 0) }
        cellFrames += visible.count
        return visible.count / ScrollPath.columns
    }

    var statistics: GalleryStatistics {
        GalleryStatistics(
            cellFrames: cellFrames, placeholders: 0,
            decodes: "\(decoded) decoded on the loop, checksum \(drawn % 100_000)")
    }
}
