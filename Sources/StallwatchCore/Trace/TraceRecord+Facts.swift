extension TraceRecord {
    /// The kernel counters of one sample. Written right after the `sample` record it belongs
    /// to, which `stall` and `sample` name (readers that predate it skip it).
    public struct SampleCounters: Sendable, Hashable {
        /// The `StallBegan.id` of the sample's stall.
        public var stall: UInt64
        /// The sample's `Sample.index`.
        public var sample: UInt64
        /// The reading.
        public var counters: KernelCounters
        /// The growth since the previous reading of the stall, if there was one.
        public var delta: KernelCounters?

        /// Creates a counters record.
        public init(stall: UInt64, sample: UInt64, counters: KernelCounters, delta: KernelCounters? = nil) {
            self.stall = stall
            self.sample = sample
            self.counters = counters
            self.delta = delta
        }
    }

    /// What one sample's thread waited on (see `WaitFact`). Written right after the `sample`
    /// record (and its `sampleCounters`), which `stall` and `sample` name. The owner's
    /// frames are raw addresses, symbolicated by `symbol` records like a sample's.
    public struct SampleWait: Sendable, Hashable {
        /// The `StallBegan.id` of the sample's stall.
        public var stall: UInt64
        /// The sample's `Sample.index`.
        public var sample: UInt64
        /// The kind of wait.
        public var kind: WaitFact.Kind
        /// The syscall name the fact comes from, if any.
        public var operation: String?
        /// The descriptor, if any.
        public var fd: Int32?
        /// The path, peer, mapped file or database file.
        public var target: String?
        /// The futex address, if any.
        public var address: UInt64?
        /// The lock owner's thread id, if known.
        public var ownerTID: Int32?
        /// The lock owner's name, if known.
        public var ownerName: String?
        /// The lock owner's return addresses, innermost first.
        public var ownerFrames: [UInt64]
        /// The SQL text.
        public var statement: String?

        /// Creates a wait record.
        public init(
            stall: UInt64, sample: UInt64, kind: WaitFact.Kind, operation: String? = nil, fd: Int32? = nil,
            target: String? = nil, address: UInt64? = nil, ownerTID: Int32? = nil, ownerName: String? = nil,
            ownerFrames: [UInt64] = [], statement: String? = nil
        ) {
            self.stall = stall
            self.sample = sample
            self.kind = kind
            self.operation = operation
            self.fd = fd
            self.target = target
            self.address = address
            self.ownerTID = ownerTID
            self.ownerName = ownerName
            self.ownerFrames = ownerFrames
            self.statement = statement
        }

        /// The record for `fact` of sample `sample` of stall `stall`.
        public init(stall: UInt64, sample: UInt64, fact: WaitFact) {
            self.init(
                stall: stall, sample: sample, kind: fact.kind, operation: fact.operation, fd: fact.fd,
                target: fact.target, address: fact.address, ownerTID: fact.owner?.tid,
                ownerName: fact.owner?.name, ownerFrames: fact.owner?.frames.map(\.address) ?? [],
                statement: fact.statement)
        }

        /// The fact, with the owner's frames made by `frame` from their addresses.
        public func fact(frame: (UInt64) -> Frame) -> WaitFact {
            WaitFact(
                kind: kind, operation: operation, fd: fd, target: target, address: address,
                owner: ownerTID.map { WaitFact.Owner(tid: $0, name: ownerName, frames: ownerFrames.map(frame)) },
                statement: statement)
        }
    }
}

/// A record about one sample of a stall: `sampleProvenance`, `sampleCounters`, `sampleWait` and
/// `sampleAsyncChain`.
package protocol AboutASample {
    /// The stall's id.
    var stall: UInt64 { get }
    /// The sample's index among its stall's samples (its time, in a version 1 trace).
    var sample: UInt64 { get set }
}

extension TraceRecord.SampleProvenance: AboutASample {}
extension TraceRecord.SampleCounters: AboutASample {}
extension TraceRecord.SampleWait: AboutASample {}
extension TraceRecord.SampleAsyncChain: AboutASample {}
