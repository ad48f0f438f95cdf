import Dispatch
import Stallwatch
import StallwatchCore

/// Work started by `MainLoop.offload`: cancel it before it starts and it never runs.
/// Any thread.
public final class OffloadTask: Sendable {
    private let gate = StartGate()
    private let onCancel: @Sendable () -> Void

    init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    /// Cancels the work if it has not started yet; it then never runs and its completion
    /// receives `CancellationError`. Returns whether it was cancelled (false: it had already
    /// started or been cancelled, and its completion gets what it returns). Any thread.
    @discardableResult
    public func cancel() -> Bool {
        guard gate.cancel() else { return false }
        onCancel()
        return true
    }

    /// Whether `cancel()` stopped the work before it started. Any thread.
    public var isCancelled: Bool { gate.isCancelled }

    /// The background queue claims the work; false if it was cancelled first.
    func claim() -> Bool { gate.start() }
}

extension MainLoop {
    /// Runs `work` on a global queue of `qos`, off the loop, and delivers its result (or the
    /// error it threw) to `completion` on the loop thread, as a posted callout labelled
    /// `label` (default "offload result") at the caller's `#fileID:#line`, so a slow
    /// completion is reported at the place that started the work. Any thread.
    ///
    /// The first remedy for a main-thread stall: the main thread only starts heavy work and
    /// applies its result. Cancelling the returned task before the work starts means it never
    /// runs and `completion` receives `CancellationError`, at once. On `MainLoop.main`,
    /// main-actor code offloads through `mainActor.offload`, whose completion is `@MainActor`.
    @discardableResult
    public func offload<T: Sendable>(
        qos: DispatchQoS.QoSClass = .userInitiated,
        label: StaticString? = nil,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ work: @escaping @Sendable () throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) -> OffloadTask {
        offload(on: .global(qos: qos), label: label, file: file, line: line, work, completion: completion)
    }

    /// The callback form on a given queue (tests use a suspended one to cancel before the start).
    func offload<T: Sendable>(
        on queue: DispatchQueue, label: StaticString?, file: StaticString, line: UInt,
        _ work: @escaping @Sendable () throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) -> OffloadTask {
        let deliver: @Sendable (Result<T, any Error>) -> Void = { [self] result in
            post(label: label ?? "offload result", file: file, line: line) { completion(result) }
        }
        return startOffload(on: queue, work, deliver: deliver)
    }

    /// Runs `work` on a global queue of `qos` and returns its result to the awaiting task (on
    /// the task's own executor, without a hop through the loop). Cancelling the awaiting task
    /// before the work starts means it never runs and this throws `CancellationError`. Any
    /// thread or task.
    public func offload<T: Sendable>(
        qos: DispatchQoS.QoSClass = .userInitiated,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await offload(on: .global(qos: qos), work)
    }

    /// The async form on a given queue (tests use a suspended one to cancel before the start).
    func offload<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        let continuation = Locked<CheckedContinuation<T, any Error>?>(nil)
        let resume: @Sendable (Result<T, any Error>) -> Void = { result in
            continuation.withLock { pending in
                pending?.resume(with: result)
                pending = nil
            }
        }
        let task = Locked<OffloadTask?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (started: CheckedContinuation<T, any Error>) in
                continuation.withLock { $0 = started }
                let offload = startOffload(on: queue, work, deliver: resume)
                task.withLock { $0 = offload }
                // Cancelled before the task existed: the handler below found nothing to cancel.
                if Task.isCancelled { offload.cancel() }
            }
        } onCancel: {
            task.withLock { $0 }?.cancel()
        }
    }

    func startOffload<T: Sendable>(
        on queue: DispatchQueue, _ work: @escaping @Sendable () throws -> T,
        deliver: @escaping @Sendable (Result<T, any Error>) -> Void
    ) -> OffloadTask {
        let task = OffloadTask { deliver(.failure(CancellationError())) }
        queue.async {
            guard task.claim() else { return }
            deliver(Result { try work() })
        }
        return task
    }
}

extension MainLoop.MainActorCallouts {
    /// `MainLoop.offload` with a `@MainActor` completion: `work` runs on a global queue of
    /// `qos`, and its result comes back to `completion` on the main thread inside the loop, as a
    /// posted callout at the caller's `#fileID:#line`, so it may use main-actor state. Any thread.
    @discardableResult
    public func offload<T: Sendable>(
        qos: DispatchQoS.QoSClass = .userInitiated,
        label: StaticString? = nil,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ work: @escaping @Sendable () throws -> T,
        completion: @escaping @MainActor (Result<T, any Error>) -> Void
    ) -> OffloadTask {
        loop.offload(qos: qos, label: label, file: file, line: line, work, completion: Self.callout(completion))
    }
}
