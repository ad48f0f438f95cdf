/// The names of Stallwatch's own code that this module recognises in stacks: string contracts
/// between the `Stallwatch` module, whose functions bear the names, and the classifier and
/// `Frame`, which match them. Each is written once, here; `StallwatchSymbolsTests`
/// (Tests/StallwatchTests) captures real stacks and fails if a name drifts.
package enum StallwatchSymbols {
    /// The run loop's idle wait (`blockingWaitForWork` in `Sources/Stallwatch/Loop/Epoll.swift`).
    /// A frame whose symbol contains it means the loop is idle: the built-in rule `idle-wait`.
    package static let idleWait = "blockingWaitForWork"

    /// The idle wait's frame exactly as the symbolicator names it (demangled and simplified), for
    /// test fixtures that imitate an idle loop's stack.
    package static let idleWaitFrame =
        "Stallwatch.blockingWaitForWork(_: Swift.Int32, _: Swift.UnsafeMutablePointer<__C.epoll_event>, _: Swift.Int32, timeoutNanos: Swift.Int64) -> Swift.Int"

    /// The module apps import: the loop, the monitor and the recorder.
    package static let runtimeModule = "Stallwatch"

    /// This module, compiled into apps with the runtime.
    package static let coreModule = "StallwatchCore"

    /// How the demangler names the closure a loop function wraps a callout's work in (the
    /// `() -> Void` body of `MainLoop.callout`), e.g. around a source's handler.
    package static let calloutClosurePrefix = "closure #1 () -> () in "

    /// Symbols starting with one of these are Stallwatch's own frames, not the app's
    /// (`Frame.isSystem`).
    package static let infrastructurePrefixes = [
        "\(runtimeModule).", "\(coreModule).", "static \(runtimeModule).",
        "\(calloutClosurePrefix)\(runtimeModule).",
    ]
}
