import Glibc
import StallwatchCore

/// A recording is a process tree: every process that inherits `STALLWATCH_TRACE=T` (and, under
/// `stallwatch record`, the preload library) records, each into its own file, none truncating
/// another's. The root writes `T`, as a lone app always did; any other process creates
/// `T.d/NAME-PID.swtrace` with `O_EXCL` (`ProcessTreeFiles`).
///
/// Which process is the root:
/// - `STALLWATCH_ROOT_PID` set: the process with that pid (a program the root `exec`s stays
///   the root; its children and theirs are not).
/// - else `STALLWATCH_RECORD_PID` set (`stallwatch record`'s own pid, which it cannot know of
///   its command before spawning it): the process whose parent is `record`.
/// - else (an app given `STALLWATCH_TRACE` by hand): this process.
/// A root that finds `STALLWATCH_ROOT_PID` unset claims the recording by setting it to its pid,
/// as early as it can (the preload library's constructor, before `main`), so that the
/// processes it starts know they are not the root. `STALLWATCH_CHILDREN=0`: only the root
/// records (`TraceRecorder.EnvironmentRequest` returns nil in the others).
enum ProcessTree {
    /// What `EnvironmentRequest` reads of the tree: whether process `pid`, whose parent is
    /// `parentPID`, is the root, and whether the root has yet to claim the recording.
    static func role(_ environment: [String: String], pid: pid_t, parentPID: pid_t) -> (isRoot: Bool, unclaimed: Bool) {
        if let root = processID(environment[StallwatchEnvironment.rootPID]) { return (root == pid, false) }
        if let record = processID(environment[StallwatchEnvironment.recordPID]) { return (parentPID == record, true) }
        return (true, true)
    }

    private static func processID(_ text: String?) -> pid_t? {
        guard let text, let pid = pid_t(text), pid > 0 else { return nil }
        return pid
    }

    /// Claims the recording for this process when it is the root and nobody has: sets
    /// `STALLWATCH_ROOT_PID` for the processes it starts. Call before the process starts any;
    /// `setenv` is not safe while another thread reads the environment, hence early.
    static func claim(_ request: TraceRecorder.EnvironmentRequest) {
        guard request.isRoot, request.rootUnclaimed else { return }
        setenv(StallwatchEnvironment.rootPID, String(getpid()), 1)
    }

    /// The file this process writes for `request`: the trace itself for the root; for any other
    /// process its own file under the trace's `.d` directory (made if missing), created here
    /// with `O_EXCL` so it never is another process's, and the same one however often this
    /// process asks (the preload library's recorder and then the app's own `MainLoop` recorder
    /// both write it). Any thread.
    static func file(for request: TraceRecorder.EnvironmentRequest) throws -> String {
        guard !request.isRoot else { return request.path }
        return try chosen.withLock { chosen throws -> String in
            let pid = getpid()
            // A process forked without exec chooses again: the file is its parent's.
            if let chosen, chosen.pid == pid { return chosen.path }
            let directory = ProcessTreeFiles.childDirectory(of: request.path)
            if mkdir(directory, 0o755) != 0 && errno != EEXIST {
                throw SystemError(call: "mkdir(\(directory))", errno: errno)
            }
            let program = programName()
            for attempt in 0..<64 {
                let path =
                    directory + "/" + ProcessTreeFiles.childFileName(program: program, pid: pid, attempt: attempt)
                let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                if fd >= 0 {
                    close(fd)
                    chosen = (pid, path)
                    return path
                }
                guard errno == EEXIST else { throw SystemError(call: "open(\(path))", errno: errno) }
                // This process's own already: the preload library's copy of this code made it
                // before the app's own `MainLoop` recorder took over. A file of an earlier
                // process with the same pid was last changed before this one started.
                if changedSinceThisProcessStarted(path) {
                    chosen = (pid, path)
                    return path
                }
            }
            throw SystemError(
                call: "open(\(directory)/\(ProcessTreeFiles.childFileName(program: program, pid: pid)))", errno: EEXIST)
        }
    }

    /// This process's file, once chosen (`file(for:)`), and the pid that chose it.
    private static let chosen = Locked<(pid: pid_t, path: String)?>(nil)

    /// Whether the file at `path` was last changed after this process started (with a second to
    /// spare for the clocks' rounding: a pid comes round again far later than that).
    private static func changedSinceThisProcessStarted(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0, let started = startedAt() else { return false }
        let changed = Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9
        return changed >= started - 1
    }

    /// When this process started, in seconds of CLOCK_REALTIME: field 22 of /proc/self/stat
    /// (clock ticks since boot) against CLOCK_BOOTTIME now.
    private static func startedAt() -> Double? {
        var buffer = [UInt8](repeating: 0, count: 1024)
        var ticks = 0.0
        let complete = ProcStat.read(ProcFile("/proc/self/stat"), into: &buffer, through: 22) { field, bytes in
            if field == 22 { ticks = Double(ProcStat.decimal(bytes)) }
        }
        guard complete else { return nil }
        var boot = timespec()
        var wall = timespec()
        clock_gettime(CLOCK_BOOTTIME, &boot)
        clock_gettime(CLOCK_REALTIME, &wall)
        let sinceBoot = Double(boot.tv_sec) + Double(boot.tv_nsec) / 1e9
        let now = Double(wall.tv_sec) + Double(wall.tv_nsec) / 1e9
        return now - (sinceBoot - ticks / Double(sysconf(Int32(_SC_CLK_TCK))))
    }

    /// The program's short name, as the trace header gives it (/proc/self/comm).
    private static func programName() -> String {
        ProcFile.name("/proc/self/comm") ?? ""
    }
}
