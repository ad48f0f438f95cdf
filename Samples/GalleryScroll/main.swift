// A photo gallery: 300 photos in a 3-column grid scrolling at 60 Hz (a new row of
// three every 8 frames, 3 rows back up every 2 s). Each cell needs a decoded image:
// a real 1 MiB file read and reduced to a thumbnail with ≥ 25 ms of per-pixel work.
//   blocking   rows entering the screen are read and decoded inside the frame tick
//   --fixed    a `Loader` decodes off the loop (2 at a time, memory `LRUCache`, `DiskCache` of
//              thumbnails), a `Prefetcher` warms the rows ahead in the scroll direction, and a
//              cell whose image is not ready shows a placeholder (counted)
//
//   swift run GalleryScroll [--fixed] [--seconds S]
//   stallwatch record -o gallery.swtrace -- .build/debug/GalleryScroll --fixed
import Foundation
import SampleSupport
import Stallwatch
import StallwatchRemedies

let run = SampleRun(name: "GalleryScroll")
let directory = makeTemporaryDirectory("GalleryScroll", removedAfter: run)
let photos = PhotoFiles(directory: directory)
let path = ScrollPath(rows: 100)
let gallery: any Gallery =
    run.options.fixed
    ? FixedGallery(run: run, cacheDirectory: directory + "/thumbnails", items: path.rows * ScrollPath.columns)
    : BlockingGallery()

run.onFrame = { tick in gallery.frame(path.visibleItems(atFrame: tick.frameIndex)) }
run.onFinish = {
    gallery.finish()
    let stats = gallery.statistics
    run.note("cells", "\(stats.cellFrames) cell-frames, \(stats.placeholders) showed a placeholder")
    run.note("decodes", stats.decodes)
}
run.run { _ in }
