// Main-actor callouts. `MainLoop.main` runs only on the process's main thread (`run` checks it,
// and its first run checks that the runtime agrees this is the main actor), and the main actor's
// jobs run there only inside its own callouts (the main queue is drained as one), one callout at
// a time. So every callout of the main loop is main-actor code.
//
// Loop-thread registrations (timers, sources, observers, frame clocks, the remedies' callbacks)
// take non-`Sendable` closures: such a closure is isolated like the code that creates it, and it
// only ever runs on the thread that registered it. Main-actor code can register only on the main
// loop (the main actor's thread is the main thread), so its closures use main-actor state, checked
// by the compiler. What crosses threads (`post`, results of work done elsewhere) needs a closure
// typed `@MainActor`: that is what this file adds.

import StallwatchCore

extension MainLoop {
    /// The main loop for main-actor code: `post` here takes a `@MainActor` closure, so it may use
    /// main-actor state (a `@MainActor` closure is `Sendable`: any thread may post it). Only
    /// `MainLoop.main` has it (checked). Any thread.
    public var mainActor: MainActorCallouts {
        require(isMain, "only MainLoop.main runs main-actor callouts")
        return MainActorCallouts(loop: self)
    }

    /// `MainLoop.main`'s callouts typed `@MainActor` (from `MainLoop.main.mainActor`). A plain
    /// value; any thread.
    public struct MainActorCallouts: Sendable {
        /// The main loop.
        public let loop: MainLoop

        /// Queues `body` to run once on the main thread inside the loop, as `MainLoop.post`
        /// does (a common mode, FIFO per posting thread, identified by `label`, `file` and
        /// `line`). Any thread.
        public func post(
            label: StaticString? = nil,
            file: StaticString = #fileID,
            line: UInt = #line,
            _ body: @escaping @MainActor () -> Void
        ) {
            loop.post(label: label, file: file, line: line, Self.callout(body))
        }

        /// `body` as the loop stores a callout. The loop calls it directly: this is the cast
        /// `MainActor.assumeIsolated` makes after its check, and the check holds for every
        /// callout of the main loop (see the top of this file). Making it per callout would
        /// cost the loop a runtime executor check (about a microsecond here) on every one.
        @inline(__always)
        package static func callout(_ body: @escaping @MainActor () -> Void) -> @Sendable () -> Void {
            unsafeBitCast(body, to: (@Sendable () -> Void).self)
        }

        /// A one-argument `body` (a result) as the loop calls it; see `callout(_:)`.
        @inline(__always)
        package static func callout<Argument>(
            _ body: @escaping @MainActor (Argument) -> Void
        ) -> @Sendable (Argument) -> Void {
            unsafeBitCast(body, to: (@Sendable (Argument) -> Void).self)
        }
    }

    /// The main loop's first run: the runtime must agree that its thread is the main actor's.
    func checkMainActor() {
        MainActor.preconditionIsolated("MainLoop.main runs on the main actor's thread")
    }
}
