import Dispatch
import StallwatchAnalysis
import StallwatchCore

#if canImport(Glibc)
    import Glibc
#endif

/// One callout of a `full`-mode trace, with its call site resolved: what the Chrome export
/// draws on the main thread's track. Its site and mode are shared with every callout of the
/// same site and mode (`CalloutPlace`): a trace holds tens of millions of callouts.
///
/// A plain value; use it on any thread.
package struct CalloutEvent: Sendable, Hashable {
    /// Where it ran: its site and mode.
    package var place: CalloutPlace
    /// When it started, in `CLOCK_MONOTONIC` nanoseconds.
    package var start: UInt64
    /// How long it ran, in nanoseconds.
    package var duration: UInt64

    /// Where the work was registered (kind, label, `#fileID`, line); `nil` when the trace lost
    /// the `callSite` record.
    package var site: TraceRecord.CallSite? { place.site }
    /// The run-loop mode it ran in (`default`, `tracking`, or `mode N` when unnamed).
    package var mode: String { place.mode }
}

/// The call site and run-loop mode of callouts: one per distinct pair in a trace.
///
/// Any thread. Unchecked `Sendable`: the loader names it once it has read every call site and
/// mode record (which may follow the callouts that use them), before the trace is handed out,
/// and nothing changes it after.
package final class CalloutPlace: @unchecked Sendable, Hashable {
    /// Where the work was registered; `nil` when the trace lost the `callSite` record.
    package fileprivate(set) var site: TraceRecord.CallSite?
    /// The run-loop mode (`default`, `tracking`, or `mode N` when unnamed).
    package fileprivate(set) var mode: String

    /// A place of `site` in `mode`.
    package init(site: TraceRecord.CallSite?, mode: String) {
        self.site = site
        self.mode = mode
    }

    package static func == (lhs: CalloutPlace, rhs: CalloutPlace) -> Bool {
        lhs === rhs || (lhs.site == rhs.site && lhs.mode == rhs.mode)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(site)
        hasher.combine(mode)
    }
}

/// A trace file read by `TraceLoader` and assembled: the `DecodedTrace` (stalls, summaries,
/// how decoding went) with where it came from.
///
/// A plain value; use it on any thread.
package struct LoadedTrace: Sendable {
    /// The path it was read from, as given.
    package var path: String
    /// The file's size in bytes.
    package var byteCount: Int
    /// The decoded trace: header, stalls with symbolicated samples, summaries, outcome.
    package var trace: DecodedTrace
    /// Every callout, in file order: only for a `full`-mode trace loaded with
    /// `includeCallouts`, else empty.
    package var callouts: [CalloutEvent] = []
    /// The loop's busy time, interval by interval: for a `full`-mode trace loaded with
    /// `includeCallouts` or `busyTime`, else nil.
    package var busy: BusyTime?

    /// How the file ends early, if it does: inside a record (a killed recorder) or in a junk
    /// tail (a crash or power loss). The records before it are all there.
    package var truncation: TraceError? { trace.outcome.truncation }
    /// Damaged regions between records that the decoder skipped: data is missing, so counts
    /// from this trace are low.
    package var corruptRegions: [TraceError] { trace.outcome.corruptRegions }
}

/// Why a trace file could not be read at all (not opened, not a trace, a newer format, not
/// one whole record).
///
/// A plain value; use it on any thread.
package struct TraceLoadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file, as given.
    package var path: String
    /// One line naming the file and the byte offset: `app.swtrace: byte 0: cannot open (…)`.
    package var description: String
}

