import CStallwatchShims
import Dispatch
import Foundation
import Glibc
import StallwatchCore

/// The recorder's writer thread: drains the ring and the monitor's stalls, encodes records
/// and writes them. Everything here runs on that one thread.
struct TraceWriter {
    let recorder: any TraceSource
    private var encoder = TraceEncoder()
    private var bytes: [UInt8] = []
    private var sites: [SiteKey: UInt64] = [:]
    /// Call-site and mode ids by the callout's raw words (descriptor without the phase, packed
    /// label and file): the per-event path hashes three integers, not two decoded strings, and
    /// a run of events from one site hits `lastSite` without hashing at all.
    private var rawSites: [RawSiteKey: (site: UInt64, mode: UInt16)] = [:]
    private var lastSite: (key: RawSiteKey, ids: (site: UInt64, mode: UInt16))?
    private var modes: [String: UInt16] = [:]
    private var annotations: [Annotation: UInt64] = [:]
    private var symbols: Set<UInt64> = []
    private var moduleIndex: [String: UInt32] = [:]
    private var samplesWritten: [UInt64: Int] = [:]
    /// The start each open stall's `stallBegan` gave.
    private var beganAt: [UInt64: UInt64] = [:]
    /// The last stops of the process the writer noticed (`noteStop`), oldest first.
    private var stops: [Range<UInt64>] = []
    /// The source's watched executors written so far (`watched` records), by label and how.
    private var watchedWritten: Set<[String]> = []
    /// The expected-long reason a stall had when it began, for the stalls that had one.
    private var expectedAtBegin: [UInt64: String] = [:]
    private var latency = [UInt64](repeating: 0, count: LatencyBuckets.count)
    private var intervalStart: UInt64 = 0
    private var lastCongested: UInt64 = 0
    private var lastDropped: UInt64 = 0
    private var lastFrames: (delivered: UInt64, dropped: UInt64) = (0, 0)
    private var failed = false
    /// The callouts of the iteration under way (`full` mode), by site: blamed if it turns out
    /// congested. Cleared at each iteration event.
    private var iterationSites: [UInt64: (count: UInt64, nanos: UInt64)] = [:]
    private var iterationCallouts: UInt64 = 0
    /// The callouts of the last seconds, for each stall's `stallLeadUp` (nil: the recorder's
    /// flight window is 0, or there is no loop).
    private var flight: FlightWindow?
    private var recordingStart: UInt64 = 0

    /// Summaries cover one second; the file is written at least every 50 ms, and every 5 ms
    /// while a drain finds the ring more than a quarter full (a busy loop: the ring would
    /// otherwise overflow between naps). An idle loop keeps the 50 ms naps.
    static let interval: UInt64 = 1_000_000_000
    static let flushPeriod: Int = 50
    static let busyFlushPeriod: Int = 5
    private var lastDrained = 0

    struct RawSiteKey: Hashable {
        var descriptor: UInt64
        var label: UInt64
        var file: UInt64
    }

    struct SiteKey: Hashable {
        var kind: UInt8
        var label: String?
        var file: String
        var line: UInt32
    }

    init(recorder: any TraceSource) {
        self.recorder = recorder
        if recorder.callouts != nil, recorder.flightWindowNanos > 0 {
            flight = FlightWindow(length: recorder.flightWindowNanos)
        }
    }

    mutating func run() {
        bytes = TraceEncoder.preamble
        writeHeader()
        intervalStart = sw_monotonic_ns()
        recordingStart = intervalStart
        lastCongested = recorder.board?.congestedIterations.load(ordering: .relaxed) ?? 0
        while recorder.output.isRunning {
            let busy = recorder.callouts.map { lastDrained > $0.capacity / 4 } ?? false
            let period = busy ? Self.busyFlushPeriod : Self.flushPeriod
            let deadline = sw_monotonic_ns() &+ UInt64(period) * 1_000_000
            // However the wait ended: at a resume, a stall queued by the watchdog can wake it at
            // the moment its timeout passes, and it returns as woken.
            _ = recorder.output.wake.wait(timeout: .now() + .milliseconds(period))
            noteStop(after: deadline)
            // A stop that lands while the writer drains (or waits for a CPU to) lengthens the
            // drain: no drain takes that long of its own.
            let drained = sw_monotonic_ns()
            drain()
            noteStop(after: drained)
        }
        drain()
        // A recording that watched nothing says so, so that a trace without stalls is not
        // taken for one whose executors never stalled.
        if watchedWritten.isEmpty {
            append(.watched(WatchedExecutor(label: "", how: WatchedExecutor.nothing, tid: 0, since: sw_monotonic_ns())))
        }
        summarize(until: sw_monotonic_ns())
        flush()
    }

