// Frames read the same everywhere: short Swift names (full ones in --verbose and JSON), a
// frame without a symbol as module+offset (stable across runs), one path style, no
// compiler-generated pseudo-file.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct ReadableFramesTests {
    @Test(arguments: Fixture.App.names.indices)
    func demangledNamesAreSimplified(index: Int) {
        let (full, short) = Fixture.App.names[index]
        #expect(SwiftNames.simplify(full) == short)
    }

    @Test func aFrameWithoutASymbolIsModulePlusOffset() {
        let sqlite = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"
        let first = FrameNamer(modules: [.init(index: 1, loadAddress: 0x7f00_1000_0000, path: sqlite)])
        #expect(first.name(Frame(address: 0x7f00_1004_f1a3, module: sqlite)) == "libsqlite3.so.0+0x4f1a3")
        // Another run loads the library elsewhere: the same code has the same name.
        let second = FrameNamer(modules: [.init(index: 1, loadAddress: 0x7fa2_3000_0000, path: sqlite)])
        #expect(second.name(Frame(address: 0x7fa2_3004_f1a3, module: sqlite)) == "libsqlite3.so.0+0x4f1a3")
        // Without a module there is only the address.
        #expect(first.name(Frame(address: 0x1234)) == "0x1234")
        #expect(first.fullName(Frame(address: 0x7f00_1004_f1a3, module: sqlite)) == "libsqlite3.so.0+0x4f1a3")
    }

    @Test func sourcePathsAreRelativeToTheBuildRootElseAbsolute() {
        let namer = FrameNamer(modules: [.init(index: 1, loadAddress: 0, path: Fixture.App.executable)])
        #expect(namer.buildRoot == "/work/feedapp/")
        #expect(namer.path("/work/feedapp/Sources/FeedApp/Feed.swift") == "Sources/FeedApp/Feed.swift")
        #expect(namer.path("//work/feedapp/Sources/FeedApp/Feed.swift") == "Sources/FeedApp/Feed.swift")
        #expect(namer.path("/usr/include/sqlite3.h") == "/usr/include/sqlite3.h")
        #expect(namer.path("//<compiler-generated>") == nil)
        #expect(namer.source(Frame(address: 1, symbol: "f", file: "/work/feedapp/A.swift", line: 3)) == "A.swift:3")
    }

    @Test func reportAndExportsUseTheSameNames() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("app.swtrace", Fixture.app())
        let text = CLIRun(["report", path, "--wide"]).output
        #expect(text.contains("database: FeedDatabase.loadFeed(rows:) ← main()"))
        #expect(text.contains("     libsqlite3.so.0+0x4f1a3\n"))
        #expect(text.contains("fnv1a(_:seed:) (Sources/FeedApp/Hash.swift:34)"))
        #expect(!text.contains("compiler-generated"))
        #expect(!text.contains("Swift.UInt64"))
        let verbose = CLIRun(["report", path, "--wide", "--verbose"]).output
        #expect(verbose.contains(Fixture.App.names[0].full))
        // JSON has both.
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", path, "--json"]).output.utf8))
                as? [String: Any])
        let signatures = try #require(json["signatures"] as? [[String: Any]])
        let stack = try #require(signatures.first?["stack"] as? [[String: Any]])
        #expect(stack.first?["name"] as? String == "fnv1a(_:seed:)")
        #expect(stack.first?["symbol"] as? String == Fixture.App.names[0].full)
        #expect(stack.first?["source"] as? String == "Sources/FeedApp/Hash.swift:34")
        // The forwarder is named by the closure it stands for; it has no source line.
        #expect(
            stack.contains {
                $0["source"] is NSNull && $0["name"] as? String == "closure #1 in PhotoLibrary.hash(_:chunk:seed:)"
            })
        #expect(!text.contains("partial apply"))
        // Folded stacks and speedscope name frames the same way.
        let folded = CLIRun(["export", path, "--format", "folded", "-o", "-"]).output
        #expect(folded.contains("database;main();FeedDatabase.loadFeed(rows:);sqlite3_step;libsqlite3.so.0+0x4f1a3 "))
        let speedscope = CLIRun(["export", path, "--format", "speedscope", "-o", "-"]).output
        #expect(speedscope.contains("\"name\": \"libsqlite3.so.0+0x4f1a3\""))
        #expect(speedscope.contains("\"file\": \"Sources/FeedApp/Hash.swift\""))
        #expect(!speedscope.contains("compiler-generated"))
    }

    /// Names a release build gives (a release recording of the demo, and `swiftc -O`),
    /// demangled: each stands for the function it wraps.
    static let optimized: [(full: String, short: String)] = [
        (
            "partial apply forwarder for closure #1 (Stallwatch.MainLoop.Timer) -> () in closure #2 "
                + "(SampleSupport.SampleRun) -> () in Demo",
            "closure #1 in closure #2 in Demo"
        ),
        (
            "function signature specialization <Arg[0] = [Closure Propagated : $s1myyXEfU_, Argument Types : []> "
                + "of static m.Run.run(() -> ()) -> ()",
            "Run.run(_:)"
        ),
        (
            "function signature specialization <Arg[0] = Dead> of function signature specialization <Arg[0] = "
                + "[Closure Propagated : $s1myyXEfU_, Argument Types : []> of static m.Run.run(() -> ()) -> ()",
            "Run.run(_:)"
        ),
        (
            "function signature specialization <Arg[0] = [Closure Propagated : $s1myyXEfU_yyXEfU0_, Argument Types "
                + ": []> of generic specialization <Swift.String> of m.Loop.run<A>(mode: A, _: () -> ()) -> ()",
            "Loop.run(mode:_:)"
        ),
        ("merged SampleSupport.LockedSettings.value(_: Swift.String) -> Swift.Int", "LockedSettings.value(_:)"),
        // An async function's continuations, as a release build names them.
        (
            "(1) suspend resume partial function for ThumbnailTasks.thumbnail(Swift.Int) async -> Swift.Int",
            "thumbnail(_:)"
        ),
        ("(2) await resume partial function for App.Feed.reload() async throws -> ()", "Feed.reload()"),
        // A wrapper inside a closure's context stands for its function too.
        (
            "closure #1 () -> () in generic specialization <Swift.Int> of App.Feed.load<A>(_: A) -> ()",
            "closure #1 in Feed.load(_:)"
        ),
    ]

    @Test(arguments: optimized.indices)
    func optimizedNamesAreTheFunctionTheyStandFor(index: Int) {
        let (full, short) = Self.optimized[index]
        #expect(SwiftNames.simplify(full) == short)
        #expect(!isCompilerGenerated(Frame(address: 1, symbol: full, module: "/app/App")))
    }

    @Test func stallwatchsOwnFramesAreInfrastructureInAnyForm() {
        for symbol in [
            // From a release recording of the demo.
            "function signature specialization <Arg[3] = [Closure Propagated : $s10Stallwatch8MainLoopC10fireTimers_"
                + "3nowSbAA9ModeStateC_s6UInt64VtFyyXEfU_, Argument Types : [@escaping @callee_guaranteed (@guaranteed "
                + "Stallwatch.MainLoop.Timer) -> ()Stallwatch.MainLoop.Timer]> of Stallwatch.MainLoop.watchedCallout(_: "
                + "Stallwatch.CalloutSite, phase: StallwatchCore.LoopActivity, mode: Stallwatch.MainLoop.Mode, _: () -> ()) "
                + "-> ()",
            "generic specialization <Swift.Int> of Stallwatch.MainLoop.callout<A>(_: A) -> ()",
            "partial apply forwarder for closure #1 () -> () in Stallwatch.MainLoop.fireTimers(_: "
                + "Stallwatch.ModeState, now: Swift.UInt64) -> Swift.Bool",
        ] {
            #expect(Frame(address: 1, symbol: symbol, module: "/app/App").isSystem, "\(symbol)")
        }
        #expect(
            !Frame(address: 1, symbol: "generic specialization <Swift.Int> of App.f<A>(A) -> ()", module: "/app/App")
                .isSystem)
    }

    @Test func thunksAreGlueWhateverWrapsThem() {
        for symbol in [
            "partial apply forwarder for reabstraction thunk helper from @escaping @callee_guaranteed () -> () to "
                + "@escaping @callee_guaranteed () -> (@out ())",
            "reabstraction thunk helper from @callee_guaranteed () -> () to @escaping @callee_guaranteed () -> ()",
            "thunk for @escaping @callee_guaranteed () -> ()", "outlined copy of App.Row",
            // Seen at the top of a compute sample of a real swift-nio server's handler.
            "__swift_instantiateConcreteTypeFromMangledName",
        ] {
            #expect(isCompilerGenerated(Frame(address: 1, symbol: symbol, module: "/app/App")), "\(symbol)")
        }
    }
}
