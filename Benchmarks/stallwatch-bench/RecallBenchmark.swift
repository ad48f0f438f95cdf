import CStallwatchShims
import Dispatch
import Foundation
import Stallwatch
import StallwatchAnalysis
import StallwatchCore

/// `stallwatch-bench recall [STALLS]`: does the default configuration catch every stall, once,
/// with its true duration, and invent none? Injected stalls of random lengths (18–400 ms,
/// log-uniform) and kinds (compute, sleep, a mutex another thread holds, write+fdatasync, pairs
/// back to back, and one posted right after each `start()`) behind 130 short callouts each,
/// with a CPU hog on every core, recorder on; the trace is decoded and matched against what the
/// bench measured itself. For `StallMonitor` on `MainLoop` and for `HeartbeatMonitor` on a plain
/// executor, as root (here) and as nobody (this binary again under `setpriv`).
enum Recall {
    enum Kind: CaseIterable {
        case compute, sleep, mutex, fileIO
    }

    /// A stall the bench caused, as it measured it around the work (CLOCK_MONOTONIC).
    struct Truth: Sendable {
        var start: UInt64
        var end: UInt64
        var injected: Bool
        /// What the injected work was (nil: a short callout), and whether it saw EINTR.
        var kind: Kind? = nil
        var interrupted = false
    }

    /// What goes into one episode: short callouts, then a stall or two back to back.
    enum Item {
        case short(spinNanos: UInt64)
        case stall(Kind, nanos: UInt64)
    }

    static let budget: UInt64 = 16_666_666

    /// Root: here, then the unprivileged run as a child; otherwise only the unprivileged one here.
    static func runBoth(stalls: Int, targets: [String]) throws {
        guard geteuid() == 0 else {
            Result(name: "recall.root", value: 0, unit: "skipped: not root").printLine()
            try run(label: "unprivileged", stalls: stalls, targets: targets)
            return
        }
        try run(label: "root", stalls: stalls, targets: targets)
        try UnderLoad.runAsNobody(
            ["recall-run", "unprivileged", String(stalls)] + targets, skipped: "recall.unprivileged")
    }

    /// The monitors measured, by name.
    static let targets = ["mainloop", "heartbeat", "unmodified.epoll", "unmodified.main-queue", "unmodified.pool"]

