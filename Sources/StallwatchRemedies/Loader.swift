import Dispatch
import Stallwatch
import StallwatchCore

/// Counters of what a `Loader` did since it was created: a snapshot value from
/// `Loader.statistics`, usable on any thread.
public struct LoaderStatistics: Sendable, Equatable {
    /// Calls of the `load` closure.
    public var loadsStarted = 0
    /// Requests that joined a load already in flight for their key instead of starting one.
    public var coalesced = 0
    /// Requests answered from the memory cache.
    public var memoryHits = 0
    /// Loads answered from the disk cache (the `load` closure was not called).
    public var diskHits = 0
    /// Loads whose every waiter cancelled: queued ones that never ran (counted at the cancel) and
    /// started ones that finished with nobody waiting (counted when they finished).
    public var cancelledLoads = 0
    /// The most `load` closures that ran at once.
    public var maxConcurrentLoads = 0
}

/// One caller's interest in a load, returned by `Loader.load`. Any thread.
public final class LoadRequest: Sendable {
    private struct State {
        var cancel: (@Sendable () -> Bool)?
        var isCancelled = false
    }

    private let state: Locked<State>

    init(cancel: (@Sendable () -> Bool)?) {
        state = Locked(State(cancel: cancel))
    }

    /// Withdraws this request: its completion is called with `CancellationError` (posted on the
    /// loop like any result) instead of the value. Cancelling the last request waiting for a load
    /// cancels the load: if it has not started it never runs; if it is running it finishes and
    /// its value is cached, but no completion is called. Returns whether the request was still
    /// waiting (false if its result was already on its way, or it was cancelled before).
    /// Any thread.
    @discardableResult
    public func cancel() -> Bool {
        state.withLock { state in
            guard let cancel = state.cancel else { return false }
            state.cancel = nil
            state.isCancelled = cancel()
            return state.isCancelled
        }
    }

    /// Whether `cancel()` withdrew this request. Any thread.
    public var isCancelled: Bool { state.withLock { $0.isCancelled } }
}

/// Loads values by key off the loop, with request coalescing, a concurrency limit, a memory LRU
/// over an optional disk cache, and cancellation. Any thread. Completions run on the `MainLoop`
/// given at init, as posted callouts attributed to the line that called `load`.
///
/// A request for a key is answered from memory, else from disk (read and decoded on a serial
/// background queue), else by the `load` closure. Requests for a key that is already being
/// fetched wait for that fetch. At most `concurrencyLimit` `load` closures run at once, each in
/// a place of its own with its own serial queue, so its own thread (a blocking load does not
/// hold back a shared pool); the rest wait first in, first out, and a load that ends hands its
/// place to the next at once, never to a queue behind a load still running. A value is stored
/// in memory, then on disk (if `disk` and `encode` are given), and only then delivered, so a
/// later request or Loader finds it. Errors are delivered, not cached.
public final class Loader<Value: Sendable>: @unchecked Sendable {
    /// The loop completions are posted to.
    let loop: MainLoop
    /// The most `load` closures that run at once. Any thread.
    public let concurrencyLimit: Int

    private let memory: LRUCache<String, Value>
    private let disk: DiskCache?
    private let encode: (@Sendable (Value) -> [UInt8])?
    private let decode: (@Sendable ([UInt8]) throws -> Value)?
    private let cost: (@Sendable (Value) -> Int)?
    private let body: @Sendable (String) throws -> Value
    /// One serial queue per place (`Start.place`). A load runs on the queue of the place it was
    /// granted under the lock, so it waits at most for the tail of the block that freed that
    /// place. Not a `QueuePool`: least-loaded placement cannot promise this, because a load frees
    /// its place from inside its own block, which the pool still counts on that queue, so the
    /// next load ties with a queue running a slow load and can land behind it.
    private let workers: [DispatchQueue]
    private let diskQueue: DispatchQueue
    /// Entered for every disk read and load that starts, left when it has finished (after any
    /// load it lets start has entered), so it is empty only when nothing is running or due.
    private let inFlight = DispatchGroup()
    private let state: Locked<LoaderState<Value>>

