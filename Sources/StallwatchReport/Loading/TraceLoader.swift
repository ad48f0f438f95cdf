import Dispatch
import StallwatchCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One callout of a `full`-mode trace, with its call site resolved.
///
/// A plain value; use it on any thread.
public struct CalloutEvent: Sendable, Hashable {
    /// Where the work was registered (kind, label, file, line, mode; phase is not recorded).
    public var site: TraceRecord.CallSite?
    /// The mode's name.
    public var mode: String
    /// When it started (`CLOCK_MONOTONIC` ns).
    public var start: UInt64
    /// How long it ran (ns).
    public var duration: UInt64
}

/// A trace file read and assembled, with how decoding went.
///
/// A plain value; use it on any thread.
public struct LoadedTrace: Sendable {
    /// The path it was read from.
    public var path: String
    /// Its size in bytes.
    public var byteCount: Int
    /// The decoded trace (stalls, summaries, outcome).
    public var trace: DecodedTrace
    /// The time callouts ran, summed (`full` mode only, else 0).
    public var calloutNanos: UInt64 = 0
    /// The end of the last callout (`full` mode only, else 0).
    public var lastCalloutEnd: UInt64 = 0
    /// Every callout (`full` mode, and only when asked for).
    public var callouts: [CalloutEvent] = []

    /// The final truncation, if the file ends inside a record (a killed recorder).
    public var truncation: TraceError? { trace.outcome.truncation }
    /// Damaged regions the decoder skipped (data lost in the middle).
    public var corruptRegions: [TraceError] { trace.outcome.corruptRegions }
}

/// Why a file could not be read at all. `description` is one line naming the file and offset.
///
/// A plain value; use it on any thread.
public struct TraceLoadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// The one-line reason, `path: byte N: problem`.
    public var description: String
}

/// Reads trace files, several in parallel.
///
/// Call from any thread; it blocks until every file is read.
public enum TraceLoader {
    /// Reads one file. Fails only when nothing could be read: the file cannot be opened or
    /// read, is not a trace, has a newer version, or holds no whole record.
    public static func load(path: String, includeCallouts: Bool = false) -> Result<LoadedTrace, TraceLoadError> {
        let bytes: [UInt8]
        switch readFile(path) {
        case .success(let read): bytes = read
        case .failure(let error): return .failure(error)
        }
        let trace = DecodedTrace(decoding: bytes, fileName: path)
        if trace.outcome.recordCount == 0, let problem = trace.outcome.problems.first {
            return .failure(TraceLoadError(path: path, description: problem.description))
        }
        var loaded = LoadedTrace(path: path, byteCount: bytes.count, trace: trace)
        loaded.calloutNanos = trace.calloutNanos
        loaded.lastCalloutEnd = trace.lastCalloutEnd
        // A second pass only when the callouts themselves are wanted (export).
        if includeCallouts && trace.calloutCount > 0 { scanCallouts(bytes, into: &loaded) }
        return .success(loaded)
    }

    /// Reads `paths` in parallel (results in the same order), reporting bytes read to `progress`.
    public static func load(
        paths: [String], includeCallouts: Bool = false, progress: ProgressBar? = nil
    ) -> [Result<LoadedTrace, TraceLoadError>] {
        let results = Mutex([Result<LoadedTrace, TraceLoadError>?](repeating: nil, count: paths.count))
        DispatchQueue.concurrentPerform(iterations: paths.count) { index in
            let result = load(path: paths[index], includeCallouts: includeCallouts)
            if case .success(let trace) = result { progress?.advance(by: trace.byteCount) }
            results.withLock { $0[index] = result }
        }
        return results.withLock { $0.map { $0! } }
    }

    /// The size of the file at `path`, 0 if unknown (for the progress bar's total).
    static func size(of path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    private static func scanCallouts(_ bytes: [UInt8], into loaded: inout LoadedTrace) {
        var sites: [UInt64: TraceRecord.CallSite] = [:]
        var modes: [UInt16: String] = [:]
        var raw: [TraceRecord.Callout] = []
        bytes.withUnsafeBytes { buffer in
            _ = TraceDecoder.decode(buffer) { record, _ in
                switch record {
                case .callout(let callout): raw.append(callout)
                case .callSite(let site): sites[site.id] = site
                case .modeName(let mode): modes[mode.id] = mode.name
                default: break
                }
            }
        }
        loaded.callouts = raw.map {
            CalloutEvent(
                site: sites[$0.site], mode: modes[$0.mode] ?? "mode \($0.mode)", start: $0.start, duration: $0.duration)
        }
    }

    private static func readFile(_ path: String) -> Result<[UInt8], TraceLoadError> {
        func failure(_ what: String) -> Result<[UInt8], TraceLoadError> {
            .failure(
                TraceLoadError(
                    path: path, description: "\(path): byte 0: cannot \(what) (\(String(cString: strerror(errno))))"))
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return failure("open") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return failure("stat") }
        // Read straight into the final buffer (no chunk copies); a file that grows while being
        // read is read up to the size it had.
        let size = Int(max(0, info.st_size))
        var failedAt: Int?
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            while initialized < size {
                let count = read(descriptor, buffer.baseAddress! + initialized, size - initialized)
                if count < 0 && errno == EINTR { continue }
                if count < 0 { failedAt = initialized }
                if count <= 0 { break }
                initialized += count
            }
        }
        if let failedAt {
            return .failure(
                TraceLoadError(
                    path: path,
                    description: "\(path): byte \(failedAt): cannot read (\(String(cString: strerror(errno))))"))
        }
        return .success(bytes)
    }
}
