import CStallwatchSampler
import CStallwatchShims
import Glibc

/// The addresses the loop thread page-faults on (a perf page-fault event, `CStallwatchFaults.h`)
/// and the mappings that hold them. The event is attached to the thread only while a stall is
/// in progress (an attached event costs the thread at every context switch, even disabled);
/// each fault then costs the faulting thread one ring record. Watchdog thread only.
final class FaultAddresses {
    /// One recorded fault.
    struct Fault {
        var address: UInt64
        var time: UInt64
    }

    /// A mapping of the process: its range and what /proc/self/maps names it ("" when anonymous).
    struct Mapping {
        var range: Range<UInt64>
        var name: String
        /// A file, not anonymous memory, the heap or the stack.
        var isFile: Bool { name.hasPrefix("/") }
    }

    private let tid: Int32
    /// The event, while a stall is in progress.
    private var handle: OpaquePointer?
    /// When the event was last enabled: older records are another stall's.
    private var enabledAt: UInt64 = 0
    /// Mappings looked up in this stall (one ioctl each the first time).
    private var mappings: [Mapping] = []
    private var addresses = [UInt64](repeating: 0, count: 64)
    private var times = [Int64](repeating: 0, count: 64)

    /// Faults on `tid` can be recorded (the event opens: not at perf_event_paranoid 3, or
    /// without perf), or nil with the reason's errno in `error`. The probe's event is closed
    /// again at once.
    static func open(tid: Int32) -> (FaultAddresses?, error: Int32) {
        var handle: OpaquePointer?
        let code = sw_faults_open(tid, &handle)
        guard code == 0, let handle else { return (nil, -code) }
        sw_faults_close(handle)
        return (FaultAddresses(tid: tid), 0)
    }

    private init(tid: Int32) { self.tid = tid }

    deinit { disable() }

    /// A stall began: attach the event and record its faults.
    func enable() {
        enabledAt = sw_monotonic_ns()
        mappings.removeAll(keepingCapacity: true)
        disable()
        var opened: OpaquePointer?
        guard sw_faults_open(tid, &opened) == 0, let opened else { return }
        _ = sw_faults_enable(opened)
        handle = opened
    }

    /// The stall ended: the event detaches.
    func disable() {
        if let handle { sw_faults_close(handle) }
        handle = nil
    }

    /// The faults since the stall began, newest first (at most 64).
    func newest() -> [Fault] {
        guard let handle else { return [] }
        let count = Int(
            sw_faults_newest(handle, Int64(clamping: enabledAt), &addresses, &times, Int32(addresses.count)))
        return (0..<count).map { Fault(address: addresses[$0], time: UInt64(max(0, times[$0]))) }
    }

    /// The mapping that holds `address`, if any.
    func mapping(of address: UInt64) -> Mapping? {
        if let known = mappings.first(where: { $0.range.contains(address) }) { return known }
        guard let found = Self.lookUp(address) else { return nil }
        mappings.append(found)
        return found
    }

    /// The mapping that holds `address`, asked of the kernel now (PROCMAP_QUERY, else the maps text).
    static func lookUp(_ address: UInt64) -> Mapping? {
        var start: UInt64 = 0
        var end: UInt64 = 0
        var offset: UInt64 = 0
        var name = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard sw_vma_name(address, &start, &end, &offset, &name, UInt32(name.count)) == 0, start < end else {
            return nil
        }
        let text = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return Mapping(range: start..<end, name: text)
    }
}
