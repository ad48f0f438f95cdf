import StallwatchCore

/// Lays out the complete (`X`) slices of one Chrome-trace track so that they nest exactly, as
/// the Trace Event Format requires of slices on one thread: sorted by start, each slice lies
/// wholly inside every slice still open at its start, or starts after it ends.
///
/// The exporter already draws a stall on its callout's clock, so real traces only need this
/// for what two clocks and rounding leave behind: a callout that starts a few nanoseconds
/// before the previous one ends (the cycle-to-nanosecond converter re-anchors between them),
/// or a stall whose callout record was lost. Such a slice keeps its end and starts where the
/// open slice ends, so it becomes that slice's sibling, never a clipped child.
///
/// Pure; use it on any thread.
enum ChromeTrack {
    /// One slice: `[start, end]` in nanoseconds; `layer` orders slices that share both
    /// (a callout, 0, encloses its stall, 1); `item` is the caller's index.
    struct Slice: Hashable {
        var start: UInt64
        var end: UInt64
        var layer: Int
        var item: Int

        /// Where the slice goes in the track's event order.
        var key: OrderKey { OrderKey(start: start, end: end, layer: layer) }
    }

    /// The order in which a track's events are written and read: by start, then longest
    /// first, then outer layer first, so a parent always precedes its children.
    struct OrderKey: Comparable {
        var start: UInt64
        var end: UInt64
        var layer: Int

        static func < (lhs: OrderKey, rhs: OrderKey) -> Bool {
            if lhs.start != rhs.start { return lhs.start < rhs.start }
            if lhs.end != rhs.end { return lhs.end > rhs.end }
            return lhs.layer < rhs.layer
        }
    }

    /// `slices` in track order, each moved as little as needed to nest exactly.
    static func nest(_ slices: consuming [Slice]) -> [Slice] {
        // Laid out in place: `track[..<laid]` is the result so far, `track[next...]` the slices
        // still to place, and what lies between is free (`laid <= next` throughout).
        var track = consume slices
        for index in track.indices { track[index].end = max(track[index].end, track[index].start) }
        track.sort { $0.key < $1.key }
        var layout = Layout()
        var laid = 0
        var next = 0
        while next < track.count {
            let slice = track[next]
            next += 1
            switch layout.place(slice, before: next < track.count ? track[next].key : nil) {
            case .laid(let placed):
                track[laid] = placed
                laid += 1
            case .requeued(let moved):
                track.insert(moved, at: track[next...].partitioningIndex { !($0.key < moved.key) })
            }
        }
        track.removeLast(track.count - laid)
        return track
    }

    /// Places slices one at a time, in track order, each moved as little as needed to nest
    /// exactly: what `nest(_:)` runs over an array, and the Chrome export over a full-mode
    /// trace's callouts as it reads them.
    struct Layout {
        /// The ends of the slices still open, outermost first.
        private var open: [UInt64] = []

        enum Placement {
            /// Laid out as given, or moved to start where an open slice ends.
            case laid(Slice)
            /// Moved behind the next slice: to be placed again in its turn (before slices of
            /// an equal key), the slices it was about to close still open.
            case requeued(Slice)
        }

        /// Places `slice` (its end not before its start), the next in track order; the slice
        /// after it has the key `next` (nil: none).
        mutating func place(_ slice: Slice, before next: OrderKey?) -> Placement {
            var slice = slice
            var depth = open.count
            while depth > 0 {
                let end = open[depth - 1]
                if end <= slice.start {
                    depth -= 1
                } else if slice.end > end {
                    // Starts inside the open slice but ends after it: begin where it ends.
                    slice.start = end
                    depth -= 1
                    if let next, next < slice.key { return .requeued(slice) }
                } else {
                    break
                }
            }
            open.removeLast(open.count - depth)
            open.append(slice.end)
            return .laid(slice)
        }
    }
}