    private mutating func drain() {
        // The stalls queued so far, then the loop's events: every callout that ended before a
        // queued stall began was pushed before the stall was queued, so its lead-up has them.
        let stalls = recorder.output.pending.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        let converter = Timebase.shared.converter()
        let drained = recorder.callouts?.drain { event in
            if event.descriptor.isIteration {
                // The time the process was stopped in the iteration is not the loop's latency.
                let start = converter.nanos(event.start)
                var nanos = converter.duration(from: event.start, to: event.end)
                nanos -= min(nanos, StallAccounting.stoppedNanos(in: start..<start &+ nanos, of: stops))
                latency[LatencyBuckets.index(forNanoseconds: nanos)] += 1
                if event.label == EventRing.Event.congestedIteration {
                    writeCongestedIteration(start: start, duration: nanos)
                }
                iterationSites.removeAll(keepingCapacity: true)
                iterationCallouts = 0
            } else {
                takeCallout(event, converter)
            }
        }
        lastDrained = drained ?? 0
        let now = sw_monotonic_ns()
        if let lost = recorder.callouts?.dropped.load(ordering: .relaxed) { flight?.sawLost(total: lost, at: now) }
        for executor in recorder.watched where watchedWritten.insert([executor.label, executor.how]).inserted {
            append(.watched(executor))
        }
        for stall in stalls {
            switch stall {
            case .began(let stall): write(stall, ended: false)
            case .ended(let stall): write(stall, ended: true)
            }
        }
        if now - intervalStart >= Self.interval { summarize(until: now) }
        flush()
    }

    /// How late past its deadline the writer must wake for the process to count as stopped
    /// meanwhile: far past any scheduling delay of a loaded machine, so that only a stop
    /// (SIGSTOP, a debugger) makes it, and the stops people notice (seconds) are all caught.
    static let stopThreshold: UInt64 = 200_000_000

    /// Writes a `stopped` record if the writer runs more than `stopThreshold` after `deadline`:
    /// the end of its wait's timeout (no wait lasts longer), or the start of a drain (no drain
    /// takes that long). The whole process was stopped from then (at the latest) until now.
    private mutating func noteStop(after deadline: UInt64) {
        let woke = sw_monotonic_ns()
        guard woke > deadline, woke - deadline > Self.stopThreshold else { return }
        append(.stopped(from: deadline, length: woke - deadline))
        if stops.count == 16 { stops.removeFirst() }
        stops.append(deadline..<woke)
    }

    // MARK: Records

