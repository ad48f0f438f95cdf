// Placeholder until the remedies land: the fixed variant.
import SampleSupport

struct FixedBlockers: Blockers {
    let run: SampleRun
    func hashPhotos() {}
    func loadDocument() {}
    func searchPosts() {}
    func refreshSettings() {}
}
