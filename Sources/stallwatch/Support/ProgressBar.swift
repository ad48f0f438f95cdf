import Dispatch
import StallwatchCore

/// A progress bar on standard error for long reads: it stays hidden for the first second,
/// then redraws ten times a second until `finish()`, which erases it.
///
/// Thread-safe: `advance(by:)` may be called from any thread (the parallel readers).
final class ProgressBar: Sendable {
    private struct State {
        var done = 0
        var drawn = false
        var finished = false
    }

    private let sink: any TextSink
    private let total: Int
    private let label: String
    private let state = Locked(State())

    /// Starts a hidden bar for `total` bytes, drawn on `sink` after `delay` seconds.
    init(sink: any TextSink, total: Int, label: String = "reading", delay: Double = 1) {
        self.sink = sink
        self.total = max(1, total)
        self.label = label
        schedule(after: delay)
    }

    private func schedule(after seconds: Double) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [weak self] in
            guard let self, self.draw() else { return }
            self.schedule(after: 0.1)
        }
    }

    /// Counts `bytes` more as done.
    func advance(by bytes: Int) {
        state.withLock { $0.done += bytes }
    }

    /// Stops the bar and erases it if it was drawn.
    func finish() {
        let erase = state.withLock { state -> Bool in
            state.finished = true
            return state.drawn
        }
        if erase { sink.write("\r\u{1B}[2K") }
    }

    /// Draws the bar; `false` once finished.
    private func draw() -> Bool {
        let line: String? = state.withLock { state in
            guard !state.finished else { return nil }
            state.drawn = true
            let fraction = min(1, Double(state.done) / Double(total))
            let filled = Int(fraction * 30)
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
            return "\r\(label) [\(bar)] \(Int(fraction * 100))%"
        }
        guard let line else { return false }
        sink.write(line)
        return true
    }
}
