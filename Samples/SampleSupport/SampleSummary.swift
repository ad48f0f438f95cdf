// The summary a sample prints at the end: what the monitor and the frame clock saw, in one
// screen of at most 100 columns, so a before/after pair can be read side by side.
import Foundation
import Stallwatch
import StallwatchAnalysis
import StallwatchCore

/// What one run measured. A plain value; use it on any thread.
public struct SampleMeasurement: Sendable {
    /// From the workload's start to the loop's return.
    public var seconds: Double
    /// Every stall the monitor reported, in order.
    public var stalls: [Stall]
    /// Frame ticks delivered.
    public var framesDelivered: Int
    /// Frame ticks dropped because the loop was busy.
    public var framesDropped: Int
    /// Rows the frame ticks rendered.
    public var rowsRendered: Int

    /// A measurement of these values.
    public init(seconds: Double, stalls: [Stall], framesDelivered: Int, framesDropped: Int, rowsRendered: Int) {
        self.seconds = seconds
        self.stalls = stalls
        self.framesDelivered = framesDelivered
        self.framesDropped = framesDropped
        self.rowsRendered = rowsRendered
    }

    /// Delivered frames per second of run time.
    public var framesPerSecond: Double { seconds > 0 ? Double(framesDelivered) / seconds : 0 }

    /// The stalls' total duration in milliseconds (an unfinished stall counts as 0).
    public var stallMilliseconds: Double { stalls.reduce(0) { $0 + milliseconds($1.duration) } }

    /// Stalls per dominant category (the classifier's time-weighted breakdown; `other` when a
    /// stall has no samples), with their total duration in milliseconds, largest count first.
    public func dominantCategories(classifier: Classifier = Classifier()) -> [(
        category: StallCategory, count: Int, milliseconds: Double
    )] {
        var totals: [StallCategory: (count: Int, milliseconds: Double)] = [:]
        for stall in stalls {
            let category = classifier.breakdown(of: stall).dominant ?? .other
            totals[category, default: (0, 0)].count += 1
            totals[category, default: (0, 0)].milliseconds += milliseconds(stall.duration)
        }
        return StallCategory.allCases.compactMap { category in
            totals[category].map { (category, $0.count, $0.milliseconds) }
        }.sorted { $0.count > $1.count }
    }
}

private func milliseconds(_ duration: Duration?) -> Double {
    guard let duration else { return 0 }
    return Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
}

/// Renders a measurement as the summary's lines.
struct SummaryRenderer {
    var title: String
    /// The trace's path, then how to read it.
    var trace: [String]
    var measurement: SampleMeasurement
    var notes: [(label: String, text: String)]

    func render() -> String {
        let m = measurement
        var lines = ["\(title): \(format(m.seconds, 2)) s on the main loop"]
        // Label column of 14; text wrapped at word boundaries to stay within 100 columns.
        func row(_ label: String, _ text: String) {
            var prefix = "  " + label.padding(toLength: 11, withPad: " ", startingAt: 0) + " "
            var line = ""
            for word in text.split(separator: " ", omittingEmptySubsequences: false) {
                if !line.isEmpty && prefix.count + line.count + 1 + word.count > 100 {
                    lines.append(prefix + line)
                    prefix = String(repeating: " ", count: 14)
                    line = ""
                }
                line += (line.isEmpty ? "" : " ") + word
            }
            lines.append(prefix + line)
        }
        for (index, line) in trace.enumerated() { row(index == 0 ? "trace" : "", line) }
        let tiers = Tier.allCases.map { tier in "\(tier.rawValue) \(m.stalls.filter { $0.tier == tier }.count)" }
        row(
            "stalls", "\(m.stalls.count), \(format(m.stallMilliseconds, 1)) ms in all: \(tiers.joined(separator: ", "))"
        )
        let categories = m.dominantCategories().map {
            "\($0.category.rawValue) \($0.count) (\(format($0.milliseconds, 1)) ms)"
        }
        row("categories", categories.isEmpty ? "none" : categories.joined(separator: ", "))
        row(
            "frames",
            "\(m.framesDelivered) of \(m.framesDelivered + m.framesDropped) delivered, \(m.framesDropped) dropped, "
                + "\(format(m.framesPerSecond, 1)) fps; \(m.rowsRendered) rows rendered")
        for note in notes { row(note.label, note.text) }
        return lines.joined(separator: "\n")
    }
}

/// `value` with `digits` decimals.
func format(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }
