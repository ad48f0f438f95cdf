import CStallwatchSampler
import StallwatchCore

/// The awaiting callers the C sampler read for one stack (CStallwatchAsyncChain.h): where the
/// stack's innermost async frame is, and the resume functions of its callers, innermost first.
/// Watchdog thread (and the delivery queue that symbolicates).
struct AsyncChain: Equatable {
    /// The return address right after the innermost async frame (into the runtime's job plumbing).
    var caller: UInt64
    /// Resume functions (exact entries), innermost caller first.
    var resume: [UInt64]
    var end: AsyncChainEnd

    init(caller: UInt64, resume: [UInt64], end: AsyncChainEnd) {
        self.caller = caller
        self.resume = resume
        self.end = end
    }

    /// The chain in `chain`, nil when its stack held no async frame, or nothing of the chain
    /// could be read.
    init?(_ chain: sw_async_chain) {
        guard chain.caller != 0, let end = AsyncChainEnd(rawValue: UInt8(clamping: chain.end)) else { return nil }
        var copy = chain
        let count = Int(max(0, min(chain.count, SW_ASYNC_MAX_CHAIN)))
        let resume = withUnsafeBytes(of: &copy.resume) { raw in
            raw.bindMemory(to: UInt.self).prefix(count).map { UInt64($0) }
        }
        // Nothing read (the innermost frame's record or context was unreadable): the stack stays
        // as it was, plumbing and all, rather than lose frames for no caller.
        if resume.isEmpty && end != .taskRoot { return nil }
        self.init(caller: chain.caller, resume: resume, end: end)
    }

    /// The frames of a stack of `addresses` (an interrupted PC, then return addresses) with this
    /// chain in place of the frames from its caller on (the executor's plumbing): the physical
    /// frames up to the innermost async frame, then the awaiting callers marked async. Nil when
    /// `caller` is not in the stack.
    func frames(of addresses: [UInt64]) -> [Frame]? {
        guard let after = addresses.indices.dropFirst().last(where: { addresses[$0] == caller }) else { return nil }
        return addresses[..<after].map { Frame(address: $0) } + resume.map { Frame(address: $0, isAsync: true) }
    }

    /// `addresses` as a sample's frames, with `chain` spliced in if there is one.
    static func frames(_ addresses: [UInt64], chain: AsyncChain?) -> (frames: [Frame], end: AsyncChainEnd?) {
        if let chain, let frames = chain.frames(of: addresses) { return (frames, chain.end) }
        return (addresses.map { Frame(address: $0) }, nil)
    }

    /// Checks a symbolicated sample's chain: the frame just before the first async frame must
    /// name an async function (a partial function, or a function whose type is `async`), else
    /// the runtime called something that is not a job's async code and the chain is dropped
    /// (with the plumbing it replaced, which is gone: the stack ends at that frame).
    static func validated(_ sample: inout Sample) {
        guard sample.asyncChainEnd != nil else { return }
        let first = sample.frames.firstIndex(where: \.isAsync) ?? sample.frames.endIndex
        guard first > 0, let symbol = sample.frames[first - 1].symbol else { return }
        if Frame.isAsyncFunction(symbol) { return }
        sample.frames.removeSubrange(first...)
        sample.asyncChainEnd = nil
    }
}
