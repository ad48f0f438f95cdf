// Event loops of programs that never heard of Stallwatch, recorded as a user would
// (`stallwatch record -- program`): Debian's python3 running asyncio and a C program on GLib's
// main loop. Each blocking callback is one stall, timed by the loop's own wait calls (the preload
// library interposes them), with the category and the function right. The stalls are read back
// the way a fleet query reads them: `export --format jsonl`.
import Foundation
import StallwatchTestSupport
import Testing

private enum LoopTools {
    /// Debian's python3 (not a pyenv shim: the test is about the system's interpreter).
    static let python3: String? =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : nil
    /// The toolchain's docc (swift-nio's server behind `docc preview`) and curl to ask it.
    static let docc: String? = onPath("docc")
    static let curl: String? = onPath("curl")
    /// The toolchain's runtime libraries (libdispatch among them), next to its `swift`.
    static let swiftLibraries: String? = onPath("swift").map {
        URL(fileURLWithPath: $0).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("../lib/swift/linux").standardizedFileURL.path
    }.flatMap { FileManager.default.fileExists(atPath: $0 + "/libdispatch.so") ? $0 : nil }

    static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH", default: "/usr/bin:/bin"]
        return path.split(separator: ":").map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// GLib's compile flags from pkg-config (libglib2.0-dev, installed by scripts/install-deps.sh).
    static let glibFlags: [String]? = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/pkg-config"),
            let run = try? ChildRun("/usr/bin/pkg-config", ["--cflags", "--libs", "glib-2.0"], timeout: .seconds(30)),
            run.exitCode == 0
        else { return nil }
        return run.output.split(whereSeparator: \.isWhitespace).map(String.init)
    }()
}

@Suite(.serialized) struct UnmodifiedLoopTests {
    let directory = TemporaryDirectory()

    /// One stall as `export --format jsonl` gives it.
    struct ExportedStall {
        var durationMs: Double
        var category: String
        var label: String
        var stack: [String]
        var unfinished: Bool
        /// How the loop was timed: its wait (`epoll`, `poll`, `select`), or `heartbeat`.
        var mode: String
        /// The category shares: compute, io, lock_wait, database, other.
        var shares: [String: Double]
    }

    /// Records `command`, exports the trace as JSONL and returns the program's output and stalls.
    /// `asChild`: the recorded command is a shell that runs `command` as a process of its own,
    /// which the preload shim gives the Swift part only once the wait interposers found its loop.
    func record(_ command: [String], name: String, asChild: Bool = false) throws -> (
        output: String, stalls: [ExportedStall]
    ) {
        let trace = directory.path + "/\(name).swtrace"
        // Not the shell's last command, which it would exec (and so be the recorded command).
        let shell = asChild ? ["/bin/sh", "-c", "\"$0\" \"$@\"; exit $?"] : []
        let run = try ChildRun(
            BinaryRun.binary, ["record", "-o", trace, "--"] + shell + command, timeout: .seconds(120))
        try #require(run.exitCode == 0, "\(run)")
        return (run.output, try exportedStalls(trace))
    }

    /// The stalls of `trace`, through `export --format jsonl`.
    func exportedStalls(_ trace: String) throws -> [ExportedStall] {
        let jsonl = trace + ".jsonl"
        let export = try ChildRun(
            BinaryRun.binary, ["export", trace, "--format", "jsonl", "-o", jsonl], timeout: .seconds(60))
        try #require(export.exitCode == 0, "\(export)")
        let lines = try String(contentsOfFile: jsonl, encoding: .utf8).split(separator: "\n")
        let stalls = try lines.compactMap { line -> ExportedStall? in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard object["type"] as? String == "stall" else { return nil }
            return ExportedStall(
                durationMs: object["duration_ms"] as? Double ?? -1, category: object["category"] as? String ?? "?",
                label: object["site_label"] as? String ?? "?", stack: object["stack"] as? [String] ?? [],
                unfinished: object["unfinished"] as? Bool ?? true, mode: object["site_mode"] as? String ?? "?",
                shares: Dictionary(
                    uniqueKeysWithValues: ["compute", "io", "lock_wait", "database", "other"].map {
                        ($0, object["share_" + $0] as? Double ?? 0)
                    }))
        }
        return stalls
    }

