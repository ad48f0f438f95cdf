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
        // Laid out in place (a full-mode trace's track has a slice per callout): `track[..<laid]`
        // is the result so far, `track[next...]` the slices still to place, and what lies
        // between is free (`laid <= next` throughout).
        var track = consume slices
        for index in track.indices { track[index].end = max(track[index].end, track[index].start) }
        track.sort { $0.key < $1.key }
        var laid = 0
        var open: [Int] = []  // indices into `track[..<laid]` of the slices still open, outermost first
        var next = 0
        while next < track.count {
            var slice = track[next]
            next += 1
            var stack = open
            var requeued = false
            while let top = stack.last {
                if track[top].end <= slice.start {
                    stack.removeLast()
                } else if slice.end > track[top].end {
                    // Starts inside the open slice but ends after it: begin where it ends. If
                    // that puts it behind slices not laid out yet, it waits for its turn (and
                    // the slices it was about to close stay open for those).
                    slice.start = track[top].end
                    stack.removeLast()
                    if next < track.count, track[next].key < slice.key {
                        let place = track[next...].partitioningIndex { !($0.key < slice.key) }
                        track.insert(slice, at: place)
                        requeued = true
                        break
                    }
                } else {
                    break
                }
            }
            if requeued { continue }
            open = stack
            open.append(laid)
            track[laid] = slice
            laid += 1
        }
        track.removeLast(track.count - laid)
        return track
    }
}
