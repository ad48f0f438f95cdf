// The platform this module supports, stated once: Linux on x86_64.
//
// The run loop is built on epoll and eventfd, the watchdog reads /proc/self/task, the sampler
// takes the interrupted PC from the x86_64 `ucontext` (REG_RIP), the stack scanner decodes x86_64
// call instructions, and the classifier's syscall numbers are x86_64's. docs/watchdog.md
// ("Porting") lists the files an aarch64 port replaces; everything else is portable.

import StallwatchCore

#if !os(Linux) || !arch(x86_64)
    #error("Stallwatch supports Linux on x86_64 only (see docs/watchdog.md, Porting)")
#endif

/// The platform the process runs on, as trace files record it. Any thread.
enum Platform {
    /// The CPU architecture's name (`uname -m` spelling), written into every trace's
    /// `platform` record: the one whose syscall numbers the samples carry and the classifier
    /// reads (`SyscallTable`, which owns the name).
    static let architecture = SyscallTable.architecture
}
