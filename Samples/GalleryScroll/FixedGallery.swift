// Placeholder until the Loader lands on main.
import SampleSupport

final class FixedGallery: Gallery {
    init(run: SampleRun, cacheDirectory: String) {}
    func frame(_ visible: Range<Int>) -> Int { 0 }
    var statistics: GalleryStatistics { GalleryStatistics() }
}
