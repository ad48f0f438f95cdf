import StallwatchCore

/// What the stacks of one trace come to, worked out once per distinct stack: the group a
/// representative stack is chosen by (`RepresentativeStack.groupKey`) and the app frames a
/// signature names.
///
/// A stack is found by its frames' storage first: the decoder gives the samples of a trace
/// that have the same addresses one shared `[Frame]`, so most lookups hash one pointer, not
/// a list of frames. The memo keeps each stack it has seen, so that storage stays alive and
/// its address names the same stack for the memo's whole life. Stacks that do not share
/// storage (built one by one, as tests do) are found by their addresses the first time.
/// One thread at a time.
final class StackMemo {
    private struct Entry {
        let frames: [Frame]
        /// The stack's number in the worker's `PortableMemo`.
        let portable: Int
        var appFrames: [String]?
    }

    private let portable: PortableMemo
    private var entries: [Entry] = []
    private var byStorage: [UnsafeRawPointer: Int] = [:]
    private var byAddresses: [[UInt64]: Int] = [:]
    /// Every storage remembered by address, kept alive so that no other array can get it.
    private var held: [[Frame]] = []
    /// Per group, its index among the groups of the stall being weighed (-1: none yet).
    private var slots: [Int] = []

    /// A memo whose stacks are grouped and named as `portable` knows them.
    init(portable: PortableMemo) {
        self.portable = portable
    }

    /// The number of the stack `frames` (not empty).
    func stack(_ frames: [Frame]) -> Int {
        let storage = frames.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        if let storage, let known = byStorage[storage] { return known }
        let addresses = frames.map(\.address)
        let number: Int
        if let known = byAddresses[addresses] {
            number = known
        } else {
            number = adding(frames)
            byAddresses[addresses] = number
        }
        if let storage {
            byStorage[storage] = number
            held.append(frames)
        }
        return number
    }

    /// Numbers `frames` (not empty) as a new stack, without looking for it: for a caller whose
    /// stacks are distinct already (the decoder's).
    func adding(_ frames: [Frame]) -> Int {
        entries.append(Entry(frames: frames, portable: portable.stack(frames)))
        return entries.count - 1
    }

    /// The frames of stack `number`.
    func frames(ofStack number: Int) -> [Frame] { entries[number].frames }

    /// The number of stack `number` in the worker's `PortableMemo`.
    func portableNumber(ofStack number: Int) -> Int { entries[number].portable }

    /// The group (by function names) of stack `number`.
    func group(ofStack number: Int) -> Int { portable.group(ofStack: entries[number].portable) }

    /// The app frames of stack `number`, made by `make` the first time (for its portable stack
    /// when that has symbols throughout, else for this stack).
    func appFrames(ofStack number: Int, _ make: ([Frame]) -> [String]) -> [String] {
        if let known = entries[number].appFrames { return known }
        let made =
            portable.appFrames(ofStack: entries[number].portable, entries[number].frames, make)
            ?? make(entries[number].frames)
        entries[number].appFrames = made
        return made
    }

    /// Runs `body` with a map from group number to a slot among one stall's groups: every
    /// group's slot is -1 at the start (`slots` may be shorter than the group count: a group
    /// past its end has none), and `body` sets every slot it used back to -1.
    func withSlots<Result>(_ body: (inout [Int]) -> Result) -> Result {
        body(&slots)
    }
}
