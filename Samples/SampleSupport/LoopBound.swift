// A loop-thread-only value carried through the `@Sendable` closures of `post` and `offload`,
// whose bodies run back on the loop thread: the check moves from the compiler to run time.
import Stallwatch

/// Wraps a value that only `loop`'s thread may touch, so a `@Sendable` closure that runs on
/// that thread (a post, an offload completion) can carry it. Create it anywhere; read `value`
/// on the loop thread only (checked).
public struct LoopBound<Value>: @unchecked Sendable {
    private let wrapped: Value
    private let loop: MainLoop

    /// Wraps `value`, which belongs to `loop`'s thread.
    public init(_ value: Value, loop: MainLoop = .main) {
        self.wrapped = value
        self.loop = loop
    }

    /// The value; loop thread only.
    public var value: Value {
        precondition(loop.isCurrent, "LoopBound.value read off its loop's thread")
        return wrapped
    }
}
