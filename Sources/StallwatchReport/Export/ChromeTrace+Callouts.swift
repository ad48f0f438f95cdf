import StallwatchAnalysis
import StallwatchCore

/// The callouts of a Chrome export's track, in track order, with what their events say: the
/// loaded ones (`LoadedTrace.callouts`), or a full-mode trace's read from its bytes as they are
/// drawn, so that tens of millions of callouts are never held at once. Read from the bytes
/// only when the file holds them in start order (one loop runs one callout at a time); else
/// they are read into memory first and sorted.
///
/// One thread at a time.
struct CalloutTrack {
    /// One callout: its slice (`item`: its number in file order) and what its event says.
    struct Entry {
        var slice: ChromeTrack.Slice
        /// Its site and mode, by number in `texts`.
        var place: Int
        var duration: UInt64
    }

    /// Each place's name, site and mode as JSON strings.
    private(set) var texts: [(name: String, site: String, mode: String)] = []
    /// The earliest start, nil without callouts.
    private(set) var first: UInt64?
    /// Per stall given: the start and end of the callout it happened in (`CalloutMatcher`).
    private(set) var matched: [(start: UInt64, end: UInt64)?] = []

    private var sorted: [Entry] = []
    private var position = 0
    /// With records: the decoder, its next callout, and the callouts of one start in key order.
    private var records: (decoder: TraceDecoder, next: TraceRecord.Callout?, group: [Entry])?
    private var places: [PlaceKey: Int] = [:]
    private var count = 0

    private struct PlaceKey: Hashable {
        var site: UInt64
        var mode: UInt16
    }

    /// The loaded `callouts`, and which of them each of `stalls` happened in.
    init(_ callouts: [CalloutEvent], stalls: [Stall]) {
        var numbers: [ObjectIdentifier: Int] = [:]
        sorted = callouts.enumerated().map { index, callout in
            let number = numbers[ObjectIdentifier(callout.place)] ?? texts.count
            if number == texts.count {
                numbers[ObjectIdentifier(callout.place)] = number
                texts.append(Self.texts(callout.site, mode: callout.mode))
            }
            return Entry(
                slice: Self.slice(callout.start, callout.duration, index), place: number, duration: callout.duration)
        }
        sorted.sort { $0.slice.key < $1.slice.key }
        first = callouts.map(\.start).min()
        let matcher = CalloutMatcher(callouts)
        matched = stalls.map { stall in
            matcher.callout(of: stall).map { (callouts[$0].start, callouts[$0].start &+ callouts[$0].duration) }
        }
    }

    private init() {}

    /// The callouts of the trace `bytes`, and which of them each of `stalls` happened in.
    static func reading(_ bytes: [UInt8], stalls: [Stall]) -> CalloutTrack {
        var track = CalloutTrack()
        var sites: [UInt64: TraceRecord.CallSite] = [:]
        var modes: [UInt16: String] = [:]
        var inOrder = true
        var last: UInt64 = 0
        var index = 0
        // Per stall, by site: the nearest callout within the matcher's tolerance (the first of
        // equals), found in one pass with the stalls in start order.
        let order = stalls.indices.sorted { stalls[$0].start < stalls[$1].start }
        var nearest = [[UInt64: (distance: UInt64, index: Int, start: UInt64, end: UInt64)]](
            repeating: [:], count: stalls.count)
        var low = 0
        let tolerance = CalloutMatcher.tolerance
        bytes.withUnsafeBytes { buffer in
            _ = TraceDecoder.decode(
                buffer,
                callout: { callout in
                    if callout.start < last { inOrder = false }
                    last = callout.start
                    track.first = min(track.first ?? callout.start, callout.start)
                    track.number(callout)
                    while low < order.count, stalls[order[low]].start &+ tolerance < callout.start { low += 1 }
                    var next = low
                    while next < order.count, stalls[order[next]].start <= callout.start &+ tolerance {
                        let stall = order[next]
                        next += 1
                        let start = stalls[stall].start
                        let distance = callout.start > start ? callout.start - start : start - callout.start
                        if nearest[stall][callout.site].map({ distance < $0.distance }) ?? true {
                            nearest[stall][callout.site] = (
                                distance, index, callout.start, callout.start &+ callout.duration
                            )
                        }
                    }
                    index += 1
                },
                other: { record in
                    switch record {
                    case .callSite(let site): sites[site.id] = site
                    case .modeName(let mode): modes[mode.id] = mode.name
                    default: break
                    }
                })
        }
        guard inOrder else {
            // Read into memory and sorted: each callout with its place, named now.
            var named: [PlaceKey: CalloutPlace] = [:]
            for key in track.places.keys {
                named[key] = CalloutPlace(site: sites[key.site], mode: modes[key.mode] ?? "mode \(key.mode)")
            }
            var callouts: [CalloutEvent] = []
            bytes.withUnsafeBytes { buffer in
                _ = TraceDecoder.decode(
                    buffer,
                    callout: {
                        callouts.append(
                            CalloutEvent(
                                place: named[PlaceKey(site: $0.site, mode: $0.mode)]!, start: $0.start,
                                duration: $0.duration))
                    }, other: { _ in })
            }
            return CalloutTrack(callouts, stalls: stalls)
        }
        track.texts = [(String, String, String)](repeating: ("", "", ""), count: track.places.count)
        for (key, number) in track.places {
            track.texts[number] = texts(sites[key.site], mode: modes[key.mode] ?? "mode \(key.mode)")
        }
        track.matched = stalls.indices.map { stall in
            nearest[stall].filter { CalloutMatcher.sameSite(sites[$0.key], stalls[stall]) }.values
                .min { ($0.distance, $0.index) < ($1.distance, $1.index) }.map { ($0.start, $0.end) }
        }
        track.records = (TraceDecoder(bytes), nil, [])
        return track
    }

