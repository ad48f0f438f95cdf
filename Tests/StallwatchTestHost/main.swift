import Dispatch
import Foundation
import Stallwatch
import StallwatchCore

// A helper the tests run as a subprocess: unlike the test runner, it owns the process's
// real main thread, so it can run `MainLoop.main`. Prints one `key=value` line per check.

func report(_ key: String, _ value: Bool) {
    print("\(key)=\(value ? 1 : 0)")
}

/// Whether the caller runs on the main thread inside a callout of `MainLoop.main`.
func insideMainLoop() -> Bool {
    MainLoop.main.isCurrent && MainLoop.main.currentMode == .default
}

@MainActor func mainActorCheck() -> Bool { insideMainLoop() }

let scenario = CommandLine.arguments.dropFirst().first ?? ""
switch scenario {
case "main-queue":
    let loop = MainLoop.main
    let expected = 4
    nonisolated(unsafe) var done = 0
    @Sendable func finish(_ key: String, _ ok: Bool) {
        report(key, ok)
        done += 1
        if done == expected { loop.stop() }
    }
    DispatchQueue.main.async { finish("dispatch.async", insideMainLoop()) }
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(30)) {
        finish("dispatch.asyncAfter", insideMainLoop())
    }
    Task { @MainActor in finish("task.mainActor", insideMainLoop()) }
    Task.detached {
        // Every check reports from the main thread: `done` is the main thread's alone.
        await MainActor.run { finish("mainActor.run", mainActorCheck()) }
    }
    // A watchdog for the test: never hang the suite.
    loop.schedule(after: .seconds(10)) { _ in
        print("timeout=1")
        loop.stop()
    }
    loop.run()
    report("returned", true)
case "main-actor":
    runMainActorCallouts()
    report("returned", true)
case "stalls":
    // Zero-code recording: STALLWATCH_TRACE set by the test makes MainLoop.main record.
    let loop = MainLoop.main
    loop.post(label: "spin") { spinForHost(milliseconds: 80) }
    loop.post(label: "sleep") { usleep(60_000) }
    loop.schedule(after: .milliseconds(400)) { _ in loop.stop() }
    loop.run()
    report("returned", true)
case "late-monitor":
    // STALLWATCH_TRACE set by the test: the environment records from the first iteration; then
    // the app starts its own monitor from inside a callout, and must keep running.
    let loop = MainLoop.main
    let stalls = Collected<Stall>()
    loop.post(label: "spin before") { spinForHost(milliseconds: 80) }
    loop.schedule(after: .milliseconds(200)) { _ in
        let monitor = StallMonitor(loop: loop)
        monitor.onStallEnded = { stall in stalls.append(stall) }
        try! monitor.start()
        loop.post(label: "spin after") { spinForHost(milliseconds: 80) }
        loop.schedule(after: .milliseconds(300)) { _ in
            monitor.stop()
            loop.stop()
        }
    }
    loop.run()
    print("own=\(stalls.values.map { $0.callout.label ?? "?" }.joined(separator: ","))")
case "busy":
    // Back-to-back 10 ms callouts for 3 s with a monitor attached; prints every stall it saw.
    // The test stops the whole process (SIGSTOP) for a while, three times.
    let loop = MainLoop.main
    let monitor = StallMonitor(loop: loop)
    let stalls = Collected<Stall>()
    monitor.onStallEnded = { stall in stalls.append(stall) }
    try! monitor.start()
    let end = MainLoop.monotonicNanos() + 3_000_000_000
    @Sendable func work() {
        // 10 ms of CPU, not of wall time: a callout the stop lands in still has work left when
        // the process resumes, so the watchdog sees it running past its deadline (unless the
        // stop came in its last moments and the loop thread finishes before the watchdog looks:
        // the test stops three times).
        spinForHost(cpuMilliseconds: 10)
        if MainLoop.monotonicNanos() < end { loop.post(label: "work", work) } else { loop.stop() }
    }
    loop.post(label: "work", work)
    FileHandle.standardOutput.write(Data("busy\n".utf8))
    loop.run()
    monitor.stop()
    for stall in stalls.values {
        print(
            "stall suspended=\(stall.flags.contains(.suspended) ? 1 : 0) ms=\(((stall.end ?? stall.start) - stall.start) / 1_000_000)"
        )
    }
    print("suspendedStalls=\(monitor.statistics.suspendedStalls)")
