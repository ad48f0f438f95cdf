#if canImport(Glibc)
    import Glibc
#endif

/// Spawns a command and waits for it, ignoring SIGINT and SIGQUIT meanwhile (as `time` and
/// shells do) so a Ctrl-C reaches the child and its death is reported, not ours.
enum ChildProcess {
    static func run(_ command: [String], environment: [String: String]) throws(CommandFailure) -> ExitCode {
        let arguments = command.map { strdup($0) } + [nil]
        let environmentStrings = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in arguments { free(pointer) }
            for pointer in environmentStrings { free(pointer) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGQUIT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        let previousInterrupt = signal(SIGINT, SIG_IGN)
        let previousQuit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, previousInterrupt)
            signal(SIGQUIT, previousQuit)
        }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, command[0], nil, &attributes, arguments, environmentStrings)
        if spawned != 0 {
            let code: Int32 = spawned == ENOENT ? 127 : 126
            throw CommandFailure(
                "cannot run '\(command[0])': \(String(cString: strerror(spawned)))", exitCode: ExitCode(code))
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else {
                throw CommandFailure("cannot wait for '\(command[0])': \(String(cString: strerror(errno)))")
            }
        }
        let signalNumber = status & 0x7F
        return signalNumber == 0 ? ExitCode((status >> 8) & 0xFF) : ExitCode(128 + signalNumber)
    }
}
