// Each kind of main-thread stall from the /proc table gets its category and a useful reason.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct CategoryTests {
    let classifier = Classifier()

    @Test func everyCategoryIsAtItsOrdinal() {
        #expect(StallCategory.count == StallCategory.allCases.count)
        // A breakdown has a lane for every category (its figures are fixed-size vectors), and
        // lists every category, and no more.
        #expect(StallCategory.count <= SIMD8<UInt64>.scalarCount)
        var weigher = StallBreakdown.Weigher()
        weigher.add(.other, "nanosleep", units: 3)
        let breakdown = weigher.breakdown(totalNanos: 3, sampleCount: 1)
        #expect(breakdown.nanos.count == StallCategory.count && breakdown.shares.count == StallCategory.count)
        #expect(breakdown.nanos[.other] == 3 && breakdown.shares[.other] == 1)
        #expect(breakdown.categoryNanos.wrappedSum() == 3)
        for (index, category) in StallCategory.allCases.enumerated() {
            #expect(category.ordinal == index)
            #expect(StallCategory(ordinal: index) == category)
        }
    }

    @Test func computeIsNamedAfterTheInnermostAppFunction() {
        let verdict = classifier.classify(Fixture.compute)
        #expect(verdict.category == .compute)
        #expect(verdict.reason == "FeedApp.ImageResizer.resize(_: FeedApp.Bitmap, to: Swift.Int)")
        #expect(verdict.ruleName == "running")
        #expect(verdict.frameIndex == 1)
    }

    @Test func computeWithoutSymbolsSaysRunning() {
        let sample = Sample(time: 0, frames: [Frame(address: 0x5610_4a41_2340)], state: .running)
        #expect(
            classifier.classify(sample)
                == Classification(category: .compute, reason: "running", ruleName: "running"))
    }

    @Test func computeInAClosureIsNamedAfterItsFunction() {
        let sample = Sample(
            time: 0,
            frames: stack(
                frame(
                    "closure #2 (Swift.Int) -> Swift.Bool in FeedApp.Ranker.rank(_: [FeedApp.Post]) -> [FeedApp.Post]",
                    in: Lib.app)),
            state: .running)
        #expect(classifier.classify(sample).reason == "FeedApp.Ranker.rank(_: [FeedApp.Post])")
    }

    @Test func pipeReadIsIO() {
        let verdict = classifier.classify(Fixture.pipeRead)
        #expect(verdict.category == .io)
        #expect(verdict.reason == "read")
        #expect(verdict.ruleName == "io-syscall")
    }

    @Test func fsyncInDiskSleepIsIOEvenWithoutABacktrace() {
        let verdict = classifier.classify(Fixture.fsyncTimedOut)
        #expect(verdict == Classification(category: .io, reason: "fsync", ruleName: "io-syscall"))
    }

    @Test func diskSleepOutsideASyscallIsAPageFault() {
        // Blocked in D outside any syscall: the thread waits for a page it faulted on.
        let sample = Sample(time: 0, state: .diskSleep, syscall: -1, wchan: "folio_wait_bit_common")
        #expect(
            classifier.classify(sample) == Classification(category: .io, reason: "page fault", ruleName: "fault-wait"))
    }

    @Test func diskSleepInAnUnknownSyscallIsIONamedByWaitChannel() {
        let sample = Sample(time: 0, state: .diskSleep, syscall: 999, wchan: "folio_wait_bit_common")
        #expect(
            classifier.classify(sample)
                == Classification(category: .io, reason: "folio_wait_bit_common", ruleName: "disk-sleep"))
    }

    @Test(arguments: [
        (Int32(17), "pread64"), (18, "pwrite64"), (19, "readv"), (20, "writev"), (75, "fdatasync"),
        (257, "openat"), (2, "open"), (4, "stat"), (262, "newfstatat"), (332, "statx"),
        (45, "recvfrom"), (47, "recvmsg"), (44, "sendto"), (46, "sendmsg"), (43, "accept"),
        (288, "accept4"), (42, "connect"), (7, "poll"), (271, "ppoll"), (23, "select"),
        (270, "pselect6"), (232, "epoll_wait"), (281, "epoll_pwait"), (441, "epoll_pwait2"),
        (277, "sync_file_range"), (306, "syncfs"), (26, "msync"), (426, "io_uring_enter"),
        (16, "ioctl"), (217, "getdents64"), (316, "renameat2"), (263, "unlinkat"),
        (77, "ftruncate"), (285, "fallocate"),
    ])
    func ioSyscallsAreIO(number: Int32, name: String) {
        let sample = Sample(
            time: 0, frames: stack(frame("FeedApp.Sync.step() -> ()", in: Lib.app)),
            state: .sleeping, syscall: number, wchan: "wait_woken")
        #expect(
            classifier.classify(sample)
                == Classification(category: .io, reason: name, ruleName: "io-syscall"))
    }

    @Test func nsLockIsLockWaitNamedAfterTheAPI() {
        let verdict = classifier.classify(Fixture.nsLock)
        #expect(verdict.category == .lockWait)
        #expect(verdict.reason == "Foundation.NSLock.lock()")
        #expect(verdict.ruleName == "foundation-lock")
        #expect(verdict.frameIndex == 3)
    }

    @Test func pthreadMutexIsLockWait() {
        let verdict = classifier.classify(Fixture.pthreadMutex)
        #expect(verdict.category == .lockWait)
        #expect(verdict.reason == "pthread_mutex_lock")
        #expect(verdict.ruleName == "pthread-mutex")
    }

    @Test func conditionVariableIsLockWait() {
        let verdict = classifier.classify(Fixture.condWait)
        #expect(
            verdict
                == Classification(
                    category: .lockWait, reason: "pthread_cond_wait", ruleName: "pthread-cond", frameIndex: 1)
        )
    }

    @Test func synchronizationMutexIsLockWait() {
        let verdict = classifier.classify(Fixture.syncMutex)
        #expect(verdict.category == .lockWait)
        #expect(verdict.reason == "Synchronization.Mutex")
    }

    @Test func dispatchSemaphoreAndGroupWaitsAreLockWait() {
        for api in ["Dispatch.DispatchSemaphore.wait() -> ()", "Dispatch.DispatchGroup.wait() -> ()"] {
            let sample = Sample(
                time: 0,
                frames: stack(
                    frame("syscall", in: Lib.libc),
                    frame("_dispatch_sema4_wait", in: Lib.dispatch),
                    frame(api, in: Lib.dispatch)),
                state: .sleeping, syscall: 202, wchan: "futex_do_wait")
            let verdict = classifier.classify(sample)
            #expect(verdict.category == .lockWait)
            #expect(verdict.reason == String(api.prefix { $0 != " " }))
        }
    }

    @Test func rwlockAndSemaphoreAreLockWait() {
        let rwlock = Sample(
            time: 0,
            frames: stack(
                frame("__futex_abstimed_wait_common", in: Lib.libc),
                frame("__pthread_rwlock_wrlock", in: Lib.libc)),
            state: .sleeping, syscall: 202)
        #expect(classifier.classify(rwlock).reason == "pthread_rwlock_wrlock")
        let semaphore = Sample(
            time: 0,
            frames: stack(
                frame("__futex_abstimed_wait_common", in: Lib.libc),
                frame("__new_sem_wait_slow64", in: Lib.libc), frame("sem_wait@@GLIBC_2.34", in: Lib.libc)),
            state: .sleeping, syscall: 202)
        #expect(
            classifier.classify(semaphore)
                == Classification(
                    category: .lockWait, reason: "sem_wait", ruleName: "semaphore", frameIndex: 2))
    }

    @Test func futexWithoutABacktraceIsLockWait() {
        let sample = Sample(
            time: 0, state: .sleeping, syscall: 202, wchan: "futex_do_wait", captureTimedOut: true)
        #expect(
            classifier.classify(sample)
                == Classification(category: .lockWait, reason: "futex", ruleName: "futex-syscall"))
    }

    @Test func slowSQLiteQueryIsDatabaseNamedAfterTheAPICall() {
        let verdict = classifier.classify(Fixture.sqliteQuery)
        #expect(
            verdict
                == Classification(
                    category: .database, reason: "sqlite3_step", ruleName: "sqlite-module", frameIndex: 2))
    }

    @Test func sqliteLinkedIntoTheAppIsDatabaseBySymbol() {
        let sample = Sample(
            time: 0,
            frames: stack(frame("sqlite3VdbeExec", in: Lib.app), frame("sqlite3_exec", in: Lib.app)),
            state: .running)
        #expect(
            classifier.classify(sample)
                == Classification(
                    category: .database, reason: "sqlite3_exec", ruleName: "sqlite-symbol", frameIndex: 1))
    }

    @Test func sleepIsOther() {
        #expect(
            classifier.classify(Fixture.sleep)
                == Classification(category: .other, reason: "clock_nanosleep", ruleName: "sleep-syscall"))
        let nanosleep = Sample(time: 0, state: .sleeping, syscall: 35, wchan: "hrtimer_nanosleep")
        #expect(classifier.classify(nanosleep).reason == "nanosleep")
    }

    @Test func idleInANestedLoopIsOtherIdle() {
        let verdict = classifier.classify(Fixture.nestedIdle)
        #expect(
            verdict
                == Classification(category: .other, reason: "idle", ruleName: "idle-wait", frameIndex: 1))
    }

    @Test func unknownSyscallFallsBackToOtherNamedBySyscall() {
        let sample = Sample(time: 0, state: .sleeping, syscall: 61, wchan: "do_wait")
        #expect(
            classifier.classify(sample)
                == Classification(category: .other, reason: "wait4", ruleName: "fallback"))
        let nothing = Sample(time: 0, state: .unknown)
        #expect(
            classifier.classify(nothing)
                == Classification(category: .other, reason: "unknown", ruleName: "fallback"))
    }
}