    /// Each of `targets` under hogs on every core, `stalls` injected stalls each.
    static func run(label: String, stalls: Int, targets: [String]) throws {
        let hogs = Hogs(count: ProcessInfo.processInfo.activeProcessorCount)
        defer { hogs.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "stallwatch-recall-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let work = Work(directory: directory.path)
        let makers: [String: @Sendable (String) throws -> Target] = [
            "mainloop": { try MainLoopTarget(path: $0) }, "heartbeat": { try HeartbeatTarget(path: $0) },
            "unmodified.epoll": { try EpollTarget(path: $0) },
            "unmodified.main-queue": { try DispatchedTarget(path: $0, mainQueue: true) },
            "unmodified.pool": { try DispatchedTarget(path: $0, mainQueue: false) },
        ]
        for target in Self.targets where targets.contains(target) {
            try measure(
                target: target, label: label, stalls: stalls, work: work, directory: directory.path,
                make: makers[target]!)
        }
    }

    /// A monitor with its recorder, and the executor it watches.
    protocol Target: AnyObject, Sendable {
        func start() throws
        func post(_ work: @escaping @Sendable () -> Void)
        func stop()
        var statistics: String { get }
        /// The sampling signals the watchdog sent the watched thread (`statistics.captures`).
        var signalsSent: Int { get }
    }

    final class MainLoopTarget: Target, @unchecked Sendable {
        let recorder: TraceRecorder
        let loop = MainLoop.main

        init(path: String) throws { recorder = try TraceRecorder(path: path, loop: .main) }
        func start() throws { try recorder.start() }
        func post(_ work: @escaping @Sendable () -> Void) { loop.post(work) }
        func stop() { recorder.stop() }
        var statistics: String {
            let stats = recorder.monitor.statistics
            return "watchdog \(stats.watchdogScheduling); self-sampling \(stats.selfSampling); "
                + "missed by the watchdog \(stats.missedByWatchdog)"
        }
        var signalsSent: Int { recorder.monitor.statistics.captures }
    }

    final class HeartbeatTarget: Target, @unchecked Sendable {
        static let executor = HeartbeatBenchmarks.Executor()
        let recorder: HeartbeatRecorder

        init(path: String) throws {
            let monitor = HeartbeatMonitor()
            monitor.watch(label: "executor") { Self.executor.execute($0) }
            recorder = try HeartbeatRecorder(path: path, monitor: monitor)
        }
        func start() throws { try recorder.start() }
        func post(_ work: @escaping @Sendable () -> Void) { Self.executor.execute(work) }
        func stop() { recorder.stop() }
        var statistics: String {
            let stats = recorder.monitor.statistics
            return "watchdog \(stats.watchdogScheduling); self-sampling \(stats.selfSampling)"
        }
        var signalsSent: Int { recorder.monitor.statistics.captures }
    }

    /// An event loop that never heard of Stallwatch: a thread waiting in `epoll_wait` on an
    /// eventfd, one posted item per iteration, its waits bracketed as the preload library's
    /// interposed `epoll_wait` brackets them (`sw_loop_wait_begin`/`_end`); watched by
    /// `HeartbeatMonitor.watchEventLoops`, which is what `stallwatch record` runs.
    final class EpollTarget: Target, @unchecked Sendable {
        static let executor = EpollExecutor()
        let recorder: HeartbeatRecorder

        init(path: String) throws {
            _ = Self.executor  // made (and found at its first wait) before the session starts
            let monitor = HeartbeatMonitor()
            monitor.watchEventLoops()
            recorder = try HeartbeatRecorder(path: path, monitor: monitor)
        }
        func start() throws {
            try recorder.start()
            // The loop is found at its first wait; it waits already (made before the session).
            while recorder.monitor.eventLoops.isEmpty { usleep(1_000) }
        }
        func post(_ work: @escaping @Sendable () -> Void) { Self.executor.execute(work) }
        func stop() { recorder.stop() }
        var statistics: String {
            let stats = recorder.monitor.statistics
            return "watchdog \(stats.watchdogScheduling); missed by the watchdog \(stats.missedByWatchdog)"
        }
        var signalsSent: Int { recorder.monitor.statistics.captures }
    }

    /// Items of a program that never heard of Stallwatch, bracketed as the preload library's
    /// dispatch trampolines bracket them (`sw_dispatch_item_begin`/`_end`): main-queue items
    /// (`mainQueue`) or Swift jobs, run one at a time on a serial queue, so on whichever of
    /// libdispatch's worker threads it drains on; watched by `HeartbeatMonitor.watchEventLoops`,
    /// which is what `stallwatch record` runs. (The bench is not preloaded: the interposed calls
    /// themselves are tested on real programs, HeartbeatSampleTests.)
    final class DispatchedTarget: Target, @unchecked Sendable {
        static let queue = DispatchQueue(label: "stallwatch-bench.dispatched")
        let recorder: HeartbeatRecorder
        let mainQueue: Int32

        init(path: String, mainQueue: Bool) throws {
            self.mainQueue = mainQueue ? 1 : 0
            let monitor = HeartbeatMonitor()
            monitor.watchEventLoops()
            recorder = try HeartbeatRecorder(path: path, monitor: monitor)
        }
        func start() throws { try recorder.start() }
        func post(_ work: @escaping @Sendable () -> Void) {
            Self.queue.async { [mainQueue] in
                let slot = sw_dispatch_item_begin(mainQueue)
                work()
                sw_dispatch_item_end(slot)
            }
        }
        func stop() { recorder.stop() }
        var statistics: String {
            let stats = recorder.monitor.statistics
            return "watchdog \(stats.watchdogScheduling); missed by the watchdog \(stats.missedByWatchdog)"
        }
        var signalsSent: Int { recorder.monitor.statistics.captures }
    }

    /// What one target's sessions gave.
    struct Outcome: Sendable {
        var truths: [Truth] = []
        var detected: [Stall] = []
        var lost: UInt64 = 0
        var shortCallouts = 0
        var signalsSent = 0
        var summary = ""
    }

    /// Sessions of about 20 stalls each (start, a stall at once, episodes, stop), until `stalls`
    /// were injected; then the figures. The main loop runs on this thread while another drives it.
    static func measure(
        target name: String, label: String, stalls: Int, work: Work, directory: String,
        make: @escaping @Sendable (String) throws -> Target
    ) throws {
        let drive: @Sendable () throws -> Outcome = {
            try sessions(name: name, stalls: stalls, work: work, directory: directory, make: make)
        }
        let outcome: Outcome
        if name == "mainloop" {
            let box = Locked<Swift.Result<Outcome, any Error>?>(nil)
            Thread {
                let result = Swift.Result { try drive() }
                box.withLock { $0 = result }
                MainLoop.main.post { MainLoop.main.stop() }
            }.start()
            MainLoop.main.run()
            outcome = try box.withLock { $0! }.get()
        } else {
            outcome = try drive()
        }
        report(name: name, label: label, outcome)
    }

    static func sessions(
        name: String, stalls: Int, work: Work, directory: String, make: (String) throws -> Target
    ) throws -> Outcome {
        var random = FleetGenerator.Random(
            state: 0x5EED_0001 &+ UInt64(Self.targets.firstIndex(of: name) ?? 0))
        let truths = Locked<[Truth]>([])
        var outcome = Outcome()
        var injected = 0
        var session = 0
        while injected < stalls {
            let path = "\(directory)/\(name)-\(session).swtrace"
            session += 1
            let target = try make(path)
            try target.start()
            // A stall posted the moment start() returns.
            run(
                [.stall(Kind.allCases[random.pick(4)], nanos: random.stallNanos())], on: target, work: work,
                truths: truths)
            injected += 1
            for _ in 0..<19 where injected < stalls {
                var items: [Item] = (0..<130).map { _ in
                    .short(spinNanos: random.pick(100) < 3 ? 1_000_000 + UInt64(random.pick(2_000_000)) : 0)
                }
                outcome.shortCallouts += items.count
                items.append(.stall(Kind.allCases[random.pick(4)], nanos: random.stallNanos()))
                injected += 1
                if random.pick(5) == 0 {  // a pair: a second stall right behind the first
                    items.append(.stall(Kind.allCases[random.pick(4)], nanos: random.stallNanos()))
                    injected += 1
                }
                run(items, on: target, work: work, truths: truths)
            }
            target.stop()
            outcome.summary = target.statistics
            outcome.signalsSent += target.signalsSent
            let trace = DecodedTrace(
                decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
            outcome.detected += trace.stalls
            outcome.lost &+= trace.lostRecords
            unlink(path)
        }
        outcome.truths = truths.withLock { $0 }
        if name == "unmodified.epoll" {
            outcome.truths = widened(outcome.truths, to: EpollTarget.executor.iterations.withLock { $0 })
        }
        return outcome
    }

    /// The epoll loop's truths as its iterations: an item runs inside one (after the eventfd's
    /// read and the queue, before the check for more), and the loop's waits time the iteration,
    /// so a thread held off the CPU after its item still stalls the loop. Each truth becomes the
    /// iteration around it, and an iteration past the budget with no truth in it is one too.
    static func widened(_ truths: [Truth], to iterations: [(start: UInt64, end: UInt64)]) -> [Truth] {
        let sorted = iterations.sorted { $0.start < $1.start }
        var widened: [Truth] = []
        var covered = Set<Int>()
        for var truth in truths {
            let index = sorted.partitioningIndex { $0.start > truth.start } - 1
            if index >= 0 && sorted[index].end >= truth.end {
                (truth.start, truth.end) = sorted[index]
                covered.insert(index)
            }
            widened.append(truth)
        }
        for (index, iteration) in sorted.enumerated()
        where !covered.contains(index) && iteration.end - iteration.start > budget {
            widened.append(Truth(start: iteration.start, end: iteration.end, injected: false))
        }
        return widened
    }

    /// Posts `items` to the target's executor and waits until the last one ran.
    static func run(_ items: [Item], on target: Target, work: Work, truths: Locked<[Truth]>) {
        let done = DispatchSemaphore(value: 0)
        for item in items {
            target.post {
                let start = MainLoop.monotonicNanos()
                var truth = Truth(start: start, end: 0, injected: false)
                switch item {
                case .short(let nanos): if nanos > 0 { MonitorBenchmarks.spin(nanoseconds: nanos) }
                case .stall(let kind, let nanos):
                    (truth.injected, truth.kind) = (true, kind)
                    truth.interrupted = work.stall(kind, nanos: nanos)
                }
                truth.end = MainLoop.monotonicNanos()
                // A short callout the machine stretched past the budget is a stall too.
                if truth.injected || truth.end - start > budget { truths.withLock { $0.append(truth) } }
            }
        }
        // Signalled from a callout of its own: waking the driver can cost the loop thread its CPU
        // for a while, which must not land inside a stall the bench is timing.
        target.post {
            let start = MainLoop.monotonicNanos()
            done.signal()
            let end = MainLoop.monotonicNanos()
            if end - start > budget { truths.withLock { $0.append(Truth(start: start, end: end, injected: false)) } }
        }
        done.wait()
    }

    static func report(name: String, label: String, _ outcome: Outcome) {
        // An injected stall whose wait a signal ended early (EINTR), or that ended within the
        // budget, was changed by the monitor: counted on its own, never excused. One that still
        // overran the budget is a stall all the same, and is matched as one.
        let cutShort = outcome.truths.filter { $0.injected && ($0.interrupted || $0.end - $0.start <= budget) }
        let truths = outcome.truths.filter { !$0.injected || $0.end - $0.start > budget }
        let (detected, lost) = (outcome.detected, outcome.lost)
        let (shortCallouts, summary) = (outcome.shortCallouts, outcome.summary)
        let prefix = "recall.\(name).\(label)"
        let detectedSorted = detected.sorted { $0.start < $1.start }
        var matchedDetected = Set<Int>()
        var caught = 0
        var split = 0
        var errors: [Double] = []
        for truth in truths {
            var matches: [Int] = []
            for (index, stall) in detectedSorted.enumerated() {
                let end = stall.end ?? stall.start
                if stall.start < truth.end && end > truth.start { matches.append(index) }
                if stall.start > truth.end { break }
            }
            matchedDetected.formUnion(matches)
            if matches.isEmpty, ProcessInfo.processInfo.environment["RECALL_DEBUG"] != nil {
                let near = detectedSorted.filter {
                    $0.start + 1_000_000_000 > truth.start && $0.start < truth.end + 1_000_000_000
                }
                print(
                    "DEBUG \(name) missed truth \(Double(truth.end - truth.start) / 1e6) ms injected \(truth.injected); near: \(near.map { (Double(Int64($0.start) - Int64(truth.start)) / 1e6, Double(($0.end ?? $0.start) - $0.start) / 1e6) })"
                )
            }
            if !matches.isEmpty { caught += 1 }
            if matches.count > 1 { split += 1 }
            if matches.count == 1 {
                let stall = detectedSorted[matches[0]]
                let duration = Double((stall.end ?? stall.start) - stall.start)
                errors.append(abs(duration - Double(truth.end - truth.start)) / 1e6)
                if ProcessInfo.processInfo.environment["RECALL_DEBUG"] != nil, errors.last! > 1 {
                    print(
                        "DEBUG \(name) truth \(Double(truth.end - truth.start) / 1e6) ms injected \(truth.injected) detected \(duration / 1e6) ms start off \((Double(stall.start) - Double(truth.start)) / 1e6) label \(stall.callout.label ?? "-") samples \(stall.samples.count)"
                    )
                }
            }
        }
        let invented = detectedSorted.count - matchedDetected.count
        if ProcessInfo.processInfo.environment["RECALL_DEBUG"] != nil {
            for (index, stall) in detectedSorted.enumerated() where !matchedDetected.contains(index) {
                print(
                    "DEBUG \(name) invented \(Double((stall.end ?? stall.start) - stall.start) / 1e6) ms \(stall.callout) top \(stall.samples.first?.frames.prefix(6).map { $0.symbol ?? "?" } ?? [])"
                )
            }
        }
        let injected = outcome.truths.filter(\.injected).count
        Result(
            name: "\(prefix).setup", value: Double(injected),
            unit:
                "injected stalls (+\(truths.count - injected) short callouts stretched past the budget) among "
                + "\(shortCallouts) short callouts; \(summary)"
        ).printLine()
        let goals = name != "heartbeat"
        Result(
            name: "\(prefix).recall", value: truths.isEmpty ? 0 : Double(caught) / Double(truths.count),
            unit: "share of \(truths.count) stalls", goal: goals ? "1.0" : nil
        ).printLine()
        Result(
            name: "\(prefix).split", value: Double(split), unit: "stalls reported as several", goal: goals ? "0" : nil
        )
        .printLine()
        Result(
            name: "\(prefix).invented", value: Double(invented), unit: "stalls with no true stall under them",
            goal: goals ? "0" : nil
        ).printLine()
        let kinds = cutShort.map {
            "\($0.kind.map { "\($0)" } ?? "?") \(($0.end - $0.start) / 1_000_000) ms\($0.interrupted ? " (EINTR)" : "")"
        }
        Result(
            name: "\(prefix).cut_short", value: Double(cutShort.count),
            unit:
                "injected stalls whose wait a signal ended early or that ended within the budget"
                + (kinds.isEmpty ? "" : ": " + kinds.joined(separator: ", ")),
            goal: goals ? "0" : nil
        ).printLine()
        Result(
            name: "\(prefix).signals", value: Double(outcome.signalsSent),
            unit: "sampling signals the watchdog sent the watched thread (it samples itself)", goal: goals ? "0" : nil
        ).printLine()
        Result(name: "\(prefix).lost_records", value: Double(lost), unit: "records", goal: goals ? "0" : nil)
            .printLine()
        Result(
            name: "\(prefix).duration_error_p50_ms", value: percentile(errors, 0.5), unit: "ms",
            goal: goals ? "<= 1" : nil
        ).printLine()
        Result(
            name: "\(prefix).duration_error_p99_ms", value: percentile(errors, 0.99), unit: "ms",
            goal: goals ? "<= 1" : nil
        ).printLine()
        // How long after the deadline each stall's first stack was taken (its first sample with
        // frames), and how many stalls the watchdog saw while they ran have none at all.
        let seen = detected.filter { !$0.samples.isEmpty }
        let firstStacks = seen.compactMap { stall -> Double? in
            guard let first = stall.samples.first(where: { !$0.frames.isEmpty }) else { return nil }
            return Double(Int64(bitPattern: first.time &- (stall.start &+ budget))) / 1e6
        }
        Result(
            name: "\(prefix).first_stack_p50_ms", value: percentile(firstStacks, 0.5),
            unit: "ms from the deadline to the stall's first stack", goal: goals ? "<= 1" : nil
        ).printLine()
        Result(
            name: "\(prefix).first_stack_p99_ms", value: percentile(firstStacks, 0.99),
            unit: "ms from the deadline to the stall's first stack", goal: goals ? "<= 5" : nil
        ).printLine()
        Result(
            name: "\(prefix).stalls_without_stack", value: Double(seen.count - firstStacks.count),
            unit: "of \(seen.count) stalls sampled while they ran"
        ).printLine()
    }

    /// The stalls' real work: each blocks its thread for about `nanos` in its own way.
    final class Work: @unchecked Sendable {
        private let holder = LockHolder()
        private let fd: Int32
        private let block = [UInt8](repeating: 0x5A, count: 256 << 10)

        init(directory: String) {
            fd = open("\(directory)/io", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }

        deinit { close(fd) }

        /// Blocks for about `nanos`; returns whether a signal cut the wait short (EINTR), its own or
        /// (a mutex) its holder's.
        func stall(_ kind: Kind, nanos: UInt64) -> Bool {
            switch kind {
            case .compute: MonitorBenchmarks.spin(nanoseconds: nanos)
            case .sleep: return usleep(UInt32(nanos / 1000)) != 0 && errno == EINTR
            case .mutex: return holder.block(for: nanos)
            case .fileIO: writeAndSync(for: nanos)
            }
            return false
        }

        /// 256 KiB written and flushed to the disk, again and again, until `nanos` have passed.
        @inline(never) private func writeAndSync(for nanos: UInt64) {
            let end = MainLoop.monotonicNanos() + nanos
            repeat {
                _ = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
                _ = fdatasync(fd)
            } while MainLoop.monotonicNanos() < end
        }
    }

    /// A thread that holds a mutex for as long as asked, so the caller waits in `pthread_mutex_lock`.
    final class LockHolder: @unchecked Sendable {
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private let request = DispatchSemaphore(value: 0)
        private let held = DispatchSemaphore(value: 0)
        private var holdNanos: UInt64 = 0
        private var holdInterrupted = false

        init() {
            pthread_mutex_init(mutex, nil)
            Thread { [self] in
                while true {
                    request.wait()
                    pthread_mutex_lock(mutex)
                    held.signal()
                    holdInterrupted = usleep(UInt32(holdNanos / 1000)) != 0 && errno == EINTR
                    pthread_mutex_unlock(mutex)
                }
            }.start()
        }

        /// Waits about `nanos` for the mutex; whether a signal cut the holder's sleep short.
        @inline(never) func block(for nanos: UInt64) -> Bool {
            holdNanos = nanos
            request.signal()
            held.wait()
            pthread_mutex_lock(mutex)
            let interrupted = holdInterrupted
            pthread_mutex_unlock(mutex)
            return interrupted
        }
    }
}

extension FleetGenerator.Random {
    /// 0 ..< n.
    mutating func pick(_ n: Int) -> Int { Int(below(UInt64(n))) }

    /// 18–400 ms, log-uniform: as many short stalls as long ones per doubling.
    mutating func stallNanos() -> UInt64 { UInt64(18e6 * exp(unit() * log(400.0 / 18.0))) }
}
