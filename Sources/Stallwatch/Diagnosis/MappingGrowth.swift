import CStallwatchShims
import Glibc

/// Which file mapping a thread is faulting in, when the perf page-fault event
/// (`FaultAddresses`) is unavailable or has no record yet. /proc does not show a faulting
/// thread's fault address (/proc/.../syscall shows only the user PC, outside a syscall), so this
/// compares the resident size of each file-backed, non-executable mapping in
/// /proc/self/smaps between two samples that saw major faults: the one that grew the most is
/// being read in. smaps is costly to read (a walk of every mapping's page tables: 14–21 ms
/// for the debug test process on a loaded machine), so it is read only for samples that
/// fault, and at most every 50 ms. Watchdog only.
struct MappingGrowth {
    private var last: [UInt64: (path: String, rssKB: UInt64)] = [:]
    private var lastTime: UInt64 = 0

    /// Forgets the previous reading (a new stall).
    mutating func reset() {
        last = [:]
        lastTime = 0
        lastResult = nil
        compared = false
    }

    private var lastResult: String?
    /// Whether a comparison in this stall named a mapping: until then the next faulting sample
    /// reads again at once (a stall's faults may not last another 50 ms).
    private var compared = false

    /// smaps is read at most this often; in between, the last answer stands.
    static let minimumInterval: UInt64 = 50_000_000

    /// The path of the mapping that grew the most since the previous reading (on the stall's
    /// first call, during a second reading), nil when none grew.
    mutating func grownMapping() -> String? {
        let time = sw_monotonic_ns()
        if lastTime != 0, compared, time &- lastTime < Self.minimumInterval { return lastResult }
        lastTime = time
        // None grew since a mapping was named: the thread waits for that file's next read-in.
        lastResult = compare() ?? lastResult
        return lastResult
    }

    private mutating func compare() -> String? {
        var now = Self.read()
        defer { last = now }
        // The stall's first reading: a second one at once compares the growth while the first
        // was read (a short stall may have no second faulting sample).
        if last.isEmpty {
            last = now
            now = Self.read()
        }
        guard !last.isEmpty else { return nil }
        var best: (path: String, growth: UInt64)?
        for (start, mapping) in now {
            let before = last[start]?.rssKB ?? 0
            guard mapping.rssKB > before else { continue }
            let growth = mapping.rssKB - before
            if growth > (best?.growth ?? 0) { best = (mapping.path, growth) }
        }
        // Until a mapping is named, every faulting sample reads again (none grew: the thread
        // waited for one read-in between the two readings).
        compared = best != nil
        return best?.path
    }

    private static func read() -> [UInt64: (path: String, rssKB: UInt64)] {
        guard let file = fopen("/proc/self/smaps", "r") else { return [:] }
        defer { fclose(file) }
        var result: [UInt64: (path: String, rssKB: UInt64)] = [:]
        var current: (start: UInt64, path: String)?
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!)
            if text.hasPrefix("Rss:") {
                guard let mapping = current else { continue }
                let value = UInt64(text.dropFirst(4).split(separator: " ").first ?? "") ?? 0
                result[mapping.start] = (mapping.path, value)
                current = nil
                continue
            }
            // A mapping header: "start-end perms offset dev inode path".
            guard let first = text.first, first.isHexDigit, text.contains("-") else { continue }
            let parts = text.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            current = nil
            guard parts.count == 6, !parts[1].contains("x") else { continue }
            let path = parts[5].trimmingCharacters(in: "\n ")
            guard path.hasPrefix("/"), let range = parts[0].split(separator: "-").first,
                let start = UInt64(range, radix: 16)
            else { continue }
            current = (start, path)
        }
        return result
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = self
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