    /// The next callout in track order, nil after the last.
    mutating func peek() -> Entry? {
        guard records != nil else { return position < sorted.count ? sorted[position] : nil }
        if records!.group.isEmpty { readGroup() }
        return records!.group.last
    }

    /// Takes the next callout in track order.
    mutating func pop() -> Entry? {
        guard records != nil else {
            position += 1
            return position <= sorted.count ? sorted[position - 1] : nil
        }
        if records!.group.isEmpty { readGroup() }
        return records!.group.popLast()
    }

    /// Reads the callouts that start where the next one does, into `group` in reverse key order.
    private mutating func readGroup() {
        func nextCallout() -> TraceRecord.Callout? {
            if let pending = records!.next {
                records!.next = nil
                return pending
            }
            while let record = records!.decoder.next() {
                if case .callout(let callout) = record { return callout }
            }
            return nil
        }
        guard let head = nextCallout() else { return }
        var group = [entry(head)]
        while let callout = nextCallout() {
            if callout.start != head.start {
                records!.next = callout
                break
            }
            group.append(entry(callout))
        }
        group.sort { $1.slice.key < $0.slice.key }
        records!.group = group
    }

    /// `callout`'s place number, the next number the first time.
    @discardableResult
    private mutating func number(_ callout: TraceRecord.Callout) -> Int {
        let key = PlaceKey(site: callout.site, mode: callout.mode)
        if let known = places[key] { return known }
        places[key] = places.count
        return places.count - 1
    }

    /// `callout` as the next entry in file order.
    private mutating func entry(_ callout: TraceRecord.Callout) -> Entry {
        count += 1
        return Entry(
            slice: Self.slice(callout.start, callout.duration, count - 1), place: number(callout),
            duration: callout.duration)
    }

    private static func slice(_ start: UInt64, _ duration: UInt64, _ item: Int) -> ChromeTrack.Slice {
        ChromeTrack.Slice(start: start, end: max(start, start &+ duration), layer: 0, item: item)
    }

    private static func texts(_ site: TraceRecord.CallSite?, mode: String) -> (name: String, site: String, mode: String)
    {
        let name = site?.label ?? site.map { "\($0.kind) \($0.file):\($0.line)" } ?? "callout"
        return (
            JSONOutput.string(name), JSONOutput.string(site.map { "\($0.file):\($0.line)" } ?? "?"),
            JSONOutput.string(mode)
        )
    }
}

/// Finds the callout record a stall happened in: same call site, the start nearest the
/// stall's (the two are read from different clocks, well under a millisecond apart); of two
/// as near, the first.
struct CalloutMatcher {
    /// How far apart the two clocks may put the same start.
    static let tolerance: UInt64 = 1_000_000

    private let callouts: [CalloutEvent]
    /// The callouts' indices by start; nil when they are in start order already.
    private let byStart: [Int]?

    init(_ callouts: [CalloutEvent]) {
        self.callouts = callouts
        let sorted = zip(callouts, callouts.dropFirst()).allSatisfy { $0.start <= $1.start }
        byStart = sorted ? nil : callouts.indices.sorted { (callouts[$0].start, $0) < (callouts[$1].start, $1) }
    }

    /// Whether a callout of `site` ran `stall`'s work.
    static func sameSite(_ site: TraceRecord.CallSite?, _ stall: Stall) -> Bool {
        guard let site else { return false }
        return site.file == stall.callout.file && site.line == stall.callout.line && site.label == stall.callout.label
    }

    /// The index of the callout at `position` in start order.
    private func index(at position: Int) -> Int { byStart?[position] ?? position }

    func callout(of stall: Stall) -> Int? {
        let low = stall.start > Self.tolerance ? stall.start - Self.tolerance : 0
        var position = callouts.indices.partitioningIndex { callouts[index(at: $0)].start >= low }
        var best: (index: Int, distance: UInt64)?
        while position < callouts.count, callouts[index(at: position)].start <= stall.start &+ Self.tolerance {
            let found = index(at: position)
            position += 1
            let callout = callouts[found]
            guard Self.sameSite(callout.site, stall) else { continue }
            let distance = callout.start > stall.start ? callout.start - stall.start : stall.start - callout.start
            if best.map({ distance < $0.distance }) ?? true { best = (found, distance) }
        }
        return best?.index
    }
}
