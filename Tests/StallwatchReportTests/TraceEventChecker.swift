// A strict reader of Chrome trace JSON for the tests: the Trace Event Format's nesting rule
// applied per pid/tid as Perfetto's importer applies it.
import Foundation

/// Checks a Chrome trace JSON object the way a strict viewer reads it. Timestamps are turned
/// into integer nanoseconds as Perfetto's JSON importer does (`llround(µs × 1000)`), then per
/// `pid`/`tid`: complete (`X`) slices sorted by start (longest first on ties, then file order)
/// must each lie wholly inside every slice still open at their start or start after it ends
/// (Perfetto drops a slice that breaks this, `slice_drop_overlapping_complete_event`);
/// thread-scoped instants (`i`, `I`) are zero-length slices under the same rule; `B`/`E`
/// pairs must balance and close in order. `problems` lists every breach, empty when the file
/// is valid.
struct TraceEventChecker {
    /// One slice or instant as the checker saw it.
    struct Slice {
        var name: String
        var category: String
        var start: Int64
        var end: Int64
        var order: Int
        var args: [String: Any]
        /// The slices it lies in, outermost first.
        var enclosing: [Slice] = []
    }

    private(set) var problems: [String] = []
    /// The slices and instants of each track (`"pid/tid"`), in track order.
    private(set) var tracks: [String: [Slice]] = [:]

    init(json: Any) {
        guard let object = json as? [String: Any], let events = object["traceEvents"] as? [[String: Any]] else {
            problems.append("no traceEvents array")
            return
        }
        var open: [String: [(name: String, start: Int64)]] = [:]
        for (order, event) in events.enumerated() {
            guard let phase = event["ph"] as? String else {
                problems.append("event \(order) has no ph")
                continue
            }
            if phase == "M" { continue }
            guard let pid = event["pid"] as? NSNumber, let tid = event["tid"] as? NSNumber,
                let ts = Self.nanoseconds(event["ts"]), let name = event["name"] as? String
            else {
                problems.append("event \(order) lacks pid, tid, ts or name: \(event)")
                continue
            }
            let track = "\(pid)/\(tid)"
            let category = event["cat"] as? String ?? ""
            let args = event["args"] as? [String: Any] ?? [:]
            switch phase {
            case "X":
                guard let dur = Self.nanoseconds(event["dur"]), dur >= 0 else {
                    problems.append("X event \(order) (\(name)) has no valid dur")
                    continue
                }
                tracks[track, default: []].append(
                    Slice(name: name, category: category, start: ts, end: ts + dur, order: order, args: args))
            case "i", "I":
                if (event["s"] as? String ?? "t") == "t" {
                    tracks[track, default: []].append(
                        Slice(name: name, category: category, start: ts, end: ts, order: order, args: args))
                }
            case "B":
                open[track, default: []].append((name, ts))
            case "E":
                guard let begun = open[track]?.popLast() else {
                    problems.append("E event \(order) on \(track) closes nothing")
                    continue
                }
                if ts < begun.start { problems.append("E event \(order) ends \(begun.name) before it began") }
            default:
                continue
            }
        }
        for (track, stack) in open where !stack.isEmpty {
            problems.append("\(track): \(stack.count) B events never closed")
        }
        for (track, slices) in tracks {
            let ordered = slices.sorted { ($0.start, -$0.end, $0.order) < ($1.start, -$1.end, $1.order) }
            var stack: [Slice] = []
            var laidOut: [Slice] = []
            for var slice in ordered {
                while let top = stack.last, top.end <= slice.start { stack.removeLast() }
                if let top = stack.last, slice.end > top.end {
                    problems.append(
                        "\(track): \(slice.category) '\(slice.name)' [\(slice.start), \(slice.end)] overlaps "
                            + "\(top.category) '\(top.name)' [\(top.start), \(top.end)] without nesting in it")
                }
                slice.enclosing = stack
                stack.append(slice)
                laidOut.append(slice)
            }
            tracks[track] = laidOut
        }
    }

    /// A JSON timestamp in microseconds as integer nanoseconds, as Perfetto reads it.
    static func nanoseconds(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber else { return nil }
        return Int64((number.doubleValue * 1000).rounded())
    }
}
