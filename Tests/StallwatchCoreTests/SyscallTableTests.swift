// Syscall numbers are the x86_64 ones from the kernel headers.

import Foundation
import Testing

@testable import StallwatchCore

@Suite struct SyscallTableTests {
    @Test(arguments: [
        (Int32(0), "read"), (1, "write"), (2, "open"), (3, "close"), (4, "stat"), (7, "poll"),
        (9, "mmap"), (11, "munmap"), (16, "ioctl"), (17, "pread64"), (18, "pwrite64"),
        (24, "sched_yield"),
        (26, "msync"), (28, "madvise"), (35, "nanosleep"), (61, "wait4"), (72, "fcntl"), (73, "flock"),
        (74, "fsync"), (75, "fdatasync"), (202, "futex"), (217, "getdents64"), (230, "clock_nanosleep"),
        (232, "epoll_wait"), (247, "waitid"), (257, "openat"), (262, "newfstatat"), (270, "pselect6"),
        (277, "sync_file_range"), (281, "epoll_pwait"), (306, "syncfs"), (332, "statx"),
        (426, "io_uring_enter"), (441, "epoll_pwait2"), (449, "futex_waitv"),
    ])
    func spotChecks(number: Int32, name: String) {
        #expect(SyscallTable.name(for: number) == name)
        #expect(SyscallTable.number(for: name) == number)
    }

    @Test func unassignedAndOutOfRangeNumbersHaveNoName() {
        #expect(SyscallTable.name(for: -1) == nil)
        #expect(SyscallTable.name(for: 335) == nil)  // the gap before 424
        #expect(SyscallTable.name(for: SyscallTable.highestNumber + 1) == nil)
        #expect(SyscallTable.name(for: .max) == nil)
        #expect(SyscallTable.number(for: "fsyncc") == nil)
    }

    @Test func matchesTheHeaderOnThisMachine() throws {
        let path = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
        guard let header = try? String(contentsOfFile: path, encoding: .utf8) else { return }
        var count = 0
        for line in header.split(separator: "\n") where line.hasPrefix("#define __NR_") {
            let parts = line.split(separator: " ")
            let name = String(parts[1].dropFirst("__NR_".count))
            let number = try #require(Int32(parts[2]))
            #expect(SyscallTable.name(for: number) == name)
            count += 1
        }
        #expect(count > 300)
    }
}
