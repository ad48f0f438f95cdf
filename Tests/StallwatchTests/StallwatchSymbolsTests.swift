// The names the classifier and `Frame.isSystem` look for (`StallwatchSymbols`) are the names
// real stacks of the loop show, as the symbolicator reports them.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

private typealias BacktraceFunction =
    @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, Int32) -> Int32

/// The calling thread's stack, symbolicated (backtrace(3): every entry is a return address).
private func currentStack() -> [Frame] {
    let backtrace = DynamicLoader.function("backtrace", as: BacktraceFunction.self)!
    var buffer = [UnsafeMutableRawPointer?](repeating: nil, count: 64)
    let count = backtrace(&buffer, 64)
    let addresses = buffer.prefix(Int(count)).map { UInt64(UInt(bitPattern: $0)) }
    return Symbolicator.shared.symbolicate(addresses, firstIsReturnAddress: true)
}

@Suite(.serialized) struct StallwatchSymbolsTests {
    /// Captures the stack of a loop thread blocked in its idle wait, the way the monitor does:
    /// /proc says it is in an epoll wait, then the sampler's signal interrupts it.
    @Test func anIdleLoopShowsTheIdleWaitFrame() async throws {
        try Sampler.install(signal: Sampler.defaultSignal)
        let frames = await onLoopThread { loop -> [Frame] in
            Sampler.prepareCurrentThread()
            let captured = Locked<[Frame]>([])
            let tid = loop.threadID
            Thread {
                let reader = ThreadStateReader(tid: tid)
                let epollWaits = Set(
                    ["epoll_wait", "epoll_pwait", "epoll_pwait2"].compactMap(SyscallTable.number(for:)))
                let giveUp = MainLoop.monotonicNanos() + 10_000_000_000
                while MainLoop.monotonicNanos() < giveUp {
                    if let call = reader.read().syscall, epollWaits.contains(call) {
                        let capture = Sampler.capture(tid: tid, timeoutNanos: 1_000_000_000)
                        let frames = Symbolicator.shared.symbolicate(capture.addresses)
                        if frames.contains(where: { $0.symbol == StallwatchSymbols.idleWaitFrame }) {
                            captured.withLock { $0 = frames }
                            break
                        }
                        captured.withLock { $0 = frames }
                    }
                    usleep(1_000)
                }
                loop.stop()
            }.start()
            loop.run()
            return captured.withLock { $0 }
        }
        let symbols = frames.compactMap(\.symbol)
        #expect(symbols.contains(StallwatchSymbols.idleWaitFrame), "\(symbols)")
        #expect(StallwatchSymbols.idleWaitFrame.contains(StallwatchSymbols.idleWait))
        // The built-in rule names that stack idle.
        let sample = Sample(
            time: 0, frames: frames, state: .sleeping, syscall: SyscallTable.number(for: "epoll_pwait2"),
            wchan: "do_epoll_wait")
        #expect(Classifier().classify(sample).reason == "idle")
    }

    /// A source handler runs inside a closure of the loop (`callout`'s body): that frame and the
    /// loop's own frames are infrastructure, the handler is the app's.
    @Test func theLoopsOwnFramesAroundACalloutAreInfrastructure() async throws {
        let frames = await onLoopThread { loop -> [Frame] in
            let pipe = TestPipe()
            let stack = Box<[Frame]>([])
            pipe.write("x")
            try! loop.addSource(fd: pipe.readFD, .readable) { source, _ in
                stack.value = currentStack()
                source.cancel()
            }
            loop.runOnce(timeout: .seconds(1))
            return stack.value
        }
        let symbols = frames.map { $0.symbol ?? "?" }
        let closure = StallwatchSymbols.calloutClosurePrefix + StallwatchSymbols.runtimeModule + "."
        let wrapper = try #require(frames.first { $0.symbol?.hasPrefix(closure) == true }, "\(symbols)")
        // `deliver` is private: "closure #1 () -> () in Stallwatch.MainLoop.(deliver in _<hash>)(…)".
        #expect(wrapper.symbol?.contains("MainLoop.(deliver in ") == true, "\(symbols)")
        #expect(wrapper.isSystem)
        let loopFrames = frames.filter { $0.symbol?.hasPrefix(StallwatchSymbols.runtimeModule + ".MainLoop.") == true }
        #expect(!loopFrames.isEmpty, "\(symbols)")
        #expect(loopFrames.allSatisfy { $0.isSystem }, "\(symbols)")
        // The handler itself is a closure of this test: the app's code.
        let handler = try #require(frames.first { $0.symbol?.contains("theLoopsOwnFramesAroundACallout") == true })
        #expect(!handler.isSystem)
    }
}