case "annotate-async":
    // The async form of `annotate` on the main actor: a stall inside it carries the scope.
    let loop = MainLoop.main
    let monitor = StallMonitor(loop: loop)
    let seen = Collected<String>()
    monitor.onStallEnded = { stall in
        for sample in stall.samples {
            if let annotation = sample.annotation {
                seen.append("\(annotation.label):\(annotation.category?.rawValue ?? "-")")
            }
        }
    }
    try! monitor.start()
    Task { @MainActor in
        await annotate("refresh feed", category: .database) {
            await Task.yield()
            spinForHost(milliseconds: 120)
        }
        // Time for the watchdog to see the stall end and deliver it before the monitor stops.
        loop.schedule(after: .milliseconds(300)) { _ in loop.stop() }
    }
    loop.run()
    monitor.stop()
    for line in Set(seen.values) { print("annotation=\(line)") }
case "exports":
    // A full-mode trace for the export tests (STALLWATCH_TRACE and STALLWATCH_MODE=full set
    // by the test): hundreds of short callouts, a repeating timer, stalls in a post, a sleep
    // and a timer, and a nested run whose inner callout stalls inside the outer one.
    let loop = MainLoop.main
    for _ in 0..<200 { loop.post {} }
    let ticks = Box(0)
    loop.schedule(after: .milliseconds(1), repeating: .milliseconds(3)) { timer in
        ticks.value += 1
        if ticks.value == 60 { timer.cancel() }
    }
    loop.post(label: "spin") { spinForHost(milliseconds: 80) }
    loop.post(label: "sleep") { usleep(60_000) }
    loop.schedule(after: .milliseconds(250)) { _ in spinForHost(milliseconds: 70) }
    loop.schedule(after: .milliseconds(400)) { _ in
        loop.post(label: "inner spin") { spinForHost(milliseconds: 80) }
        for _ in 0..<50 { loop.post {} }
        _ = loop.run(mode: .default, until: .now + .milliseconds(150))
        // The outer run stops 250 ms after the nested one returned. A stop timer of its own
        // (once at 800 ms) fired inside the nested run when a loaded machine delayed it, stopped
        // that run instead, and left the outer one running for ever.
        loop.schedule(after: .milliseconds(250)) { _ in loop.stop() }
    }
    loop.run()
    report("returned", true)
case "perf-status":
    // One 80 ms stall with a monitor attached (self-sampling asked for); prints how the perf
    // paths ran (STALLWATCH_PERF).
    let loop = MainLoop.main
    var configuration = StallMonitor.Configuration()
    configuration.selfSampling = true
    let monitor = StallMonitor(loop: loop, configuration: configuration)
    try! monitor.start()
    loop.post(label: "spin") { spinForHost(milliseconds: 80) }
    loop.schedule(after: .milliseconds(200)) { _ in loop.stop() }
    loop.run()
    monitor.stop()
    print("perfSampling=\(monitor.statistics.perfSampling)")
    print("selfSampling=\(monitor.statistics.selfSampling)")
case "read-file":
    // Data(contentsOf:) of the file named by the second argument in one callout (a
    // main-thread read for the perf tests: STALLWATCH_TRACE set by the caller records it).
    let loop = MainLoop.main
    let path = CommandLine.arguments.dropFirst(2).first ?? "/dev/null"
    loop.post(label: "load document") { loadDocumentForHost(path) }
    loop.schedule(after: .milliseconds(100)) { _ in loop.stop() }
    loop.run()
case "fork-exit":
    // STALLWATCH_TRACE set by the test: the loop records; a callout forks a child that leaves
    // with exit() (as a shell's command substitution does), and the parent waits for it.
    let loop = MainLoop.main
    loop.post(label: "spin") { spinForHost(milliseconds: 80) }
    loop.post(label: "fork") {
        let child = fork()
        if child == 0 {
            // A child that hangs in exit() is killed by its alarm: the test fails, not hangs.
            alarm(10)
            exit(7)
        }
        var status: Int32 = 0
        waitpid(child, &status, 0)
        print("child=\((status >> 8) & 0xFF)")
    }
    loop.schedule(after: .milliseconds(200)) { _ in loop.stop() }
    loop.run()
    report("returned", true)
