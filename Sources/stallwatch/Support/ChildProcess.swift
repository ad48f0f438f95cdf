#if canImport(Glibc)
    import Glibc
#endif

/// Spawns a command and waits for it. While it runs, the signals that ask a process to end or
/// to act (SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2) are passed on to it, so that
/// stopping `record` stops the program too, and its death is reported as its own; it is never
/// left running. A SIGINT or SIGQUIT the terminal sent (to the whole process group, the
/// command included) is not passed on again: the command has it already.
enum ChildProcess {
    /// The signals passed on to the command.
    static let forwarded: [Int32] = [SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2]

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
        // The command starts with the default action for each of them and none blocked.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in forwarded { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        // Blocked until the command's pid is known, so none arrives with nowhere to go.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for signal in forwarded { sigaddset(&blocked, signal) }
        var previousMask = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previousMask)
        var previous: [sigaction] = []
        for signal in forwarded {
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = forwardSignal
            action.sa_flags = SA_SIGINFO | SA_RESTART
            sigemptyset(&action.sa_mask)
            var old = sigaction()
            sigaction(signal, &action, &old)
            previous.append(old)
        }
        defer {
            childToSignal = 0
            for (signal, var old) in zip(forwarded, previous) { sigaction(signal, &old, nil) }
            pthread_sigmask(SIG_SETMASK, &previousMask, nil)
        }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, command[0], nil, &attributes, arguments, environmentStrings)
        if spawned != 0 {
            let code: Int32 = spawned == ENOENT ? 127 : 126
            throw CommandFailure(
                "cannot run '\(command[0])': \(String(cString: strerror(spawned)))", exitCode: ExitCode(code))
        }
        childToSignal = pid
        pthread_sigmask(SIG_UNBLOCK, &blocked, nil)
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

/// The command `ChildProcess.run` waits for (0: none). Written with the forwarded signals
/// blocked, read by their handler.
nonisolated(unsafe) private var childToSignal: pid_t = 0

/// The handler of the forwarded signals: passes one on to the command, unless the terminal sent
/// it (`si_code` is not `SI_USER`/`SI_QUEUE` for a key like Ctrl-C: the whole foreground process
/// group, the command included, got it). Async-signal-safe: a load and `kill`.
private func forwardSignal(_ signal: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _: UnsafeMutableRawPointer?) {
    let sentByAProcess = info.map { $0.pointee.si_code == SI_USER || $0.pointee.si_code == SI_QUEUE } ?? true
    guard childToSignal > 0, sentByAProcess || (signal != SIGINT && signal != SIGQUIT) else { return }
    kill(childToSignal, signal)
}
