// Small tools the samples' workloads share: a monotonic stopwatch to bound work by time (a
// fast device must still stall), a real hash over bytes, and temporary directories.
import Foundation
import Stallwatch
import StallwatchCore

/// Elapsed time on the monotonic clock. A plain value; use it on any thread.
public struct Stopwatch: Sendable {
    private let start = MainLoop.monotonicNanos()

    /// A stopwatch started now.
    public init() {}

    /// Nanoseconds since the start.
    public var elapsedNanos: UInt64 { MainLoop.monotonicNanos() &- start }

    /// Milliseconds since the start.
    public var elapsedMilliseconds: Double { Double(elapsedNanos) / 1e6 }

    /// Whether `duration` has passed since the start.
    public func hasElapsed(_ duration: Duration) -> Bool { elapsedNanos >= duration.nanoseconds }
}

/// FNV-1a over `bytes`, continuing from `seed` (the package's `FNV1a`): cheap per byte, but
/// every byte is read. Never inlined, so the samples' stacks show it as a frame of its own.
@inline(never)
public func fnv1a(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
    FNV1a.hash(bytes, seed: seed)
}

/// FNV-1a over an array of bytes.
public func fnv1a(_ bytes: [UInt8], seed: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
    bytes.withUnsafeBytes { fnv1a($0, seed: seed) }
}

/// A new empty directory under the temporary directory; `run` removes it after its summary.
/// Main actor, as `run` is.
@MainActor public func makeTemporaryDirectory(_ prefix: String, removedAfter run: SampleRun) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(getpid())-\(UUID())").path
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    run.addCleanup { try? FileManager.default.removeItem(atPath: path) }
    return path
}