    /// A loader posting completions to `loop`. `concurrencyLimit` must be positive. The disk is
    /// read only if `decode` is given and written only if `encode` is given; a file that fails to
    /// decode counts as a miss. `cost` prices a value for `memory` (default 1). The closures run
    /// off the loop, on background queues of `qos`. Any thread.
    public init(
        loop: MainLoop, concurrencyLimit: Int = 4, memory: LRUCache<String, Value>,
        disk: DiskCache? = nil, encode: (@Sendable (Value) -> [UInt8])? = nil,
        decode: (@Sendable ([UInt8]) throws -> Value)? = nil,
        cost: (@Sendable (Value) -> Int)? = nil,
        qos: DispatchQoS.QoSClass = .userInitiated,
        load: @escaping @Sendable (String) throws -> Value
    ) {
        require(concurrencyLimit > 0, "Loader concurrencyLimit must be positive, got \(concurrencyLimit)")
        self.loop = loop
        self.concurrencyLimit = concurrencyLimit
        self.memory = memory
        self.disk = disk
        self.encode = encode
        self.decode = decode
        self.cost = cost
        self.body = load
        let serviceClass = DispatchQoS(qosClass: qos, relativePriority: 0)
        workers = (0..<concurrencyLimit).map { DispatchQueue(label: "stallwatch.loader.\($0)", qos: serviceClass) }
        diskQueue = DispatchQueue(label: "stallwatch.loader.disk", qos: serviceClass)
        state = Locked(LoaderState(limit: concurrencyLimit))
    }

    /// A loader on `MainLoop.main` for main-actor code: its `load` takes a `@MainActor`
    /// completion (checked: the loader's loop must be the main loop). Any thread.
    public var mainActor: MainActorLoads {
        require(loop === MainLoop.main, "only a loader on MainLoop.main completes on the main actor")
        return MainActorLoads(loader: self)
    }

    /// A main-loop loader's `load` with a `@MainActor` completion (from `Loader.mainActor`). A
    /// plain value; any thread.
    public struct MainActorLoads: Sendable {
        /// The loader.
        public let loader: Loader

        /// `Loader.load`, whose `completion` runs on the main thread inside the loop, so it may
        /// use main-actor state. Any thread.
        @discardableResult
        public func load(
            _ key: String, file: StaticString = #fileID, line: UInt = #line,
            completion: @escaping @MainActor (Result<Value, any Error>) -> Void
        ) -> LoadRequest {
            loader.load(key, file: file, line: line, completion: MainLoop.MainActorCallouts.callout(completion))
        }
    }

