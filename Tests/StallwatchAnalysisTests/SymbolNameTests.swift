// Symbols are matched and reported without glibc decorations or Swift wrappers.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct SymbolNameTests {
    @Test(arguments: [
        ("___pthread_mutex_lock", "pthread_mutex_lock"),
        ("pthread_cond_wait@@GLIBC_2.3.2", "pthread_cond_wait"),
        ("__GI___libc_write", "write"),
        ("__libc_pwrite64", "pwrite64"),
        ("__open64_nocancel", "open64"),
        ("__lll_lock_wait", "lll_lock_wait"),
        ("_start", "start"),
        ("__", "__"),
    ])
    func cNames(raw: String, normalized: String) {
        let view = FrameView(Frame(address: 1, symbol: raw))
        #expect(view.text(view.cName) == normalized)
    }

    @Test(arguments: [
        ("Foundation.NSLock.lock() -> ()", "Foundation.NSLock.lock()"),
        ("closure #1 () -> () in MyApp.Feed.reload() -> ()", "MyApp.Feed.reload()"),
        ("generic specialization <Swift.Int> of MyApp.foo<A>(A) -> ()", "MyApp.foo<A>(A)"),
        (
            "partial apply for closure #2 (Swift.Int) -> Swift.Bool in MyApp.Ranker.rank() -> ()",
            "MyApp.Ranker.rank()"
        ),
        ("static MyApp.Store.shared.getter : MyApp.Store", "MyApp.Store.shared.getter : MyApp.Store"),
        ("MyApp.Grid.map<A>((Swift.Int) -> A) -> [A]", "MyApp.Grid.map<A>((Swift.Int) -> A)"),
    ])
    func swiftNames(raw: String, core: String) {
        let view = FrameView(Frame(address: 1, symbol: raw))
        #expect(view.text(view.swiftName) == core)
    }

    @Test func frameViewSplitsTheModule() {
        let view = FrameView(
            Frame(
                address: 1, symbol: "MyApp.ImageDecoder.decode(Foundation.Data) -> MyApp.Image",
                module: "/srv/app/MyApp"))
        #expect(view.text(view.swiftName) == "MyApp.ImageDecoder.decode(Foundation.Data)")
        #expect(view.text(view.unqualified) == "ImageDecoder.decode(Foundation.Data)")
        #expect(view.moduleName == "MyApp")
        #expect(view.cName == nil)
    }
}
