import Foundation
import StallwatchCore

#if canImport(Glibc)
    import Glibc
#endif

/// `stallwatch-bench preload`: what `stallwatch record` adds to a process of the recording that
/// is not a Swift program and runs no event loop (a build's shells, compilers and linkers):
/// `/bin/true` and `clang --version`, each plain, as such a process with the preload shim
/// preloaded (what `record` preloads), and with the Swift preload library preloaded directly (what
/// it preloads without the shim). The three run in turn, round after round; each figure is the
/// median over the rounds of a variant's difference to the plain run of the same round.
///
/// Wall time is the bench's, from spawn to reaping; CPU time (user + system) is the kernel's
/// account of the run (/usr/bin/time's own, the same in every variant, with the program's), which
/// moves less than wall time when other work shares the machine. Peak memory is /usr/bin/time's figure for the
/// program, which it forks from its own small process: a process the bench spawned directly
/// would start from the bench's own peak (the kernel carries it over to the child).
enum PreloadBenchmarks {
    static func run(rounds: Int) throws {
        let bench = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
        let shim = bench + "/" + StallwatchSymbols.preloadShim
        let library = bench + "/" + StallwatchSymbols.preloadLibrary
        guard access(shim, R_OK) == 0, access(library, R_OK) == 0 else {
            throw BenchError(
                "\(shim) or \(library) not found: build them first (swift build -c release --product "
                    + "StallwatchPreload; scripts/build-preload-shim.sh release)")
        }
        let time = "/usr/bin/time"
        guard access(time, X_OK) == 0 else { throw BenchError("\(time) not found (Debian's package time)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-preload-\(getpid())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // A process of a recording whose root is this bench (it claimed the recording): the
        // measured program is never the root, which loads the Swift part at once.
        let recorded = [
            "STALLWATCH_TRACE=\(directory)/recording.swtrace", "STALLWATCH_ROOT_PID=\(getpid())",
            "STALLWATCH_RECORD_PID=\(getpid())", "STALLWATCH_MESSAGES=\(directory)/messages",
        ]
        let variants: [(name: String, environment: [String])] = [
            ("plain", []), ("shim", recorded + ["LD_PRELOAD=\(shim)"]), ("swift", recorded + ["LD_PRELOAD=\(library)"]),
        ]
        var programs: [(name: String, command: [String])] = [("true", ["/bin/true"])]
        if let clang = onPath("clang") { programs.append(("clang_version", [clang, "--version"])) }
        for program in programs {
            var figures = [String: [Figure]]()
            for _ in 0..<rounds {
                for variant in variants {
                    // `env` in every variant: it sets the variables for the program alone (not
                    // for /usr/bin/time) and costs all three the same.
                    let figure = try measure(
                        time,
                        ["-f", "%M", "-o", directory + "/peak", "/usr/bin/env"] + variant.environment + program.command,
                        peakFile: directory + "/peak")
                    figures[variant.name, default: []].append(figure)
                }
            }
            let plain = figures["plain"]!
            let name = "preload.\(program.name)"
            Result(
                name: name + ".plain.ms", value: median(plain.map(\.milliseconds)), unit: "ms",
                fields: [("cpu_ms", median(plain.map(\.cpuMilliseconds))), ("rounds", Double(rounds))]
            ).printLine()
            Result(name: name + ".plain.peak", value: median(plain.map(\.mebibytes)), unit: "MiB").printLine()
            for (variant, goal) in [("shim", true), ("swift", false)] {
                let measured = figures[variant]!
                let added = zip(measured, plain).map { $0.milliseconds - $1.milliseconds }
                let addedCPU = zip(measured, plain).map { $0.cpuMilliseconds - $1.cpuMilliseconds }
                let addedMemory = zip(measured, plain).map { $0.mebibytes - $1.mebibytes }
                let plainMs = median(plain.map(\.milliseconds))
                Result(
                    name: "\(name).\(variant).added_ms", value: median(added), unit: "ms", peer: "plain",
                    peerValue: plainMs, goal: goal ? "< 1" : nil,
                    fields: [
                        ("time_ratio", median(measured.map(\.milliseconds)) / plainMs),
                        ("added_cpu_ms", median(addedCPU)),
                    ]
                ).printLine()
                Result(
                    name: "\(name).\(variant).added_mib", value: median(addedMemory), unit: "MiB", peer: "plain",
                    peerValue: median(plain.map(\.mebibytes)), goal: goal ? "< 1" : nil
                ).printLine()
            }
        }
    }

    struct Figure {
        var milliseconds: Double
        var cpuMilliseconds: Double
        var mebibytes: Double
    }

    /// Runs `executable arguments` with stdout and stderr to /dev/null and waits for it: the wall
    /// time, its CPU time (with its children's), and the peak /usr/bin/time wrote to `peakFile`
    /// (KiB).
    static func measure(_ executable: String, _ arguments: [String], peakFile: String) throws -> Figure {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // The bench's own variables, none of a recording's (the variants add them).
        let environment =
            ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("STALLWATCH_") && $0.key != "LD_PRELOAD" }
            .map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in environment { free(pointer) } }
        var pid: pid_t = 0
        let start = nowNanos()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environment)
        guard spawned == 0 else { throw BenchError("cannot run \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4: \(String(cString: strerror(errno)))") }
        }
        let milliseconds = Double(nowNanos() - start) / 1e6
        guard status == 0 else { throw BenchError("\(arguments.joined(separator: " ")) failed (status \(status))") }
        let text = try String(contentsOfFile: peakFile, encoding: .utf8)
        guard let kibibytes = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("no peak in \(peakFile): \(text)")
        }
        let cpu = Self.milliseconds(usage.ru_utime) + Self.milliseconds(usage.ru_stime)
        return Figure(milliseconds: milliseconds, cpuMilliseconds: cpu, mebibytes: kibibytes / 1024)
    }

    private static func milliseconds(_ time: timeval) -> Double {
        Double(time.tv_sec) * 1e3 + Double(time.tv_usec) / 1e3
    }

    private static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH", default: "/usr/bin:/bin"]
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }
}