    /// Requests the value for `key`. `completion` is called exactly once, on the loop, as a posted
    /// callout at `file`/`line`: with the value, the load's error, or `CancellationError` if the
    /// request was cancelled. It is never called inline, even for a memory hit, so callers see
    /// one behaviour. Any thread. (`mainActor.load` takes a `@MainActor` completion.)
    @discardableResult
    public func load(
        _ key: String, file: StaticString = #fileID, line: UInt = #line,
        completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> LoadRequest {
        let readsDisk = disk != nil && decode != nil
        let (outcome, ready) = state.withLock { state -> (LoadOutcome<Value>, [Start<Value>]) in
            // Checked under the lock: a load that finishes stores its value before leaving
            // `flights`, so a request finds either the flight or the value, never a gap.
            if let value = memory.value(forKey: key) {
                state.statistics.memoryHits += 1
                return (.hit(value), [])
            }
            let waiter = Waiter(id: state.nextWaiter, completion: completion, file: file, line: line)
            state.nextWaiter += 1
            if let flight = state.flights[key] {
                flight.waiters.append(waiter)
                state.statistics.coalesced += 1
                return (.waiting(waiter.id), [])
            }
            let flight = Flight(key: key, waiter: waiter)
            state.flights[key] = flight
            if readsDisk {
                flight.phase = .readingDisk
                return (.readDisk(waiter.id, flight), [])
            }
            state.enqueue(flight)
            return (.waiting(waiter.id), state.startReady())
        }
        start(ready)
        switch outcome {
        case .hit(let value):
            loop.post(label: "Loader memory hit", file: file, line: line) { completion(.success(value)) }
            return LoadRequest(cancel: nil)
        case .waiting(let id):
            return request(id, key)
        case .readDisk(let id, let flight):
            inFlight.enter()
            diskQueue.async {
                self.readDisk(flight)
                self.inFlight.leave()
            }
            return request(id, key)
        }
    }

    /// The value for `key` if it is in memory (a hit makes it most recent); no I/O, no load, so it
    /// is safe on the loop. Not counted in `statistics`. Any thread.
    public func cachedValue(forKey key: String) -> Value? {
        memory.value(forKey: key)
    }

    /// Waits until no disk read or load runs or waits for a place (cancelled ones do not count),
    /// at most `timeout`; returns whether that happened. For a clean shutdown: values still
    /// loading reach the caches, and no worker is mid-read when the process exits. Their
    /// completions are posted as usual. Any thread but the loop's, if completions must run.
    @discardableResult
    public func waitUntilIdle(timeout: Duration) -> Bool {
        inFlight.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.nanoseconds))) == .success
    }

    /// A snapshot of the counters. Any thread.
    public var statistics: LoaderStatistics { state.withLock { $0.statistics } }

    private func request(_ id: UInt64, _ key: String) -> LoadRequest {
        LoadRequest { [weak self] in self?.cancelWaiter(id, key: key) ?? false }
    }

    private func cancelWaiter(_ id: UInt64, key: String) -> Bool {
        let removed = state.withLock { state -> Waiter<Value>? in
            guard let flight = state.flights[key], let index = flight.waiters.firstIndex(where: { $0.id == id })
            else { return nil }
            let waiter = flight.waiters.remove(at: index)
            // A queued load nobody waits for is dropped now; one reading the disk or running is
            // left to finish (see `readDisk` and `run`), and a new request may still join it.
            if flight.waiters.isEmpty, flight.phase == .queued {
                flight.phase = .cancelled
                state.flights[key] = nil
                state.statistics.cancelledLoads += 1
            }
            return waiter
        }
        guard let removed else { return false }
        loop.post(label: "Loader cancelled", file: removed.file, line: removed.line) {
            removed.completion(.failure(CancellationError()))
        }
        return true
    }

    /// Disk queue: answers `flight` from disk or queues it for a load slot.
    private func readDisk(_ flight: Flight<Value>) {
        let value = disk?.data(forKey: flight.key).flatMap { try? decode?($0) }
        if let value { memory.setValue(value, forKey: flight.key, cost: cost?(value) ?? 1) }
        let (waiters, ready) = state.withLock { state -> ([Waiter<Value>], [Start<Value>]) in
            if value != nil {
                state.statistics.diskHits += 1
                return (state.finish(flight), [])
            }
            if flight.waiters.isEmpty {
                // Everyone cancelled while the disk was read: the load never runs.
                _ = state.finish(flight)
                return ([], [])
            }
            state.enqueue(flight)
            return ([], state.startReady())
        }
        start(ready)
        if let value { deliver(.success(value), to: waiters) }
    }

    private func start(_ ready: [Start<Value>]) {
        for start in ready {
            inFlight.enter()
            workers[start.place].async {
                self.run(start)
                self.inFlight.leave()
            }
        }
    }

    /// The place's queue: runs the load, caches its value, frees its place (for the next queued
    /// load, which then runs on this queue after this block), delivers.
    private func run(_ start: Start<Value>) {
        let key = start.flight.key
        let result = Result { try body(key) }
        if case .success(let value) = result {
            memory.setValue(value, forKey: key, cost: cost?(value) ?? 1)
            // A disk write that fails costs a future reload, nothing more: not an error to report.
            if let disk, let encode { try? disk.store(encode(value), forKey: key) }
        }
        let (waiters, ready) = state.withLock { state -> ([Waiter<Value>], [Start<Value>]) in
            state.idlePlaces.append(start.place)
            let waiters = state.finish(start.flight)
            return (waiters, state.startReady())
        }
        self.start(ready)
        deliver(result, to: waiters)
    }

    private func deliver(_ result: Result<Value, any Error>, to waiters: [Waiter<Value>]) {
        for waiter in waiters {
            loop.post(label: "Loader result", file: waiter.file, line: waiter.line) { waiter.completion(result) }
        }
    }
}

