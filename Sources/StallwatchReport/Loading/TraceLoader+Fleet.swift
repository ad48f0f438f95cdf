import Dispatch
import StallwatchAnalysis
import StallwatchCore

#if canImport(Glibc)
    import Glibc
#endif

// Many traces: directories expand to the traces under them, and files are decoded on every
// core, a large one split between sync markers (`TraceChunk`).

extension TraceLoader {
    /// The file name ending that marks a trace inside a directory.
    package static let traceExtension = ProcessTreeFiles.traceExtension

    /// A trace this large or larger is decoded in chunks on several workers.
    static let chunkedDecodeThreshold = 4 << 20

    /// The inputs with every directory replaced by the `*.swtrace` files under it (recursively,
    /// sorted by path; hidden entries skipped). Files are kept as given, in order, whatever
    /// their name; paths that name nothing are kept too, so loading reports them. A file `T`
    /// is the recording of a process tree: `T` followed by the traces in `T.d`
    /// (`ProcessTreeFiles`; `T` left out when it is missing and `T.d` holds some; empty files in
    /// `T.d`, left by a process that exec'd or died as it began, left out too). A file found
    /// in a directory is left out when it was already given or found.
    package static func expand(_ inputs: [String]) -> [String] {
        var result: [String] = []
        var seen = Set<String>()
        for input in inputs {
            var info = stat()
            if stat(input, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                var found: [String] = []
                walk(input, into: &found)
                for path in found.sorted() where seen.insert(path).inserted { result.append(path) }
            } else {
                // A recording of a process tree: `T` and the traces its other processes wrote
                // in `T.d`; `T` alone when only the processes under it wrote one.
                var found: [String] = []
                let children = ProcessTreeFiles.childDirectory(of: input)
                if stat(children, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                    walk(children, into: &found)
                    // An empty file there is a process that exec'd or was killed the moment its
                    // recording began: it has nothing to say, and is no damage to report.
                    found.removeAll { stat($0, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_size == 0 }
                }
                if found.isEmpty || access(input, F_OK) == 0 {
                    seen.insert(input)
                    result.append(input)
                }
                for path in found.sorted() where seen.insert(path).inserted { result.append(path) }
            }
        }
        return result
    }

    /// How many cores this process may run on.
    package static var availableCores: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    /// Decodes a whole trace's bytes with up to `workers` threads: split between sync markers
    /// when it is large (at least 4 MiB) and more than one worker is allowed, else serially.
    /// The result is the same `DecodedTrace(decoding:fileName:)` gives; a trace with any
    /// damage is decoded serially, so its messages are the serial path's.
    package static func decode(_ bytes: UnsafeRawBufferPointer, fileName: String?, workers: Int) -> DecodedTrace {
        guard workers > 1, bytes.count >= chunkedDecodeThreshold else {
            return DecodedTrace(decoding: bytes, fileName: fileName)
        }
        // A few chunks per worker, so one slow core (or a dense stretch of the file) does not
        // leave the others waiting: with one chunk each, two cores gave 1.6x.
        return decodeInChunks(bytes, fileName: fileName, chunks: workers * chunksPerWorker)
            ?? DecodedTrace(decoding: bytes, fileName: fileName)
    }

    /// How many chunks `decode` cuts a large trace into per worker.
    static let chunksPerWorker = 4

    /// The chunked decode of `bytes` in (about) `chunks` pieces at once, nil if a chunk was not
    /// clean (then the caller decodes serially). Exposed for tests that check it against the
    /// serial path on small traces.
    package static func decodeInChunks(
        _ bytes: UnsafeRawBufferPointer, fileName: String?, chunks: Int
    ) -> DecodedTrace? {
        // Check the preamble the serial way: a bad one is the serial path's to report.
        let head = UnsafeRawBufferPointer(rebasing: bytes[..<min(bytes.count, TraceFormat.preambleSize)])
        guard head.elementsEqual(TraceEncoder.preamble) else { return nil }
        let chunksDecoded = eachChunk(of: bytes, count: chunks) { buffer, from, to in
            TraceChunk(decoding: buffer, from: from, to: to)
        }
        guard chunksDecoded.allSatisfy({ $0 != nil }) else { return nil }
        let decoded = chunksDecoded.map { $0! }
        guard TraceChunk.syncsAscend(decoded) else { return nil }
        return DecodedTrace(chunks: decoded, fileName: fileName)
    }

    /// `body(buffer, from, to)` for each of about `count` pieces of `bytes` (all of it, the
    /// preamble included) cut at sync markers (`TraceChunk.boundaries`), run concurrently; the
    /// results in file order. The one way a trace is read in parallel.
    static func eachChunk<Result: Sendable>(
        of bytes: UnsafeRawBufferPointer, count: Int,
        _ body: @Sendable (UnsafeRawBufferPointer, Int, Int) -> Result
    ) -> [Result] {
        let starts = TraceChunk.boundaries(of: bytes, count: count)
        let ends = Array(starts.dropFirst()) + [bytes.count]
        let parts = Locked([Result?](repeating: nil, count: starts.count))
        let address = UInt(bitPattern: bytes.baseAddress)
        let length = bytes.count
        DispatchQueue.concurrentPerform(iterations: starts.count) { index in
            // The buffer outlives this call; passed as an address so the closure stays Sendable.
            let buffer = UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: address), count: length)
            let part = body(buffer, starts[index], ends[index])
            parts.withLock { $0[index] = part }
        }
        return parts.withLock { $0 }.map { $0! }
    }

    /// Runs `body(index)` for `0..<count` on up to `workers` threads (a small pool pulling the
    /// next index), returning when all are done.
    static func forEachIndex(_ count: Int, workers: Int, _ body: @Sendable (Int) -> Void) {
        forEachIndex(count, workers: workers) { _, index in body(index) }
    }

    /// `forEachIndex(_:workers:_:)` that also tells `body` which worker (0..<`workerCount`)
    /// runs it, so each worker can keep state of its own.
    static func forEachIndex(_ count: Int, workers: Int, _ body: @Sendable (_ worker: Int, _ index: Int) -> Void) {
        let width = workerCount(count, workers)
        if width == 1 {
            for index in 0..<count { body(0, index) }
            return
        }
        let next = Locked(0)
        DispatchQueue.concurrentPerform(iterations: width) { worker in
            while true {
                let index = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard index < count else { return }
                body(worker, index)
            }
        }
    }

    /// How many workers `forEachIndex` runs for `count` items.
    static func workerCount(_ count: Int, _ workers: Int) -> Int { max(1, min(workers, count)) }

    /// Adds the traces under `directory` to `found`. An entry named like a trace that is not
    /// a regular file (a dangling or looping link, a directory, a FIFO) is added too, so loading
    /// lists it as unreadable; a directory reached twice (a link to a parent) is walked once.
    private static func walk(_ directory: String, into found: inout [String]) {
        var visited = Set<[UInt64]>()
        walk(directory, into: &found, visited: &visited)
    }

    private static func walk(_ directory: String, into found: inout [String], visited: inout Set<[UInt64]>) {
        var own = stat()
        guard stat(directory, &own) == 0, visited.insert([UInt64(own.st_dev), UInt64(own.st_ino)]).inserted else {
            return
        }
        guard let handle = opendir(directory) else { return }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            // The entry's type as the directory gives it; `stat` only when it does not say, or
            // for a link (whose target decides). A fleet directory is 10,000 entries.
            var type = Int32(entry.pointee.d_type)
            let named = name.hasSuffix(traceExtension)
            if type != Int32(DT_DIR) && type != Int32(DT_REG) {
                var info = stat()
                if stat(path, &info) != 0 {
                    if named { found.append(path) }
                    continue
                }
                type =
                    (info.st_mode & S_IFMT) == S_IFDIR
                    ? Int32(DT_DIR) : (info.st_mode & S_IFMT) == S_IFREG ? Int32(DT_REG) : 0
            }
            if named {
                found.append(path)
            } else if type == Int32(DT_DIR) {
                walk(path, into: &found, visited: &visited)
            }
        }
    }
}