case "hang":
    // Hangs forever in a callout; the test kills the process mid-hang.
    let loop = MainLoop.main
    loop.post(label: "hang forever") {
        FileHandle.standardOutput.write(Data("hanging\n".utf8))
        spinForHost(milliseconds: 3_600_000)
    }
    loop.run()
case "close-fds":
    // STALLWATCH_TRACE set by the test: a callout closes every descriptor it did not open
    // (3...1023, the trace's among them), opens 40 files of its own in the directory the second
    // argument names, and stalls while the recorder has records to write; then exits.
    let loop = MainLoop.main
    let directory = CommandLine.arguments.dropFirst(2).first ?? "/tmp"
    loop.post(label: "close and open") {
        for fd in Int32(3)...1023 { close(fd) }
        for index in 0..<40 { _ = open("\(directory)/appfile-\(index).txt", O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        spinForHost(milliseconds: 80)  // a stall: its records are queued for the writer
        report("returned", true)
        exit(0)  // the recorder's atexit stop flushes them: the write the test watches
    }
    loop.run()
case "main-actor-async":
    // STALLWATCH_TRACE set by the test: a @MainActor request handler awaits a service that awaits
    // a repository that blocks the main thread inside MainLoop.main (a spin, or with "sleep" as
    // the second argument a sleep), after a real suspension.
    let loop = MainLoop.main
    let sleep = CommandLine.arguments.dropFirst(2).first == "sleep"
    Task { @MainActor in
        report("rows", await MainActorChain.handleRequest(sleep: sleep) == 7)
        loop.schedule(after: .milliseconds(100)) { _ in loop.stop() }
    }
    loop.schedule(after: .seconds(10)) { _ in
        print("timeout=1")
        loop.stop()
    }
    loop.run()
    report("returned", true)
case "process-tree":
    // STALLWATCH_TRACE (and, under `stallwatch record`, the preload library) set by the test:
    // this process starts N copies of itself (`process-tree N`), which inherit it, and every
    // one records a stall of its own while the others record theirs.
    let children = Int(CommandLine.arguments.dropFirst(2).first ?? "0") ?? 0
    let loop = MainLoop.main
    var pids: [pid_t] = []
    // By its own path, so each copy has the same name (comm) as this one.
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
    for _ in 0..<children {
        var pid: pid_t = 0
        let words: [String] = [executable, "process-tree", "0"]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        let spawned = posix_spawn(&pid, executable, nil, nil, arguments, environ)
        for argument in arguments { free(argument) }
        if spawned == 0 { pids.append(pid) } else { print("spawn=\(spawned)") }
    }
    print("pid=\(getpid()) children=\(pids.count)")
    loop.post(label: "spin") { spinForHost(milliseconds: 80) }
    // The children run as long as the root does; it stops once they are gone and its stall ran.
    let started = pids
    loop.schedule(after: .milliseconds(300)) { _ in
        for pid in started {
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            if status != 0 { print("child-status=\(status)") }
        }
        loop.stop()
    }
    loop.run()
    report("returned", true)
default:
    FileHandle.standardError.write(
        Data(
            "usage: StallwatchTestHost main-queue|stalls|exports|hang|busy|annotate-async|perf-status|read-file|fork-exit|process-tree|main-actor-async\n"
                .utf8)
    )
    exit(2)
}

@inline(never) func loadDocumentForHost(_ path: String) {
    let data = try? Data(contentsOf: URL(fileURLWithPath: path))
    print("read=\(data?.count ?? -1)")
}

@inline(never) func spinForHost(milliseconds: UInt64) {
    let end = MainLoop.monotonicNanos() + milliseconds * 1_000_000
    var x: UInt64 = 0
    while MainLoop.monotonicNanos() < end { x = x &* 31 &+ 1 }
    if x == 7 { print("") }
}

/// Spins until this thread has used `cpuMilliseconds` of CPU (time stopped does not count).
@inline(never) func spinForHost(cpuMilliseconds: UInt64) {
    func cpuNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
    let end = cpuNanos() + cpuMilliseconds * 1_000_000
    var x: UInt64 = 0
    while cpuNanos() < end { x = x &* 31 &+ 1 }
    if x == 7 { print("") }
}

/// A value only the main thread touches, in closures that must be `@Sendable`.
final class Box<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Values the monitor's delivery queue appends and the main thread reads at the end.
final class Collected<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Value] = []
    func append(_ value: Value) { lock.withLock { items.append(value) } }
    var values: [Value] { lock.withLock { items } }
}
