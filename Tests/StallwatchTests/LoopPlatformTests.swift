// The loop's platform boundary translates epoll's bits to `SourceEvents` and back one way
// each, and a callout's identity word unpacks to exactly what was packed.
import CStallwatchShims  // <sys/epoll.h>
import StallwatchCore
import Testing

@testable import Stallwatch

@Suite struct LoopPlatformTests {
    typealias Events = MainLoop.SourceEvents

    @Test func epollEventsTranslateBitByBit() {
        #expect(Events(epollEvents: 0) == [])
        #expect(Events(epollEvents: EPOLLIN.rawValue) == .readable)
        #expect(Events(epollEvents: EPOLLOUT.rawValue) == .writable)
        #expect(Events(epollEvents: EPOLLHUP.rawValue) == .hangup)
        #expect(Events(epollEvents: EPOLLRDHUP.rawValue) == .hangup)
        #expect(Events(epollEvents: EPOLLERR.rawValue) == .error)
        #expect(
            Events(epollEvents: EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue)
                == [.readable, .writable, .hangup, .error])
        // Bits the loop never asks for mean nothing to a source.
        #expect(Events(epollEvents: EPOLLPRI.rawValue) == [])
    }

    @Test func interestTranslatesToTheBitsEpollIsAskedFor() {
        #expect(Events.readable.epollInterest == EPOLLIN.rawValue)
        #expect(Events([.readable, .hangup]).epollInterest == EPOLLIN.rawValue | EPOLLRDHUP.rawValue)
        #expect(Events.writable.epollInterest == EPOLLOUT.rawValue)
        // Hang-ups and errors are reported whatever is asked; an error is not something to ask for.
        #expect(Events.error.epollInterest == 0)
    }

    @Test func aCalloutDescriptorUnpacksWhatWasPacked() {
        let mode = MainLoop.Mode("descriptor-test")
        for kind in [CalloutKind.post, .timer, .source, .observer, .mainQueue] {
            for phase in [LoopActivity.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit] {
                for line in [UInt32(0), 1, 4_242, .max] {
                    let descriptor = CalloutDescriptor(kind: kind, phase: phase, mode: mode, line: line)
                    #expect(descriptor.kind == kind && descriptor.phase == phase)
                    #expect(descriptor.mode == mode && descriptor.line == line)
                    #expect(!descriptor.isIteration)
                    #expect(CalloutDescriptor(rawValue: descriptor.rawValue) == descriptor)
                }
            }
        }
        // The layout is part of what the board and the ring share: pin it.
        let word = CalloutDescriptor(kind: .timer, phase: .beforeTimers, mode: .tracking, line: 42).rawValue
        #expect(word == 2 | 2 << 8 | 1 << 16 | 42 << 32)
        #expect(CalloutDescriptor.iteration.isIteration)
    }
}
