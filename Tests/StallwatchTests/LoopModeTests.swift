// Running in a mode services only that mode's timers, sources and observers; common items
// belong to every common mode, including ones added later.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct LoopModeTests {
    @Test func aRunServicesOnlyItsModesItems() async {
        let log = await onLoopThread { loop -> [String] in
            let log = Box<[String]>([])
            let modal = MainLoop.Mode("modal")
            loop.schedule(after: .zero, modes: [.default]) { _ in log.value.append("default") }
            loop.schedule(after: .zero, modes: [modal]) { _ in log.value.append("modal") }
            loop.schedule(after: .zero, modes: [.common]) { _ in log.value.append("common") }
            loop.addObserver(.entry, modes: [modal]) { _, _ in log.value.append("modal-entry") }
            loop.post { log.value.append("post") }
            loop.runOnce(mode: modal, timeout: .zero)
            log.value.append("|")
            loop.runOnce(mode: .tracking, timeout: .zero)
            log.value.append("|")
            loop.runOnce(mode: .default, timeout: .zero)
            return log.value
        }
        // Posts run in common modes only, so the modal run leaves the post queued.
        #expect(log == ["modal-entry", "modal", "|", "common", "post", "|", "default"])
    }

    @Test func commonItemsJoinModesAddedToTheCommonSetLater() async {
        let log = await onLoopThread { loop -> [String] in
            var log: [String] = []
            let custom = MainLoop.Mode("custom-common")
            loop.schedule(after: .zero, repeating: .milliseconds(1), modes: [.common]) { timer in
                log.append("tick")
                timer.cancel()
            }
            log.append("\(loop.runOnce(mode: custom, timeout: .zero))")
            loop.addCommonMode(custom)
            log.append("\(loop.runOnce(mode: custom, timeout: .seconds(1)))")
            return log
        }
        #expect(log == ["finished", "tick", "handledWork"])
    }
}