    /// What the program measured itself: `name milliseconds` lines.
    func ownTimes(_ output: String) -> [String: Double] {
        var times: [String: Double] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { times[String(parts[0])] = value }
        }
        return times
    }

    /// A stall's duration covers the callback the program timed and little else: the iteration
    /// around it also ran the loop's own bookkeeping, well under 2 ms on an idle machine. The
    /// margin is 5 ms because the iteration also holds the time from the callback's last clock
    /// reading to the loop's next wait, and a loaded machine can preempt the thread right there
    /// (3.8 ms was seen at load 4.8). The boundaries themselves are checked to 1 ms against the
    /// thread's own stamps in `EventLoopWaitTests`, and their error is measured by the bench.
    func expectTimed(_ stall: ExportedStall, like own: Double?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let own else {
            Issue.record("the program did not say how long it took", sourceLocation: sourceLocation)
            return
        }
        #expect(
            stall.durationMs >= own - 0.1 && stall.durationMs - own < 5, "\(stall.durationMs) ms vs \(own) ms",
            sourceLocation: sourceLocation)
    }

    /// `stall`'s category is `expected`. Time the thread was runnable but off a CPU is "waiting
    /// for a CPU" (other), which a loaded machine adds to any stall and which these programs do
    /// not control: where that share won, `expected` must still be the largest of the others.
    func expectCategory(_ stall: ExportedStall, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        if stall.category == "other" && expected != "other" {
            let largest = stall.shares.filter { $0.key != "other" }.max { $0.value < $1.value }?.key
            #expect(
                largest == expected && stall.shares[expected, default: 0] > 0, "\(stall)",
                sourceLocation: sourceLocation)
        } else {
            #expect(stall.category == expected, "\(stall)", sourceLocation: sourceLocation)
        }
    }

    @Test(
        .enabled(
            if: RecordCrashTests.preloads && LoopTools.python3 != nil, "needs the preload library and /usr/bin/python3"),
        arguments: [false, true])
    func pythonAsyncioCoroutinesThatBlockAreEachAStall(asChild: Bool) throws {
        let script = directory.write(
            "blocking.py",
            Array(
                """
                import asyncio, time

                def spin(seconds):
                    end = time.monotonic() + seconds
                    while time.monotonic() < end:
                        pass

                async def sleeper():
                    await asyncio.sleep(0.05)
                    start = time.monotonic()
                    time.sleep(0.12)
                    print(f"sleep {(time.monotonic() - start) * 1000:.3f}", flush=True)

                async def spinner():
                    await asyncio.sleep(0.3)
                    start = time.monotonic()
                    spin(0.15)
                    print(f"spin {(time.monotonic() - start) * 1000:.3f}", flush=True)

                async def main():
                    await asyncio.gather(sleeper(), spinner())

                asyncio.run(main())

                """.utf8))
        let (output, recorded) = try record([LoopTools.python3!, script], name: "asyncio", asChild: asChild)
        // The blocking callbacks; shorter stalls are the loop's own on a loaded machine (an
        // iteration preempted past the budget): real, and not what this test is about.
        let stalls = recorded.filter { $0.durationMs >= 100 }
        let own = ownTimes(output)
        try #require(stalls.count == 2, "\(stalls)")
        let (sleep, spin) = (stalls[0], stalls[1])
        #expect(sleep.category == "other" && sleep.stack.first?.hasPrefix("clock_nanosleep") == true, "\(sleep)")
        expectCategory(spin, "compute")
        expectTimed(sleep, like: own["sleep"])
        expectTimed(spin, like: own["spin"])
        #expect(recorded.allSatisfy { $0.label == "python3" && !$0.unfinished }, "\(recorded)")
    }

    @Test(
        .enabled(if: RecordCrashTests.preloads && LoopTools.glibFlags != nil, "needs the preload library and GLib"),
        arguments: [false, true])
    func glibTimeoutCallbacksThatBlockAreEachAStallInTheirFunction(asChild: Bool) throws {
        let source = directory.write(
            "glibloop.c",
            Array(
                """
                #include <glib.h>
                #include <fcntl.h>
                #include <stdio.h>
                #include <string.h>
                #include <time.h>
                #include <unistd.h>

                static const char *path;

                static double now_ms(void) {
                    struct timespec t;
                    clock_gettime(CLOCK_MONOTONIC, &t);
                    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
                }

                /* The loop goes round every 10 ms, as a UI's animations make it. */
                gboolean tick(gpointer data) { return G_SOURCE_CONTINUE; }

                __attribute__((noinline)) gboolean compute_callback(gpointer data) {
                    double start = now_ms();
                    volatile unsigned long sum = 0;
                    while (now_ms() - start < 120) sum += 1;
                    printf("compute %.3f\\n", now_ms() - start);
                    fflush(stdout);
                    return G_SOURCE_REMOVE;
                }

                __attribute__((noinline)) gboolean write_fsync_callback(gpointer data) {
                    static char block[64 << 10];
                    memset(block, 'x', sizeof(block));
                    double start = now_ms();
                    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
                    while (now_ms() - start < 110) {
                        if (write(fd, block, sizeof(block)) < 0) break;
                        fsync(fd);
                    }
                    close(fd);
                    printf("io %.3f\\n", now_ms() - start);
                    fflush(stdout);
                    return G_SOURCE_REMOVE;
                }

                gboolean quit(gpointer loop) {
                    g_main_loop_quit(loop);
                    return G_SOURCE_REMOVE;
                }

                int main(int argc, char **argv) {
                    path = argv[1];
                    GMainLoop *loop = g_main_loop_new(NULL, FALSE);
                    g_timeout_add(10, tick, NULL);
                    g_timeout_add(100, compute_callback, NULL);
                    g_timeout_add(400, write_fsync_callback, NULL);
                    g_timeout_add(700, quit, loop);
                    g_main_loop_run(loop);
                    return 0;
                }

                """.utf8))
        let executable = directory.path + "/glibloop"
        let build = try ChildRun(
            "/usr/bin/cc", ["-g", "-O1", "-o", executable, source] + LoopTools.glibFlags!, timeout: .seconds(120))
        try #require(build.exitCode == 0, "cc failed: \(build)")
        let (output, recorded) = try record(
            [executable, directory.path + "/written.bin"], name: "glib", asChild: asChild)
        // The blocking callbacks; shorter stalls are the loop's own on a loaded machine (an
        // iteration preempted past the budget): real, and not what this test is about.
        let stalls = recorded.filter { $0.durationMs >= 100 }
        let own = ownTimes(output)
        try #require(stalls.count == 2, "\(stalls)")
        let (compute, io) = (stalls[0], stalls[1])
        expectCategory(compute, "compute")
        #expect(compute.stack.contains("compute_callback"), "\(compute)")
        expectCategory(io, "io")
        #expect(["fsync", "write", "__write"].contains(io.stack.first ?? ""), "\(io)")
        #expect(io.stack.contains("write_fsync_callback"), "\(io)")
        expectTimed(compute, like: own["compute"])
        expectTimed(io, like: own["io"])
        #expect(recorded.allSatisfy { $0.label == "glibloop" && !$0.unfinished }, "\(recorded)")
    }

    /// The toolchain's `docc preview` reads a requested file whole on its swift-nio event loop:
    /// `record` reported 0 stalls for it, its NIO-ELT threads never watched. Each big request is
    /// now a stall of an `NIO-ELT-*` loop with the file-reading frames on its stack.
    @Test(
        .enabled(
            if: RecordCrashTests.preloads && LoopTools.docc != nil && LoopTools.curl != nil,
            "needs the preload library, the toolchain's docc and curl"))
    func doccPreviewReadingABigFileOnItsEventLoopIsAStallThere() throws {
        let catalog = directory.path + "/Sample.docc"
        try FileManager.default.createDirectory(atPath: catalog, withIntermediateDirectories: true)
        _ = directory.write("Sample.docc/Sample.md", Array("# Sample\n\nA catalog to preview.\n".utf8))
        let output = directory.path + "/site"
        let port = try freePort()
        let trace = directory.path + "/docc.swtrace"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BinaryRun.binary)
        process.arguments = [
            "record", "-o", trace, "--", LoopTools.docc!, "preview", catalog, "--port", "\(port)", "--output-dir",
            output,
        ]
        let printed = Pipe()
        process.standardOutput = printed
        process.standardError = Pipe()
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        // Serving once it says so (the conversion first takes a few seconds).
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("Starting Local Preview Server") {
            let chunk = printed.fileHandleForReading.availableData
            try #require(!chunk.isEmpty, "docc preview ended: \(String(decoding: seen, as: UTF8.self))")
            seen.append(chunk)
        }
        // 200 MB in the site it serves, asked for twice.
        let big = Data(count: 200_000_000)
        try big.write(to: URL(fileURLWithPath: output + "/images/big.png"))
        for _ in 0..<2 {
            let fetch = try ChildRun(
                LoopTools.curl!,
                ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/images/big.png"],
                timeout: .seconds(60))
            #expect(fetch.output == "200", "\(fetch)")
        }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        let stalls = try exportedStalls(trace)
        let reads = stalls.filter { stall in
            stall.label.hasPrefix("NIO-ELT-") && stall.durationMs >= 50
                && stall.stack.contains { $0.contains("FileRequestHandler") }
        }
        #expect(reads.count >= 2, "\(stalls.map { ($0.label, $0.durationMs, $0.stack.prefix(3)) })")
        // The report says what was watched (the loops by name, as it found them) and which loop
        // each signature blocked: "0 stalls" and "nothing watched" no longer read the same.
        let report = try ChildRun(
            BinaryRun.binary, ["report", trace],
            environment: ProcessInfo.processInfo.environment.merging(["COLUMNS": "200"]) { $1 }, timeout: .seconds(60))
        #expect(report.exitCode == 0, "\(report)")
        let watched = report.output.split(separator: "\n").first { $0.hasPrefix("    watched: ") } ?? ""
        #expect(
            watched.contains("NIO-ELT-0-#0 (epoll loop)") || watched.contains("NIO-ELT-0-#1 (epoll loop)"), "\(watched)"
        )
        #expect(report.output.contains("   on NIO-ELT-0-#"), "\(report.output)")
        // The same in --json: the trace's watched loops, and each reading signature's executors.
        let json = try ChildRun(BinaryRun.binary, ["report", trace, "--json"], timeout: .seconds(60))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let traces = try #require(object["traces"] as? [[String: Any]])
        let hows = traces.flatMap { ($0["watched"] as? [[String: Any]] ?? []).compactMap { $0["how"] as? String } }
        #expect(hows.contains("epoll"), "\(hows)")
        let signatures = try #require(object["signatures"] as? [[String: Any]])
        let executors = signatures.flatMap {
            ($0["executors"] as? [[String: Any]] ?? []).compactMap { $0["executor"] as? String }
        }
        #expect(executors.contains { $0.hasPrefix("NIO-ELT-0-#") && $0.hasSuffix("(epoll loop)") }, "\(executors)")
    }

    /// A TCP port nobody listens on now (the kernel's pick for a socket bound to port 0).
    func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                try #require(bind(fd, socketAddress, length) == 0)
                try #require(getsockname(fd, socketAddress, &length) == 0)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Every wait the preload library wraps, each as a C program's only loop: 8 iterations of a
    /// 10 ms wait on a pipe, the fourth spinning 60 ms. One stall, of that iteration, in the mode
    /// named after the wait.
    @Test(
        .enabled(if: RecordCrashTests.preloads && LoopTools.onPath("cc") != nil, "needs the preload library and cc"),
        arguments: [
            ("epoll_wait", "epoll"), ("epoll_pwait", "epoll"), ("poll", "poll"), ("ppoll", "poll"),
            ("select", "select"), ("pselect", "select"),
        ])
    func eachWrappedWaitTimesItsLoop(wait: String, mode: String) throws {
        let source = directory.write(
            "waits.c",
            Array(
                """
                #define _GNU_SOURCE
                #include <poll.h>
                #include <stdio.h>
                #include <string.h>
                #include <sys/epoll.h>
                #include <sys/select.h>
                #include <time.h>
                #include <unistd.h>

                static double now_ms(void) {
                    struct timespec t;
                    clock_gettime(CLOCK_MONOTONIC, &t);
                    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
                }

                __attribute__((noinline)) void spin_in_iteration(void) {
                    double start = now_ms();
                    while (now_ms() - start < 60) {}
                }

                int main(int argc, char **argv) {
                    int ends[2];
                    pipe(ends);
                    int epfd = epoll_create1(0);
                    struct epoll_event event = {.events = EPOLLIN, .data.fd = ends[0]};
                    epoll_ctl(epfd, EPOLL_CTL_ADD, ends[0], &event);
                    double returned = 0;
                    for (int round = 0; round < 8; round++) {
                        if (round == 4) printf("iteration %.3f\\n", now_ms() - returned);
                        struct pollfd fds = {.fd = ends[0], .events = POLLIN};
                        struct timespec ten = {0, 10000000};
                        struct timeval tv = {0, 10000};
                        fd_set set;
                        FD_ZERO(&set);
                        FD_SET(ends[0], &set);
                        if (!strcmp(argv[1], "epoll_wait")) epoll_wait(epfd, &event, 1, 10);
                        else if (!strcmp(argv[1], "epoll_pwait")) epoll_pwait(epfd, &event, 1, 10, NULL);
                        else if (!strcmp(argv[1], "poll")) poll(&fds, 1, 10);
                        else if (!strcmp(argv[1], "ppoll")) ppoll(&fds, 1, &ten, NULL);
                        else if (!strcmp(argv[1], "select")) select(ends[0] + 1, &set, NULL, NULL, &tv);
                        else pselect(ends[0] + 1, &set, NULL, NULL, &ten, NULL);
                        returned = now_ms();
                        if (round == 3) spin_in_iteration();
                    }
                    return 0;
                }

                """.utf8))
        let executable = directory.path + "/waits-\(wait)"
        let build = try ChildRun(
            LoopTools.onPath("cc")!, ["-g", "-O1", "-o", executable, source], timeout: .seconds(120))
        try #require(build.exitCode == 0, "cc failed: \(build)")
        let (output, stalls) = try record([executable, wait], name: "waits-\(wait)")
        try #require(stalls.count == 1, "\(stalls)")
        // The program's own clock from the wait's return to the next wait's call: the stall is
        // that iteration, to within the few instructions between its stamps and the program's.
        let own = try #require(ownTimes(output)["iteration"], "\(output)")
        #expect(own >= 60 && abs(stalls[0].durationMs - own) < 0.5, "\(stalls[0]) vs \(own) ms")
        #expect(stalls[0].stack.contains("spin_in_iteration"), "\(stalls[0])")
        #expect(stalls[0].mode == mode, "\(stalls[0])")
    }

    /// A library loaded with RTLD_LOCAL that calls libdispatch, as a Python extension module can:
    /// libdispatch is then outside the global scope the preload's `dlsym(RTLD_NEXT)` searches,
    /// and its interposed dispatch calls must still reach it (they jumped to address 0).
    @Test(
        .enabled(
            if: RecordCrashTests.preloads && LoopTools.onPath("cc") != nil && LoopTools.swiftLibraries != nil,
            "needs the preload library, cc and the toolchain's libdispatch"))
    func aLibraryLoadedLocallyStillReachesLibdispatch() throws {
        let library = directory.write(
            "user.c",
            Array(
                """
                extern void *dispatch_get_global_queue(long, unsigned long);
                extern void dispatch_async_f(void *, void *, void (*)(void *));
                extern void *dispatch_semaphore_create(long);
                extern long dispatch_semaphore_signal(void *);
                extern long dispatch_semaphore_wait(void *, unsigned long long);

                static void work(void *semaphore) { dispatch_semaphore_signal(semaphore); }

                int run_on_pool(void) {
                    void *semaphore = dispatch_semaphore_create(0);
                    dispatch_async_f(dispatch_get_global_queue(0, 0), semaphore, work);
                    return (int)dispatch_semaphore_wait(semaphore, ~0ull);
                }

                """.utf8))
        let host = directory.write(
            "host.c",
            Array(
                """
                #include <dlfcn.h>
                #include <stdio.h>

                int main(int argc, char **argv) {
                    void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
                    if (handle == NULL) { fprintf(stderr, "%s\\n", dlerror()); return 2; }
                    int (*run)(void) = (int (*)(void))dlsym(handle, "run_on_pool");
                    printf("ran %d\\n", run());
                    return 0;
                }

                """.utf8))
        let libraries = LoopTools.swiftLibraries!
        let shared = directory.path + "/libuser.so"
        let executable = directory.path + "/local-host"
        for arguments in [
            ["-shared", "-fPIC", "-o", shared, library, "-L" + libraries, "-ldispatch", "-Wl,-rpath," + libraries],
            ["-o", executable, host, "-ldl"],
        ] {
            let build = try ChildRun(LoopTools.onPath("cc")!, arguments, timeout: .seconds(120))
            try #require(build.exitCode == 0, "cc failed: \(build)")
        }
        // As a child of the recorded command: the root loads the Swift part (and libdispatch
        // with it) into the global scope at once, a child that runs no loop never does. (The
        // shell root leaves no trace: nothing to read but the program's own run.)
        let run = try ChildRun(
            BinaryRun.binary,
            [
                "record", "-o", directory.path + "/local-host.swtrace", "--", "/bin/sh", "-c",
                "\"$0\" \"$@\"; exit $?", executable, shared,
            ], timeout: .seconds(120))
        #expect(run.exitCode == 0 && run.output.contains("ran 0"), "\(run)")
    }
}
