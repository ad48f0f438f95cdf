import StallwatchCore

/// What the classifier has worked out about each distinct (symbol, module): its names and
/// the rules it satisfies. Reports meet the same frames in thousands of samples, and
/// working a frame out costs far more than looking it up.
///
/// Shared by copies of a `Classifier`; safe to use from any thread (one lock per sample).
final class FrameCache: Sendable {
    private struct Key: Hashable {
        var address: UInt64
        var symbol: String?
        var module: String?

        /// Hashes the address and lengths only: hashing whole symbols cost more than the rest of
        /// a lookup. Equality still compares the strings, so a reused address with another
        /// symbol (another process, another trace) is a different key.
        func hash(into hasher: inout Hasher) {
            hasher.combine(address)
            hasher.combine(symbol?.utf8.count ?? -1)
            hasher.combine(module?.utf8.count ?? -1)
        }
    }

    /// The same frame by what its analysis depends on (`FrameMatcher.analyze`), hashed in full:
    /// found when the address is new but the function is not, as in every trace of a fleet
    /// (each at its own load address), where each trace's frames would otherwise be analyzed
    /// again.
    private struct Name: Hashable {
        var symbol: String?
        var module: String?
    }

    private struct Entries {
        var byAddress: [Key: FrameMatcher.AnalyzedFrame] = [:]
        var byName: [Name: FrameMatcher.AnalyzedFrame] = [:]
    }

    /// Past this many entries the cache starts over, so a long-running process stays bounded.
    static let capacity = 65_536

    private let entries = Locked(Entries())

    /// `frames` analyzed with `matcher`, from the cache where possible.
    func analyze(_ frames: [Frame], with matcher: FrameMatcher) -> [FrameMatcher.AnalyzedFrame] {
        entries.withLock { entries in
            if entries.byAddress.count + frames.count > FrameCache.capacity {
                entries.byAddress.removeAll(keepingCapacity: true)
            }
            if entries.byName.count + frames.count > FrameCache.capacity {
                entries.byName.removeAll(keepingCapacity: true)
            }
            return frames.map { frame in
                let key = Key(address: frame.address, symbol: frame.symbol, module: frame.module)
                if let known = entries.byAddress[key] { return known }
                let name = Name(symbol: frame.symbol, module: frame.module)
                let analyzed = entries.byName[name] ?? matcher.analyze(frame)
                entries.byName[name] = analyzed
                entries.byAddress[key] = analyzed
                return analyzed
            }
        }
    }
}
