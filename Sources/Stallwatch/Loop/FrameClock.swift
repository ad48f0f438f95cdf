import CStallwatchShims
import StallwatchCore
import Synchronization

/// One frame of a `FrameClock`.
public struct FrameTick: Sendable, Equatable {
    /// The frame's index on the clock's grid (0 for the first frame after `start`).
    public var frameIndex: UInt64
    /// When the frame was due (CLOCK_MONOTONIC ns); the tick runs at or just after it.
    public var targetNanos: UInt64
    /// Frames the loop was too busy to deliver since the previous tick.
    public var droppedSinceLastTick: UInt64
}

/// Display-link-style ticks on a `MainLoop`: one callout per frame at a fixed rate (60 Hz by
/// default) on a fixed grid. Frames the loop was too busy to deliver are not delivered late;
/// they are dropped and counted. Built on a repeating loop timer. Loop thread only; `onFrame`
/// is isolated like the code that creates the clock (main-actor code on `MainLoop.main`: it may
/// use main-actor state).
public final class FrameClock {
    /// Frames per second.
    public let framesPerSecond: Int
    /// The loop it ticks on.
    public let loop: MainLoop
    /// The modes its ticks fire in (what a `Throttle` on this clock uses too).
    package let modes: [MainLoop.Mode]
    private let onFrame: (FrameTick) -> Void
    private var timer: MainLoop.Timer?
    private var droppedBefore: UInt64 = 0
    private var deliveredBefore: UInt64 = 0
    /// The counters as other threads (a trace recorder) may read them.
    let counters = FrameCounters()

    /// A clock for `loop` at `framesPerSecond` whose ticks call `onFrame` in `modes` (all
    /// common modes by default, so frames keep coming while tracking). Call `start()`.
    public init(
        loop: MainLoop, framesPerSecond: Int = 60, modes: [MainLoop.Mode] = [.common],
        onFrame: @escaping (FrameTick) -> Void
    ) {
        require(
            framesPerSecond > 0 && framesPerSecond <= 1000, "framesPerSecond must be in 1...1000")
        self.loop = loop
        self.framesPerSecond = framesPerSecond
        self.modes = modes
        self.onFrame = onFrame
    }

    /// Starts ticking; the first frame is due one frame interval from now.
    public func start() {
        guard timer == nil else { return }
        loop.board.frameClocks.withLock { $0.append(counters) }
        let interval = 1_000_000_000 / UInt64(framesPerSecond)
        var lastSkipped: UInt64 = 0
        timer = loop.schedule(
            at: sw_monotonic_ns() + interval, intervalNanos: interval, toleranceNanos: 0, modes: modes,
            site: CalloutSite(kind: .timer, label: "FrameClock", file: #fileID, line: UInt32(#line))
        ) { [onFrame, unowned self] timer in
            // When the loop was late, the tick stands for the latest grid point due; the ones
            // before it (since the previous tick) are dropped. The timer has already moved on.
            let dropped = timer.skippedFires - lastSkipped
            lastSkipped = timer.skippedFires
            self.counters.delivered.add(1, ordering: .relaxed)
            self.counters.dropped.add(dropped, ordering: .relaxed)
            onFrame(
                FrameTick(
                    frameIndex: timer.fireIndex - 1, targetNanos: timer.deadline - interval,
                    droppedSinceLastTick: dropped))
        }
    }

    /// Stops ticking (counters keep their values). Safe from inside a tick.
    public func stop() {
        guard let timer else { return }
        droppedBefore += timer.skippedFires
        deliveredBefore += timer.fireCount
        timer.cancel()
        self.timer = nil
        loop.board.frameClocks.withLock { $0.removeAll { $0 === counters } }
    }

    /// Frames delivered so far.
    public var framesDelivered: UInt64 { deliveredBefore + (timer?.fireCount ?? 0) }
    /// Frames dropped so far because the loop was busy.
    public var framesDropped: UInt64 { droppedBefore + (timer?.skippedFires ?? 0) }
    /// When the next tick is due (CLOCK_MONOTONIC ns), or nil while stopped.
    package var nextTickNanos: UInt64? { timer?.deadline }

    /// The interval between ticks, in nanoseconds.
    package var intervalNanos: UInt64 { 1_000_000_000 / UInt64(framesPerSecond) }

    /// Frames that were due: delivered plus dropped.
    public var framesExpected: UInt64 { framesDelivered + framesDropped }
}

/// A frame clock's delivered and dropped frames, readable from any thread.
final class FrameCounters: Sendable {
    let delivered = Atomic<UInt64>(0)
    let dropped = Atomic<UInt64>(0)
}
