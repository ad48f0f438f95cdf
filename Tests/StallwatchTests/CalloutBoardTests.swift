// The loop publishes each callout (kind, posting site, mode, phase) for a watchdog, and an
// idle loop shows no callout.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct CalloutBoardTests {
    @Test func aWatchedCalloutIsPublishedWithItsSite() async {
        let seen = await onLoopThread { loop -> [String] in
            let seen = Box<[String]>([])
            loop.board.enabled.store(true, ordering: .relaxed)
            let line = #line + 1
            loop.post(label: "work") {
                let snapshot = loop.board.snapshot()
                seen.value.append("busy:\(snapshot.isBusy)")
                seen.value.append("\(snapshot.kind) \(snapshot.phase) \(snapshot.mode)")
                seen.value.append(
                    "\(CalloutSite.unpack(snapshot.label) ?? "-") \(CalloutSite.unpack(snapshot.file) ?? "-"):\(snapshot.line == UInt32(line))"
                )
            }
            loop.runOnce(timeout: .zero)
            seen.value.append("after:\(loop.board.snapshot().isBusy)")
            return seen.value
        }
        #expect(
            seen == [
                "busy:true", "post beforeSources default",
                "work StallwatchTests/CalloutBoardTests.swift:true", "after:false",
            ])
    }

    /// A label of 64 KiB or more packed to nothing (no label, not expected, counted by the
    /// gate): it is cut at 65,535 bytes, back to a character boundary.
    @Test func aLabelOf64KiBOrMoreIsCutAtACharacterBoundary() {
        let full = String(
            decoding: UnsafeBufferPointer(
                start: longStaticLabel.utf8Start, count: longStaticLabel.utf8CodeUnitCount), as: UTF8.self)
        let cut = CalloutSite.unpack(CalloutSite.pack(longStaticLabel))
        // Bytes 65,533...65,535 are one character, cut whole.
        #expect(cut?.utf8.count == 65_533)
        #expect(cut.map { full.hasPrefix($0) } == true)
        #expect(cut?.contains("\u{FFFD}") == false)
        #expect(CalloutSite.unpack(CalloutSite.pack("short")) == "short")
    }

    @Test func aNestedRunSuspendsTheOuterCalloutAndResumesIt() async {
        let seen = await onLoopThread { loop -> [Bool] in
            let seen = Box<[Bool]>([])
            loop.board.enabled.store(true, ordering: .relaxed)
            loop.post {
                seen.value.append(loop.board.snapshot().isBusy)
                loop.addObserver(.beforeWaiting, repeats: false) { _, _ in }
                loop.schedule(after: .milliseconds(5)) { _ in }
                loop.runOnce(timeout: .milliseconds(50))
                // Inside the nested run's wait the board was idle; now the outer is back.
                seen.value.append(loop.board.snapshot().isBusy)
            }
            loop.runOnce(timeout: .zero)
            return seen.value
        }
        #expect(seen == [true, true])
    }
}
