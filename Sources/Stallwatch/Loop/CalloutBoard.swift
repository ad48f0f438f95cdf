import CStallwatchSampler
import CStallwatchShims
import Dispatch
import StallwatchCore
import Synchronization

/// What the loop thread publishes about the callout it is running, for a watchdog thread.
///
/// The loop writes with plain atomic stores (no lock, allocation or syscall) and only while
/// `enabled` is set, so a loop nobody watches pays one relaxed load and a branch per callout.
/// Readers use the sequence like a seqlock: odd while a callout runs; read the fields between
/// two equal odd loads of `sequence` to get a consistent identity.
final class CalloutBoard: @unchecked Sendable {  // `clock` is only touched atomically
    /// Set by a watchdog while it listens; the loop reads it once per callout.
    let enabled = Atomic<Bool>(false)
    /// The loop's running frame clocks, for a trace recorder's per-second summaries.
    let frameClocks = Locked<[FrameCounters]>([])
    /// Whether a monitor is attached (one at a time: the stall handshake has one slot).
    let monitorAttached = Atomic<Bool>(false)
    /// That monitor once it runs (for a recorder that records it without owning it).
    let monitor = Locked(WeakWatcher())
    /// The callout's sequence (odd while a callout runs, even between callouts; each callout
    /// adds 2) and `sw_cycles()` when it began (or resumed after a nested run; the watchdog
    /// converts it with `Timebase`). In C memory, because the loop thread's self-sampling
    /// handler reads them too; accessed only through the `sw_clock_*` atomics and the
    /// accessors below.
    let clock: UnsafeMutablePointer<sw_callout_clock> = {
        let clock = UnsafeMutablePointer<sw_callout_clock>.allocate(capacity: 1)
        clock.initialize(
            to: sw_callout_clock(sequence: 0, start_cycles: 0, descriptor: 0, label: 0, file: 0, stalled_sequence: 0))
        return clock
    }()
    // Also in `clock`: the callout's identity (a `CalloutDescriptor`'s raw value, its label and
    // file as packed `StaticString`s: pointer | length << 48, 0 when absent), and the sequence a
    // watchdog declared a stall. The loop stamps every callout's end (`sw_cycles()`); a callout
    // that was declared or overran goes to `overruns` with that end before the sequence moves on.
    /// Every callout that overran the budget by the loop's own stamps (or that a watchdog
    /// declared a stall), appended as it ends: the watchdog records those it did not time.
    let overruns = OverrunLog()
    /// The budget in `sw_cycles()` units, set by the watchdog (`UInt64.max`: unwatched): a
    /// callout longer than this is a stall; the loop also counts iterations whose callouts
    /// together overran it while none alone did (congestion).
    let budgetCycles = Atomic<UInt64>(UInt64.max)
    let congestedIterations = Atomic<UInt64>(0)
    /// Whether the loop is blocked in its idle wait (so a watchdog may sleep without a deadline).
    let waiting = Atomic<Bool>(false)
    /// Set by a watchdog that sleeps until the loop wakes up; the loop clears it and signals
    /// `watchdogWake` after its wait (one syscall per idle period, only while watched). The
    /// watchdog stores `parked` before re-checking `waiting`, the loop stores `waiting`
    /// before exchanging `parked`: with both sequentially consistent, no wake-up is lost.
    let parked = Atomic<Bool>(false)
    /// Also signalled when a stalled callout ends, so the watchdog closes the stall at once.
    let watchdogWake = DispatchSemaphore(value: 0)

    deinit { clock.deallocate() }

    /// The current sequence (acquiring). Any thread.
    @inline(__always) var sequence: UInt64 { sw_clock_sequence(clock) }

    /// Loop thread: publishes a new sequence (releasing: the fields stored before it are seen).
    @inline(__always) func publish(sequence: UInt64) { sw_clock_set_sequence(clock, sequence) }

    /// Loop thread: publishes the running callout's start and identity (relaxed;
    /// `publish(sequence:)` follows).
    @inline(__always) func publish(startCycles: UInt64, _ callout: PublishedCallout) {
        sw_clock_set_start_cycles_relaxed(clock, startCycles)
        sw_clock_set_descriptor_relaxed(clock, callout.descriptor.rawValue)
        sw_clock_set_label_relaxed(clock, callout.label)
        sw_clock_set_file_relaxed(clock, callout.file)
    }

