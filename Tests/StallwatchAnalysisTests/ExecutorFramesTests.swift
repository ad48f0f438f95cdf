// swift-nio's frames, as the symbolicator names them in a real NIOHTTP1 server's stack
// (Integration/NIO records one): its loop, pipeline and HTTP codec are infrastructure in every
// form (closures, protocol witnesses, extensions, its C parser), the handler it called is the
// app's even when its parameter types are NIO's, and NIO's event-loop wait is idle only while
// the thread is in epoll_wait (handlers run inside that function's callback). A Swift
// Concurrency pool thread (a libdispatch worker) is idle only in the worker's own semaphore
// wait, as a starved pool's sampling shows it; a job blocked on a semaphore is not.
import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct ExecutorFramesTests {
    static let nio = [
        "NIOCore.ChannelHandlerContext.invokeChannelRead(NIOCore.NIOAny) -> ()",
        "protocol witness for NIOCore._ChannelInboundHandler.channelRead(context: NIOCore.ChannelHandlerContext, data: NIOCore.NIOAny) -> () in conformance NIOHTTP1.HTTPServerPipelineHandler : NIOCore._ChannelInboundHandler in NIOHTTP1",
        "closure #10 (Swift.UnsafeMutablePointer<__C.llhttp__internal_s>?) -> Swift.Int32 in NIOHTTP1.BetterHTTPParser.init(kind: NIOHTTP1.HTTPDecoderKind, configuration: NIOHTTP1.HTTPDecoderConfiguration) -> NIOHTTP1.BetterHTTPParser",
        "(extension in NIOCore):NIOCore.ByteToMessageDecoder.decode(context: NIOCore.ChannelHandlerContext, buffer: inout NIOCore.ByteBuffer) throws -> NIOCore.DecodingState",
        // A C callback (`@objc` in the demangler's words) of a private type, as a release-built
        // server's stack names it.
        "@objc closure #10 (Swift.Optional<Swift.UnsafeMutablePointer<__C.c_nio_llhttp__internal_s>>) -> Swift.Int32 in NIOHTTP1.(BetterHTTPParser in _F43193CAFF0FA6BBC607ACDC4F85EA9D).init(kind: NIOHTTP1.HTTPDecoderKind, configuration: NIOHTTP1.NIOHTTPDecoderLimitConfiguration) -> NIOHTTP1.(BetterHTTPParser in _F43193CAFF0FA6BBC607ACDC4F85EA9D)",
        "c_nio_llhttp__internal_execute",
        "static NIOPosix.MultiThreadedEventLoopGroup.runTheLoop(_: NIOPosix.NIOThread) -> ()",
        "NIOPosix.SelectableEventLoop._blockingWaitForWork(nextReadyDeadline: NIOCore.NIODeadline?, _: (NIOPosix.SelectorEvent<NIOPosix.NIORegistration>) throws -> ()) throws -> ()",
    ]
    static let handler =
        "StallwatchNIOTests.BlockingHandler.channelRead(context: NIOCore.ChannelHandlerContext, data: NIOCore.NIOAny) -> ()"

    @Test func swiftNIOsFramesAreInfrastructureTheHandlerIsNot() {
        for symbol in Self.nio {
            #expect(frame(symbol, in: Lib.app).isSystem, "\(symbol)")
        }
        #expect(!frame(Self.handler, in: Lib.app).isSystem)
        #expect(!frame("closure #1 () -> () in FeedApp.Feed.reload() -> ()", in: Lib.app).isSystem)
        // Stallwatch's own, as before.
        #expect(frame("closure #1 () -> () in Stallwatch.MainLoop.post() -> ()", in: Lib.app).isSystem)
        // The pool monitor's enqueue hook, in every enqueuing thread's stack (a C function).
        #expect(frame("sw_pool_hook", in: Lib.app).isSystem)
    }

    @Test func theToolchainsGenericsCompiledIntoTheAppAreNotTheApps() {
        // As a release-built sourcekit-lsp's stack names them (a task created in a closure).
        let toolchain = [
            "(extension in Swift):Swift.Task< where B == Swift.Error>.init(name: Swift.Optional<Swift.String>, priority: Swift.Optional<Swift.TaskPriority>, operation: sending @isolated(any) @Sendable () async throws -> A) -> Swift.Task<A, Swift.Error>",
            "generic specialization <Swift.Int> of Swift.Array.sort() -> ()",
            "closure #1 (Swift.Int, Swift.Int) -> Swift.Bool in Swift.MutableCollection.sort() -> ()",
            "static Swift.Int.random(in: Swift.Range<Swift.Int>) -> Swift.Int",
        ]
        for symbol in toolchain {
            #expect(frame(symbol, in: Lib.app).isSystem, "\(symbol)")
        }
        // The app's own: an extension of a standard type, a closure it passes to one, its
        // conformance to a standard protocol (its code may be inlined into the witness).
        let app = [
            "(extension in FeedApp):Swift.Array<A>.chunks(of: Swift.Int) -> [[A]]",
            "closure #1 (Swift.Int) -> Swift.Bool in FeedApp.Feed.visible() -> [Swift.Int]",
            "protocol witness for Swift.Sequence.makeIterator() -> A.Iterator in conformance FeedApp.Posts : Swift.Sequence in FeedApp",
            "fnv1a(_: Swift.Array<Swift.UInt8>, seed: Swift.UInt64) -> Swift.UInt64",
        ]
        for symbol in app {
            #expect(!frame(symbol, in: Lib.app).isSystem, "\(symbol)")
        }
    }

    @Test func nioIsIdleOnlyWhileInItsEpollWait() {
        let wait = frame(Self.nio.last!, in: Lib.app)
        let handler = frame(Self.handler, in: Lib.app)
        let classifier = Classifier()
        let parked = Sample(
            time: 1, frames: stack(frame("epoll_wait", in: Lib.libc), wait), state: .sleeping,
            syscall: SyscallTable.number(for: "epoll_wait"), wchan: "do_epoll_wait")
        #expect(classifier.classify(parked).reason == "idle")
        let computing = Sample(
            time: 1, frames: stack(frame("StallwatchNIOTests.checksum() -> Swift.UInt64", in: Lib.app), handler, wait),
            state: .running)
        let verdict = classifier.classify(computing)
        #expect(verdict.category == .compute && verdict.reason != "idle", "\(verdict)")
    }

    @Test func aPoolThreadIsIdleOnlyInItsWorkersOwnWait() {
        let classifier = Classifier()
        let futex = SyscallTable.number(for: "futex")
        let semaphoreWait = [
            frame("__futex_abstimed_wait_common", in: Lib.libc),
            frame("__new_sem_wait_slow64.constprop.0", in: Lib.libc),
            frame("_dispatch_sema4_timedwait", in: Lib.dispatch),
            frame("_dispatch_semaphore_wait_slow", in: Lib.dispatch),
        ]
        let worker = [
            frame("_dispatch_worker_thread", in: Lib.dispatch), frame("start_thread", in: Lib.libc),
        ]
        let parked = Sample(
            time: 1, frames: semaphoreWait + worker, state: .sleeping, syscall: futex, wchan: "futex_do_wait")
        let idle = classifier.classify(parked)
        #expect(idle.category == .other && idle.reason == "idle", "\(idle)")
        // A job that waits on a DispatchSemaphore of its own: the worker is deeper in the stack.
        let job = [
            frame("Dispatch.DispatchSemaphore.wait() -> ()", in: Lib.dispatch),
            frame("closure #1 () -> () in FeedApp.Importer.run() -> ()", in: Lib.app),
            frame("_dispatch_call_block_and_release", in: Lib.dispatch),
            frame("_dispatch_client_callout", in: Lib.dispatch),
            frame("_dispatch_root_queue_drain", in: Lib.dispatch),
        ]
        let blocked = Sample(
            time: 1, frames: semaphoreWait + job + worker, state: .sleeping, syscall: futex, wchan: "futex_do_wait")
        let verdict = classifier.classify(blocked)
        #expect(verdict.category == .lockWait, "\(verdict)")
    }
}