/// What `load` decided under the lock.
private enum LoadOutcome<Value> {
    case hit(Value)
    case waiting(UInt64)
    case readDisk(UInt64, Flight<Value>)
}

/// A load granted one of the `concurrencyLimit` places: `place` indexes `Loader.workers`.
private struct Start<Value: Sendable>: Sendable {
    let flight: Flight<Value>
    let place: Int
}

private struct Waiter<Value: Sendable>: Sendable {
    let id: UInt64
    let completion: @Sendable (Result<Value, any Error>) -> Void
    let file: StaticString
    let line: UInt
}

/// One fetch of one key and the requests waiting for it. Mutated only under the Loader's lock.
private final class Flight<Value: Sendable>: @unchecked Sendable {
    enum Phase { case readingDisk, queued, running, cancelled }

    let key: String
    var phase = Phase.queued
    var waiters: [Waiter<Value>]

    init(key: String, waiter: Waiter<Value>) {
        self.key = key
        waiters = [waiter]
    }
}

/// The Loader's shared state, behind its lock.
private struct LoaderState<Value: Sendable> {
    var flights: [String: Flight<Value>] = [:]
    /// Loads waiting for a slot, first in first out; `pendingHead` is the next to start, and
    /// cancelled entries stay until they reach the head.
    var pending: [Flight<Value>?] = []
    var pendingHead = 0
    /// The places no load holds, the next to grant last: a load holds its place from
    /// `startReady` until its value is stored, so `limit - idlePlaces.count` loads run. Last in,
    /// first out, so a freed place (and its warm thread) is the first given again.
    var idlePlaces: [Int]
    var nextWaiter: UInt64 = 0
    var statistics = LoaderStatistics()
    let limit: Int

    init(limit: Int) {
        self.limit = limit
        idlePlaces = Array((0..<limit).reversed())
    }

    mutating func enqueue(_ flight: Flight<Value>) {
        flight.phase = .queued
        pending.append(flight)
    }

    /// Grants idle places to queued loads, oldest first.
    mutating func startReady() -> [Start<Value>] {
        var ready: [Start<Value>] = []
        while !idlePlaces.isEmpty, pendingHead < pending.count {
            let flight = pending[pendingHead]!
            pending[pendingHead] = nil
            pendingHead += 1
            guard flight.phase == .queued else { continue }
            flight.phase = .running
            ready.append(Start(flight: flight, place: idlePlaces.removeLast()))
            statistics.loadsStarted += 1
            statistics.maxConcurrentLoads = max(statistics.maxConcurrentLoads, limit - idlePlaces.count)
        }
        if pendingHead > 64, pendingHead * 2 > pending.count {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
        return ready
    }

    /// Retires `flight` and returns its waiters; a flight nobody waits for any more was cancelled.
    mutating func finish(_ flight: Flight<Value>) -> [Waiter<Value>] {
        if flights[flight.key] === flight { flights[flight.key] = nil }
        let waiters = flight.waiters
        flight.waiters = []
        if waiters.isEmpty { statistics.cancelledLoads += 1 }
        return waiters
    }
}
