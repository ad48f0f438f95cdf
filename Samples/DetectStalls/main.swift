// The "Detecting stalls" example of README.md and docs/app-guide.md: a monitor on the main loop reports a stall in
// compute, one in a sleep and one in an annotated section. swift run DetectStalls
import Foundation
import Stallwatch
import StallwatchAnalysis
import StallwatchCore

let loop = MainLoop.main
let monitor = StallMonitor(loop: loop)  // 1/60 s budget, 5 ms samples
let classifier = Classifier()
monitor.onStallEnded = { stall in
    let breakdown = classifier.breakdown(of: stall)
    let top = stall.samples.first?.frames.first { !$0.isSystem }?.symbol ?? "?"
    print(
        "\(stall.tier) \(stall.duration!) at \(stall.callout.file):\(stall.callout.line)",
        "→ \(breakdown.dominant?.rawValue ?? "?") (\(breakdown.topReasons.first?.reason ?? "?")), top app frame: \(top)"
    )
}
try monitor.start()

@inline(never) func checksum(_ megabytes: Int) -> UInt64 {
    var hash: UInt64 = 1_469_598_103_934_665_603
    for byte in 0..<(megabytes << 20) { hash = (hash ^ UInt64(byte & 0xff)) &* 1_099_511_628_211 }
    return hash
}

loop.post { print("checksum", checksum(64)) }  // compute on the main thread
loop.post { usleep(120_000) }  // a sleep: "other"
loop.post {
    annotate("load settings", category: .io) { _ = usleep(40_000) }  // the annotation names it
}
loop.schedule(after: .seconds(1)) { _ in loop.stop() }
loop.run()
monitor.stop()
