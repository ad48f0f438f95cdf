import StallwatchCore
import Synchronization

extension MainLoop {
    /// A run-loop mode: timers, sources and observers belong to modes, and running the loop in a
    /// mode services only that mode's items. `common` is not a mode one runs in but a set
    /// (`default` and `tracking`, plus any added with `MainLoop.addCommonMode`); items
    /// registered for `common` belong to every mode in the set. Any thread may create modes.
    public struct Mode: Hashable, Sendable, CustomStringConvertible {
        /// Interned id: the loop indexes its per-mode state with it and publishes it to the
        /// watchdog in one word.
        let id: UInt16

        /// The mode in which the loop normally runs.
        public static let `default` = Mode(id: 0)
        /// The mode a UI runs in while tracking a gesture or a drag.
        public static let tracking = Mode(id: 1)
        /// The set of common modes; register items here to have them run in all of them.
        public static let common = Mode(id: 2)

        init(id: UInt16) { self.id = id }

        /// A custom mode named `name`; the same name always gives the same mode.
        public init(_ name: String) { self.id = ModeNames.intern(name) }

        /// The mode's name.
        public var name: String { ModeNames.name(of: id) }
        public var description: String { name }
    }
}

/// The process-wide table of mode names (modes are compared by id, named for people).
enum ModeNames {
    private static let table = Locked<[String]>(["default", "tracking", "common"])

    static func intern(_ name: String) -> UInt16 {
        table.withLock { names in
            if let index = names.firstIndex(of: name) { return UInt16(index) }
            require(names.count < Int(UInt16.max), "too many run-loop modes")
            names.append(name)
            return UInt16(names.count - 1)
        }
    }

    static func name(of id: UInt16) -> String {
        table.withLock { Int(id) < $0.count ? $0[Int(id)] : "mode#\(id)" }
    }
}