/// Reads trace files into `LoadedTrace`s, several in parallel.
///
/// Call from any thread; it blocks until every file is read.
package enum TraceLoader {
    /// Reads the trace at `path`; with `includeCallouts`, also keeps every callout of a
    /// `full`-mode trace (a second pass over the file, for the Chrome export); with `busyTime`
    /// (or `includeCallouts`), adds up their time interval by interval (`LoadedTrace.busy`, for
    /// the HTML report).
    ///
    /// Fails only when nothing could be read: the file cannot be opened or read, is not a
    /// trace, has a newer format version, or holds no whole record. A truncated or damaged
    /// trace loads, with `truncation` and `corruptRegions` saying what was lost.
    ///
    /// `workers` is how many threads may decode it: a large trace is split between sync markers.
    package static func load(path: String, includeCallouts: Bool = false, busyTime: Bool = false, workers: Int = 1)
        -> Result<LoadedTrace, TraceLoadError>
    {
        switch readFile(path) {
        case .success(let bytes):
            load(bytes: bytes, path: path, includeCallouts: includeCallouts, busyTime: busyTime, workers: workers)
        case .failure(let error): .failure(error)
        }
    }

    /// Decodes trace bytes read elsewhere (standard input: `stallwatch report -`); `path`
    /// names them in messages and in the result. Fails as `load(path:includeCallouts:)` does.
    package static func load(
        bytes: [UInt8], path: String, includeCallouts: Bool = false, busyTime: Bool = false, workers: Int = 1
    ) -> Result<LoadedTrace, TraceLoadError> {
        if bytes.isEmpty {
            return .failure(TraceLoadError(path: path, description: "\(path): byte 0: empty, not a trace"))
        }
        let trace = bytes.withUnsafeBytes { decode($0, fileName: path, workers: workers) }
        if trace.outcome.recordCount == 0, let problem = trace.outcome.problems.first {
            return .failure(TraceLoadError(path: path, description: problem.description))
        }
        var loaded = LoadedTrace(path: path, byteCount: bytes.count, trace: trace)
        // A second pass only when the callouts themselves are wanted (export).
        if (includeCallouts || busyTime) && trace.calloutCount > 0 {
            if !includeCallouts, let busy = busyTimeInChunks(bytes, of: loaded, workers: workers) {
                loaded.busy = busy
            } else {
                scanCallouts(bytes, into: &loaded, keep: includeCallouts)
            }
        }
        return .success(loaded)
    }

    /// Reads every file of `paths` as `load(path:includeCallouts:)` does, on up to `workers`
    /// threads (every core by default; a large file is split between them too); the results
    /// are in the order of `paths` and the same whatever `workers` is. `progress` is called with
    /// each file's size once it is read, from the reading threads (so it must be thread-safe).
    package static func load(
        paths: [String], includeCallouts: Bool = false, workers: Int = availableCores,
        progress: (@Sendable (_ bytesRead: Int) -> Void)? = nil
    ) -> [Result<LoadedTrace, TraceLoadError>] {
        load(paths.count, workers: workers) { index in
            let result = load(path: paths[index], includeCallouts: includeCallouts, workers: workers)
            if case .success(let trace) = result { progress?(trace.byteCount) }
            return result
        }
    }

    /// `read(i)` for every input `i` in `0..<count`, on up to `workers` threads; the results
    /// in input order.
    package static func load(
        _ count: Int, workers: Int, _ read: @Sendable (_ index: Int) -> Result<LoadedTrace, TraceLoadError>
    ) -> [Result<LoadedTrace, TraceLoadError>] {
        let results = Locked([Result<LoadedTrace, TraceLoadError>?](repeating: nil, count: count))
        forEachIndex(count, workers: workers) { index in
            let result = read(index)
            results.withLock { $0[index] = result }
        }
        // Moved out, not copied: this runs on one core after the parallel part, and copying
        // every trace would add work in proportion to the whole input.
        return results.withLock { storage in storage.indices.map { storage[$0].take()! } }
    }

    /// The size of the file at `path`, 0 if unknown (for a progress bar's total).
    package static func size(of path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// The busy time of `loaded`, whose bytes are `bytes`, read on up to `workers` threads
    /// between sync markers (as `decode` splits a large trace); nil when the trace is small, one
    /// worker is allowed, or a chunk is not clean (then the caller reads it serially).
    private static func busyTimeInChunks(_ bytes: [UInt8], of loaded: LoadedTrace, workers: Int) -> BusyTime? {
        guard workers > 1, bytes.count >= chunkedDecodeThreshold else { return nil }
        let empty = BusyTime(of: loaded)
        return bytes.withUnsafeBytes { buffer -> BusyTime? in
            let parts = eachChunk(of: buffer, count: workers * chunksPerWorker) { chunk, from, to -> BusyTime? in
                var part = empty
                let clean = TraceDecoder.callouts(in: chunk, from: from, to: to) {
                    part.add(start: $0.start, duration: $0.duration)
                }
                return clean ? part : nil
            }
            var busy = empty
            for part in parts {
                guard let part else { return nil }
                busy.add(part)
            }
            return busy
        }
    }

    /// Reads the callouts of `bytes` into `loaded`'s busy time and, if `keep`, its callouts.
    private static func scanCallouts(_ bytes: [UInt8], into loaded: inout LoadedTrace, keep: Bool) {
        var sites: [UInt64: TraceRecord.CallSite] = [:]
        var modes: [UInt16: String] = [:]
        // By site and mode id; named once every record is read.
        var places: [PlaceKey: CalloutPlace] = [:]
        var callouts: [CalloutEvent] = []
        if keep { callouts.reserveCapacity(loaded.trace.calloutCount) }
        var busy = BusyTime(of: loaded)
        // The last callout's place: most callouts have the one before's.
        var last: (key: PlaceKey, place: CalloutPlace)?
        bytes.withUnsafeBytes { buffer in
            _ = TraceDecoder.decode(
                buffer,
                callout: { callout in
                    busy.add(start: callout.start, duration: callout.duration)
                    guard keep else { return }
                    let key = PlaceKey(site: callout.site, mode: callout.mode)
                    let place: CalloutPlace
                    if let last, last.key == key {
                        place = last.place
                    } else {
                        place = places[key] ?? CalloutPlace(site: nil, mode: "")
                        places[key] = place
                        last = (key, place)
                    }
                    callouts.append(CalloutEvent(place: place, start: callout.start, duration: callout.duration))
                },
                other: { record in
                    switch record {
                    case .callSite(let site): sites[site.id] = site
                    case .modeName(let mode): modes[mode.id] = mode.name
                    default: break
                    }
                })
        }
        for (key, place) in places {
            place.site = sites[key.site]
            place.mode = modes[key.mode] ?? "mode \(key.mode)"
        }
        loaded.busy = busy
        loaded.callouts = callouts
    }

    private struct PlaceKey: Hashable {
        var site: UInt64
        var mode: UInt16
    }

    /// The bytes of the file at `path`, or why they could not be read.
    package static func readFile(_ path: String) -> Result<[UInt8], TraceLoadError> {
        do throws(RegularFile.Failure) {
            return .success(try RegularFile.read(path, directory: "a directory named like a trace"))
        } catch {
            let hint = error.notRegular ? "; give a stream on standard input as '-'" : ""
            return .failure(
                TraceLoadError(path: path, description: "\(path): byte \(error.offset): \(error.reason)\(hint)"))
        }
    }
}
