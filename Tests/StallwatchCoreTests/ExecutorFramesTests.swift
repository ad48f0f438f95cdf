// swift-nio's frames, as the symbolicator names them in a real NIOHTTP1 server's stack
// (Integration/NIO records one): its loop, pipeline and HTTP codec are infrastructure in every
// form (closures, protocol witnesses, extensions, its C parser), the handler it called is the
// app's even when its parameter types are NIO's, and NIO's event-loop wait is idle only while
// the thread is in epoll_wait (handlers run inside that function's callback).
import Testing

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
}