    private mutating func writeHeader() {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let clockBase = sw_monotonic_ns()
        let name =
            (try? String(contentsOfFile: "/proc/self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
        append(
            .header(
                TraceRecord.Header(
                    processName: name, pid: UInt32(getpid()),
                    wallClockStart: UInt64(wall.tv_sec) * 1_000_000_000 + UInt64(wall.tv_nsec), clockBase: clockBase,
                    mode: recorder.mode, thresholds: recorder.monitorConfiguration.tiers,
                    sampleInterval: recorder.monitorConfiguration.sampleInterval))
        )
        append(.platform(TraceRecord.Platform(architecture: Platform.architecture)))
        let modules = recorder.symbolicator.modules()
        append(.origin(Self.origin(main: modules.first { $0.isMainExecutable }, appVersion: recorder.appVersion)))
        // Module indices start at 1: 0 means "unknown module" in symbol records.
        for (offset, module) in modules.enumerated() {
            let index = UInt32(offset + 1)
            moduleIndex[module.path] = index
            append(
                .module(
                    TraceRecord.Module(
                        index: index, loadAddress: module.base, path: module.path,
                        buildID: module.buildID.map(Self.bytes(fromHex:)) ?? [])))
        }
    }

    /// One callout from the ring: into the flight window and the iteration's sites, and into
    /// the file in `full` mode.
    private mutating func takeCallout(_ event: EventRing.Event, _ converter: Timebase.Converter) {
        // The phase (bits 8-15) is not part of a call site.
        let key = RawSiteKey(
            descriptor: event.descriptor.rawValue & ~0xFF00, label: event.label, file: event.file)
        let ids: (site: UInt64, mode: UInt16)
        if let last = lastSite, last.key == key {
            ids = last.ids
        } else if let known = rawSites[key] {
            ids = known
        } else {
            let site = siteID(
                SiteKey(
                    kind: event.descriptor.kindCode, label: CalloutSite.unpack(event.label),
                    file: CalloutSite.unpack(event.file) ?? "?", line: event.descriptor.line))
            ids = (site, modeID(event.descriptor.mode.name))
            rawSites[key] = ids
        }
        lastSite = (key, ids)
        let (site, mode) = ids
        let duration = converter.duration(from: event.start, to: event.end)
        let start = converter.nanos(event.start)
        if recorder.mode == .full {
            append(.callout(TraceRecord.Callout(site: site, mode: mode, start: start, duration: duration)))
        }
        flight?.add(site: site, start: start, duration: duration)
        let known = iterationSites[site]
        iterationSites[site] = ((known?.count ?? 0) + 1, (known?.nanos ?? 0) &+ duration)
        iterationCallouts += 1
    }

    /// An iteration the loop counted as congested: its time, and the sites of the callouts
    /// seen since the previous iteration event (none when callouts are not recorded: `stalls`
    /// mode with the flight recorder off), largest first.
    private mutating func writeCongestedIteration(start: UInt64, duration: UInt64) {
        let sites = iterationSites.map {
            TraceRecord.CongestedIteration.SiteTime(site: $0.key, count: $0.value.count, nanos: $0.value.nanos)
        }
        .sorted { ($0.nanos, $1.site) > ($1.nanos, $0.site) }
        .prefix(TraceRecord.CongestedIteration.maxSites)
        append(
            .congestedIteration(
                TraceRecord.CongestedIteration(
                    start: start, duration: duration, callouts: iterationCallouts, sites: Array(sites))))
    }

    private mutating func write(_ stall: Stall, ended: Bool) {
        if samplesWritten[stall.id] == nil {
            let site = siteID(
                SiteKey(
                    kind: stall.callout.kind.rawValue, label: stall.callout.label, file: stall.callout.file,
                    line: stall.callout.line))
            append(
                .stallBegan(
                    TraceRecord.StallBegan(
                        id: stall.id, start: stall.start, site: site, mode: modeID(stall.callout.mode),
                        phase: stall.callout.phase, tier: .hitch)))
            samplesWritten[stall.id] = 0
            beganAt[stall.id] = stall.start
            // The app's state at detection, kept even if the process dies in the stall.
            if !stall.context.isEmpty || stall.expected != nil { appendContext(of: stall) }
            if stall.expected != nil { expectedAtBegin[stall.id] = stall.expected }
            if let flight {
                append(.stallLeadUp(flight.leadUp(id: stall.id, before: stall.start, since: recordingStart)))
            }
        }
        let done = samplesWritten[stall.id] ?? 0
        for (index, sample) in stall.samples.enumerated().dropFirst(done) {
            write(sample, index: UInt64(index), of: stall.id)
        }
        samplesWritten[stall.id] = max(done, stall.samples.count)
        if ended {
            var flags = stall.flags
            if stall.end != nil { flags.remove(.unfinished) }
            append(.stallEnded(TraceRecord.StallEnded(id: stall.id, end: stall.end ?? sw_monotonic_ns(), flags: flags)))
            // Marked expected-long after its start, or no longer (it outlived its scope): the
            // next context record replaces the first.
            if stall.expected != expectedAtBegin[stall.id] ?? nil { appendContext(of: stall) }
            expectedAtBegin[stall.id] = nil
            // Timed again by its executor after it began (HeartbeatMonitor with tick reports).
            if let end = stall.end, let began = beganAt[stall.id], began != stall.start {
                append(.stallRetimed(TraceRecord.StallRetimed(id: stall.id, start: stall.start, end: end)))
            }
            samplesWritten[stall.id] = nil
            beganAt[stall.id] = nil
        }
    }

    private mutating func appendContext(of stall: Stall) {
        let state = stall.context.sorted { $0.key < $1.key }.map {
            TraceRecord.StallContext.KeyValue(key: $0.key, value: $0.value)
        }
        append(.stallContext(TraceRecord.StallContext(id: stall.id, expected: stall.expected, state: state)))
    }

    /// Sample `index` of stall `stall` (its place in `Stall.samples`, which the records about it
    /// name it by), then those records.
    private mutating func write(_ sample: Sample, index: UInt64, of stall: UInt64) {
        for frame in sample.frames where symbols.insert(frame.address).inserted {
            let module = frame.module.flatMap { moduleIndex[$0] } ?? 0
            append(
                .symbol(
                    TraceRecord.Symbol(
                        address: frame.address, module: module, name: frame.symbol, file: frame.file, line: frame.line))
            )
        }
        let annotation = sample.annotation.map { annotationID($0) } ?? 0
        append(
            .sample(
                TraceRecord.Sample(
                    stall: stall, index: index, tid: sample.tid, look: sample.look, time: sample.time,
                    state: sample.state, syscall: sample.syscall, wchan: sample.wchan,
                    cpuTime: sample.cpuTimeNanos, annotation: annotation, captureTimedOut: sample.captureTimedOut,
                    frames: sample.frames.map(\.address))))
        append(.sampleProvenance(TraceRecord.SampleProvenance(stall: stall, sample: index, source: sample.source)))
        if let end = sample.asyncChainEnd {
            let first = sample.frames.firstIndex(where: \.isAsync) ?? sample.frames.endIndex
            append(
                .sampleAsyncChain(
                    TraceRecord.SampleAsyncChain(stall: stall, sample: index, firstAsync: UInt64(first), end: end)))
        }
        writeFacts(of: sample, index: index, stall: stall)
    }

    /// Kinds 18 and 19 right after their sample, and symbols for a lock owner's frames.
    private mutating func writeFacts(of sample: Sample, index: UInt64, stall: UInt64) {
        if let counters = sample.counters {
            append(
                .sampleCounters(
                    TraceRecord.SampleCounters(
                        stall: stall, sample: index, counters: counters, delta: sample.countersDelta)))
        }
        guard let wait = sample.wait else { return }
        for frame in wait.owner?.frames ?? [] where symbols.insert(frame.address).inserted {
            let module = frame.module.flatMap { moduleIndex[$0] } ?? 0
            append(
                .symbol(
                    TraceRecord.Symbol(
                        address: frame.address, module: module, name: frame.symbol, file: frame.file, line: frame.line))
            )
        }
        append(.sampleWait(TraceRecord.SampleWait(stall: stall, sample: index, fact: wait)))
    }

    /// The per-second summaries: latency histogram, congestion, frame clocks, lost events.
    private mutating func summarize(until now: UInt64) {
        let length = now - intervalStart
        if latency.contains(where: { $0 > 0 }) {
            append(
                .latencyHistogram(
                    TraceRecord.LatencyHistogram(
                        intervalStart: intervalStart, intervalLength: length, buckets: LatencyBuckets.sparse(latency))))
            latency = [UInt64](repeating: 0, count: LatencyBuckets.count)
        }
        let board = recorder.board
        let congested = board?.congestedIterations.load(ordering: .relaxed) ?? 0
        if congested > lastCongested {
            append(
                .congestion(
                    TraceRecord.Congestion(
                        intervalStart: intervalStart, intervalLength: length, count: congested - lastCongested)))
            lastCongested = congested
        }
        let clocks = board?.frameClocks.withLock { $0 } ?? []
        let frames = clocks.reduce(into: (delivered: UInt64(0), dropped: UInt64(0))) {
            $0.delivered += $1.delivered.load(ordering: .relaxed)
            $0.dropped += $1.dropped.load(ordering: .relaxed)
        }
        let delivered = frames.delivered &- lastFrames.delivered
        let dropped = frames.dropped &- lastFrames.dropped
        if delivered > 0 || dropped > 0, frames.delivered >= lastFrames.delivered {
            append(
                .frameClock(
                    TraceRecord.FrameClock(
                        intervalStart: intervalStart, intervalLength: length, expected: delivered + dropped,
                        delivered: delivered, dropped: dropped)))
        }
        lastFrames = frames
        let lost = recorder.callouts?.dropped.load(ordering: .relaxed) ?? 0
        if lost > lastDropped {
            append(.lostRecords(TraceRecord.LostRecords(time: now, count: lost - lastDropped)))
            lastDropped = lost
        }
        // Every second and at the end: the run time of a trace whose process exits without
        // stopping the recorder (`_exit`, a kill) still reaches its last second.
        append(.recordedUntil(time: now))
        intervalStart = now
    }

    // MARK: Interning

    private mutating func siteID(_ key: SiteKey) -> UInt64 {
        if let id = sites[key] { return id }
        let id = UInt64(sites.count + 1)
        sites[key] = id
        append(
            .callSite(
                TraceRecord.CallSite(
                    id: id, kind: CalloutKind(rawValue: key.kind) ?? .post, label: key.label, file: key.file,
                    line: key.line)))
        return id
    }

    private mutating func modeID(_ name: String) -> UInt16 {
        if let id = modes[name] { return id }
        let id = UInt16(truncatingIfNeeded: modes.count + 1)
        modes[name] = id
        append(.modeName(TraceRecord.ModeName(id: id, name: name)))
        return id
    }

    private mutating func annotationID(_ annotation: Annotation) -> UInt64 {
        if let id = annotations[annotation] { return id }
        let id = UInt64(annotations.count + 1)
        annotations[annotation] = id
        append(.annotation(TraceRecord.AnnotationDefinition(id: id, annotation: annotation)))
        return id
    }

    // MARK: Output

    private mutating func append(_ record: TraceRecord) {
        encoder.append(record, to: &bytes)
    }

    /// Writes what is buffered; a failure is reported once on stderr and recording goes on
    /// in memory-free mode (records are dropped) so the app is never disturbed.
    private mutating func flush() {
        guard !bytes.isEmpty else { return }
        defer { bytes.removeAll(keepingCapacity: true) }
        guard !failed else { return }
        guard recorder.output.isStillTheTrace else {
            failed = true
            Messages.say("stopped writing trace \(recorder.output.path): the program closed its descriptor")
            return
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.write(recorder.output.fd, $0.baseAddress! + offset, $0.count - offset)
            }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 {
                failed = true
                Messages.say("cannot write trace \(recorder.output.path): \(String(cString: strerror(errno)))")
                return
            }
            offset += written
        }
    }

    /// The trace's origin: a random trace id, the host name, and the main executable's path and
    /// build id (the `NT_GNU_BUILD_ID` note of the image the loader mapped from `/proc/self/exe`).
    static func origin(main: ModuleInfo?, appVersion: String?) -> TraceRecord.Origin {
        var generator = SystemRandomNumberGenerator()
        let traceID = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var name = [UInt8](repeating: 0, count: 256)
        let ok = name.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { gethostname($0.baseAddress!, $0.count - 1) == 0 }
        }
        let host = ok ? String(decoding: name.prefix { $0 != 0 }, as: UTF8.self) : ""
        let executable =
            main?.path ?? (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return TraceRecord.Origin(
            traceID: traceID, host: host, executable: executable,
            buildID: main?.buildID.map(Self.bytes(fromHex:)) ?? [], appVersion: appVersion)
    }

    private static func bytes(fromHex hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), index != hex.endIndex {
            if let byte = UInt8(hex[index..<next], radix: 16) { result.append(byte) }
            index = next
        }
        return result
    }
}
