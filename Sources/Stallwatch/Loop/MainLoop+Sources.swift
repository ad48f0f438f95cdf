import CStallwatchShims
import Glibc
import StallwatchCore

extension MainLoop {
    /// What a file-descriptor source waits for.
    public enum SourceKind: Sendable {
        case readable, writable
    }

    /// What happened on a source's descriptor, as its handler receives it.
    public struct SourceEvents: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Data (or end of file) can be read.
        public static let readable = SourceEvents(rawValue: 1)
        /// The descriptor accepts writes.
        public static let writable = SourceEvents(rawValue: 2)
        /// The peer closed its end.
        public static let hangup = SourceEvents(rawValue: 4)
        /// The descriptor is in error (e.g. writing to a pipe nobody reads).
        public static let error = SourceEvents(rawValue: 8)
    }

    /// A file-descriptor source. Level-triggered: the handler runs every iteration while the
    /// descriptor is ready. After a hang-up with nothing left to read, or an error, the
    /// handler runs a last time with `.hangup`/`.error` and the source cancels itself, so a
    /// dead descriptor never spins the loop. Loop thread only.
    public final class Source: ModeItem {
        /// The descriptor watched (the loop never closes it).
        public let fd: Int32
        /// What it waits for.
        public let kind: SourceKind
        /// False once cancelled.
        public private(set) var isValid = true

        /// Dropped on cancel, so nothing the handler captured outlives the source in a cycle.
        private(set) var handler: ((Source, SourceEvents) -> Void)?
        let site: CalloutSite
        weak var loop: MainLoop?
        var states: [ModeState] = []

        init(
            fd: Int32, kind: SourceKind, loop: MainLoop, site: CalloutSite,
            handler: @escaping (Source, SourceEvents) -> Void
        ) {
            self.fd = fd
            self.kind = kind
            self.loop = loop
            self.site = site
            self.handler = handler
        }

        /// Stops watching; the handler will not run again. Safe from any source's handler.
        public func cancel() {
            guard isValid else { return }
            isValid = false
            handler = nil
            for state in states {
                guard var entry = state.sources[fd] else { continue }
                if kind == .readable { entry.reader = nil } else { entry.writer = nil }
                let interest = entry.interest
                // The fd may already be closed (epoll forgot it then): nothing left to undo.
                if interest.isEmpty {
                    state.sources[fd] = nil
                    try? state.epoll.remove(fd)
                } else {
                    state.sources[fd] = entry
                    try? state.epoll.modify(fd, interest, tag: UInt64(fd))
                }
            }
            states = []
            loop?.forgetCommonItem(self)
        }

        func join(_ state: ModeState, loop: MainLoop) {
            try? register(in: state)
        }

        func register(in state: ModeState) throws {
            var entry = state.sources[fd] ?? FDEntry()
            let existing = kind == .readable ? entry.reader : entry.writer
            require(existing == nil, "fd \(fd) already has a \(kind) source in mode \(state.mode)")
            let isNew = entry.interest.isEmpty
            if kind == .readable { entry.reader = self } else { entry.writer = self }
            if isNew {
                try state.epoll.add(fd, entry.interest, tag: UInt64(fd))
            } else {
                try state.epoll.modify(fd, entry.interest, tag: UInt64(fd))
            }
            state.sources[fd] = entry
            states.append(state)
        }
    }

    /// Watches `fd` and calls `handler` on the loop thread whenever it is ready.
    /// Loop thread only; `handler` is isolated like the caller (main-actor code, on
    /// `MainLoop.main`: it may use main-actor state).
    /// - Throws: `SystemError` if the descriptor cannot be watched (e.g. EBADF: it is closed;
    ///   EPERM: regular files are always ready and cannot be polled).
    @discardableResult
    public func addSource(
        fd: Int32,
        _ kind: SourceKind,
        modes: [Mode] = [.default],
        label: StaticString? = nil,
        file: StaticString = #fileID,
        line: UInt = #line,
        handler: @escaping (Source, SourceEvents) -> Void
    ) throws -> Source {
        require(isCurrent, "MainLoop.addSource must be called on the loop's thread")
        let source = Source(
            fd: fd, kind: kind, loop: self,
            site: CalloutSite(
                kind: .source, label: label, file: file, line: UInt32(truncatingIfNeeded: line)),
            handler: handler)
        do {
            for state in states(for: modes, item: source) { try source.register(in: state) }
        } catch {
            source.cancel()
            throw error
        }
        return source
    }

    /// Runs the handlers for one ready descriptor in `state`. Returns whether a user callout ran.
    func dispatch(_ tag: UInt64, _ events: SourceEvents, in state: ModeState) -> Bool {
        if tag == ModeState.wakeTag {
            // Read first, then re-arm: re-arming first would let a producer's write be
            // swallowed by this read while `wakePending` stays set, and no later post would
            // ever write again (a lost wake-up).
            Epoll.drainEventFD(wakeFD)
            wakePending.store(false, ordering: .sequentiallyConsistent)
            return false
        }
        if tag == ModeState.mainQueueTag {
            // Read the eventfd first, or it stays readable and the loop spins.
            Epoll.drainEventFD(mainQueueFD)
            callout(Self.mainQueueSite, phase: .afterWaiting, mode: state.mode) {
                sw_dispatch_main_queue_drain()
            }
            return true
        }
        guard let entry = state.sources[Int32(truncatingIfNeeded: tag)] else { return false }
        // Reader, then writer; no array of the two, so a ready descriptor allocates nothing.
        let ranReader = entry.reader.map { deliver(events, to: $0, mode: state.mode) }
        let ranWriter = entry.writer.map { deliver(events, to: $0, mode: state.mode) }
        return ranReader == true || ranWriter == true
    }

    /// Calls one source's handler with its share of a descriptor's events. Returns whether it ran.
    private func deliver(_ ready: SourceEvents, to source: Source, mode: Mode) -> Bool {
        guard source.isValid, let handler = source.handler else { return false }
        // A reader hears readable, a writer writable; both hear hang-ups and errors.
        let events = ready.intersection([source.kind == .readable ? .readable : .writable, .hangup, .error])
        guard !events.isEmpty else { return false }
        callout(source.site, phase: .afterWaiting, mode: mode) { handler(source, events) }
        // Nothing more can come: a hang-up with no data left, or an error.
        if events.contains(.error) || events == .hangup { source.cancel() }
        return true
    }

    static let mainQueueSite = CalloutSite(
        kind: .mainQueue, label: "DispatchQueue.main", file: "libdispatch", line: 0)
}
