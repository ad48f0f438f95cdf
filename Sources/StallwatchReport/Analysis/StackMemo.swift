import StallwatchCore

/// What the stacks of one trace come to, worked out once per distinct stack: the group a
/// representative stack is chosen by (`RepresentativeStack.groupKey`) and the app frames a
/// signature names.
///
/// A stack is known by its number in the trace's sample table (`PendingSample.stack`): the
/// table holds each distinct stack once, so the memo numbers it the first time a row has it
/// (`TableReading.stack`). One memo per table; one thread at a time.
final class StackMemo {
    private struct Entry {
        let frames: [Frame]
        /// The stack's number in the worker's `PortableMemo`.
        let portable: Int
        var appFrames: [String]?
    }

    private let portable: PortableMemo
    private var entries: [Entry] = []
    /// Per group, its index among the groups of the stall being weighed (-1: none yet).
    private var slots: [Int] = []

    /// A memo whose stacks are grouped and named as `portable` knows them.
    init(portable: PortableMemo) {
        self.portable = portable
    }

    /// Numbers `frames` (not empty), a stack of the memo's table, the first time a row has it.
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