    /// The identity of the callout running now, as published (relaxed). The loop thread.
    var publishedCallout: PublishedCallout {
        PublishedCallout(
            descriptor: CalloutDescriptor(rawValue: sw_clock_descriptor_relaxed(clock)),
            label: sw_clock_label_relaxed(clock), file: sw_clock_file_relaxed(clock))
    }

    /// The running callout's start stamp, as published (relaxed). The loop thread.
    var publishedStartCycles: UInt64 { sw_clock_start_cycles_relaxed(clock) }

    /// The sequence last declared a stall (acquiring). Any thread.
    @inline(__always) var stalledSequence: UInt64 { sw_clock_stalled_sequence(clock) }

    /// A watchdog declares callout `sequence` a stall.
    func declareStall(_ sequence: UInt64) { sw_clock_set_stalled_sequence(clock, sequence) }

    /// Loop thread, after its idle wait: wakes a parked watchdog.
    @inline(__always)
    func loopWoke() {
        waiting.store(false, ordering: .sequentiallyConsistent)
        if parked.load(ordering: .sequentiallyConsistent) && parked.exchange(false, ordering: .sequentiallyConsistent) {
            watchdogWake.signal()
        }
    }
}

/// A callout's identity as the loop keeps it on its own thread (no allocation: static strings).
/// Package access: the remedies name the callouts they schedule.
package struct CalloutSite {
    package var kind: CalloutKind
    package var label: StaticString?
    package var file: StaticString
    package var line: UInt32

    package init(kind: CalloutKind, label: StaticString?, file: StaticString, line: UInt32) {
        self.kind = kind
        self.label = label
        self.file = file
        self.line = line
    }

    /// A static string as one word: its address and (in the top 16 bits) its length. A string
    /// of 64 KiB or more is cut to its first 65,535 bytes, at a character boundary, as the trace
    /// cuts every string (`TraceFormat.maxStringBytes`).
    static func pack(_ string: StaticString?) -> UInt64 {
        guard let string, string.hasPointerRepresentation else { return 0 }
        var count = string.utf8CodeUnitCount
        if count > TraceFormat.maxStringBytes {
            count = TraceFormat.maxStringBytes
            // Back to the start of the character the cut falls in (continuation bytes: 10xxxxxx).
            while count > 0 && string.utf8Start[count] & 0xC0 == 0x80 { count -= 1 }
        }
        return UInt64(UInt(bitPattern: string.utf8Start)) | UInt64(count) << 48
    }

    /// Reads back a packed static string; safe because static strings live for the process.
    static func unpack(_ packed: UInt64) -> String? {
        guard packed != 0, let base = UnsafePointer<UInt8>(bitPattern: UInt(packed & 0xFFFF_FFFF_FFFF))
        else {
            return nil
        }
        return String(
            decoding: UnsafeBufferPointer(start: base, count: Int(packed >> 48)), as: UTF8.self)
    }
}

/// One consistent read of the board, taken by a watchdog thread.
struct CalloutSnapshot: Sendable {
    var sequence: UInt64
    var startCycles: UInt64
    var kind: CalloutKind
    var phase: LoopActivity
    var mode: MainLoop.Mode
    var line: UInt32
    var label: UInt64
    var file: UInt64

    /// Whether a callout was running when the snapshot was taken.
    var isBusy: Bool { sequence & 1 == 1 }
}

extension CalloutBoard {
    /// A consistent snapshot, retrying while the loop moves between callouts. Any thread.
    func snapshot() -> CalloutSnapshot {
        while true {
            let before = sequence
            let start = sw_clock_start_cycles_relaxed(clock)
            let packed = CalloutDescriptor(rawValue: sw_clock_descriptor_relaxed(clock))
            let labelWord = sw_clock_label_relaxed(clock)
            let fileWord = sw_clock_file_relaxed(clock)
            atomicMemoryFence(ordering: .acquiring)
            if sw_clock_sequence_relaxed(clock) == before {
                return CalloutSnapshot(
                    sequence: before,
                    startCycles: start,
                    kind: packed.kind,
                    phase: packed.phase,
                    mode: packed.mode,
                    line: packed.line,
                    label: labelWord,
                    file: fileWord
                )
            }
        }
    }
}

/// A weak reference to what watches a loop. The loop only keeps it for its watcher to find
/// again (`StallMonitor.watching`); it never calls it.
struct WeakWatcher {
    weak var value: AnyObject?
}
