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
        let group: Int
        var appFrames: [String]?
    }

    private var entries: [Entry] = []
    private var byStorage: [UnsafeRawPointer: Int] = [:]
    private var byAddresses: [[UInt64]: Int] = [:]
    private var groupByKey: [[String]: Int] = [:]
    /// Every storage remembered by address, kept alive so that no other array can get it.
    private var held: [[Frame]] = []
    /// Per group, its index among the groups of the stall being weighed (-1: none yet).
    private var slots: [Int] = []

    /// The number of the stack `frames` (not empty).
    func stack(_ frames: [Frame]) -> Int {
        let storage = frames.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        if let storage, let known = byStorage[storage] { return known }
        let addresses = frames.map(\.address)
        let number: Int
        if let known = byAddresses[addresses] {
            number = known
        } else {
            let key = RepresentativeStack.groupKey(frames)
            let group: Int
            if let known = groupByKey[key] {
                group = known
            } else {
                group = groupByKey.count
                groupByKey[key] = group
            }
            number = entries.count
            entries.append(Entry(frames: frames, group: group))
            byAddresses[addresses] = number
        }
        if let storage {
            byStorage[storage] = number
            held.append(frames)
        }
        return number
    }

    /// The frames of stack `number`.
    func frames(ofStack number: Int) -> [Frame] { entries[number].frames }

    /// The group (by function names) of stack `number`.
    func group(ofStack number: Int) -> Int { entries[number].group }

    /// The app frames of stack `number`, made by `make` the first time.
    func appFrames(ofStack number: Int, _ make: ([Frame]) -> [String]) -> [String] {
        if let known = entries[number].appFrames { return known }
        let made = make(entries[number].frames)
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
