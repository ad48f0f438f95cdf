// The built-in rules, written in the rules-file format and decoded by the same code that
// reads users' files, so the documented format is exactly what the product runs on.
// docs/categories.md explains each rule; keep the two in step.

import StallwatchCore

extension Classifier {
    /// The built-in rules (decoded from `builtinRulesJSON`).
    public static let builtinRules: [ClassificationRule] = {
        do {
            return try RulesFile.decode(json: builtinRulesJSON, source: "<built-in>")
        } catch {
            preconditionFailure("the built-in rules do not decode: \(error)")
        }
    }()

    /// The built-in rules in rules-file form: a complete, working example of the format.
    public static let builtinRulesJSON = #"""
        {
          "version": 1,
          "rules": [
            {
              "name": "idle-wait",
              "category": "other",
              "reason": "idle",
              "match": { "symbolContains": "\#(StallwatchSymbols.idleWait)", "maxDepth": 6 }
            },
            {
              "name": "nio-idle-wait",
              "category": "other",
              "reason": "idle",
              "match": {
                "symbolContains": "\#(StallwatchSymbols.nioIdleWait)",
                "syscall": ["epoll_wait", "epoll_pwait", "epoll_pwait2"]
              }
            },
            {
              "name": "dispatch-worker-idle",
              "level": "stack",
              "category": "other",
              "reason": "idle",
              "match": { "symbol": "_dispatch_worker_thread", "syscall": ["futex"], "maxDepth": 6 }
            },
            {
              "name": "sqlite-module",
              "category": "database",
              "reasonFrom": "matchOutermost",
              "match": { "module": "libsqlite3" }
            },
            {
              "name": "sqlite-symbol",
              "category": "database",
              "reasonFrom": "matchOutermost",
              "match": { "symbolPrefix": "sqlite3" }
            },
            {
              "name": "foundation-lock",
              "category": "lockWait",
              "reasonFrom": "matchOutermost",
              "match": {
                "symbolPrefix": [
                  "Foundation.NSLock.lock", "Foundation.NSRecursiveLock.lock",
                  "Foundation.NSConditionLock.lock", "Foundation.NSCondition.lock",
                  "Foundation.NSCondition.wait"
                ]
              }
            },
            {
              "name": "dispatch-wait",
              "category": "lockWait",
              "reasonFrom": "matchOutermost",
              "match": {
                "symbolPrefix": ["Dispatch.DispatchSemaphore.wait", "Dispatch.DispatchGroup.wait"],
                "symbol": [
                  "dispatch_semaphore_wait", "_dispatch_semaphore_wait_slow",
                  "dispatch_group_wait", "_dispatch_group_wait_slow",
                  "dispatch_block_wait", "_dispatch_sema4_wait", "_dispatch_sema4_timedwait"
                ]
              }
            },
            {
              "name": "dispatch-sync-wait",
              "category": "lockWait",
              "reason": "dispatch_sync",
              "match": {
                "symbol": [
                  "__DISPATCH_WAIT_FOR_QUEUE__", "_dispatch_sync_f_slow", "_dispatch_sync_wait",
                  "_dispatch_async_and_wait_f_slow", "_dispatch_wait_for_enqueuer"
                ]
              }
            },
            {
              "name": "synchronization-mutex",
              "category": "lockWait",
              "reason": "Synchronization.Mutex",
              "match": { "symbolPrefix": "Synchronization._MutexHandle._lock" }
            },
            {
              "name": "pthread-mutex",
              "category": "lockWait",
              "reasonFrom": "matchOutermost",
              "match": {
                "symbol": [
                  "pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
                  "lll_lock_wait", "lll_lock_wait_private"
                ]
              }
            },
            {
              "name": "pthread-cond",
              "category": "lockWait",
              "reasonFrom": "matchOutermost",
              "match": {
                "symbol": [
                  "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_timedwait64",
                  "pthread_cond_clockwait", "pthread_cond_clockwait64", "pthread_cond_wait_common"
                ]
              }
            },
            {
              "name": "pthread-rwlock",
              "category": "lockWait",
              "reasonFrom": "matchOutermost",
              "match": {
                "symbolPrefix": [
                  "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock",
                  "pthread_rwlock_timedwrlock", "pthread_rwlock_clockrdlock",
                  "pthread_rwlock_clockwrlock"
                ]
              }
            },
            {
              "name": "semaphore",
              "category": "lockWait",
              "reasonFrom": "matchOutermost",
              "match": {
                "symbolPrefix": ["sem_wait", "sem_timedwait", "sem_clockwait", "new_sem_wait"]
              }
            },
            {
              "name": "thread-join",
              "category": "lockWait",
              "reasonFrom": "matchOutermost",
              "match": { "symbolPrefix": ["pthread_join", "pthread_timedjoin", "pthread_clockjoin"] }
            },
            {
              "name": "futex-wait-frame",
              "category": "lockWait",
              "reason": "futex",
              "match": {
                "symbolPrefix": ["futex_abstimed_wait", "futex_wait", "lll_futex_wait"],
                "maxDepth": 4
              }
            },
            {
              "name": "cpu-wait",
              "category": "other",
              "reason": "waiting for a CPU",
              "match": { "wait": ["cpu"] }
            },
            {
              "name": "futex-syscall",
              "category": "lockWait",
              "match": { "syscall": ["futex", "futex_waitv"] }
            },
            {
              "name": "file-lock-syscall",
              "category": "lockWait",
              "match": { "syscall": ["flock", "fcntl"] }
            },
            {
              "name": "io-syscall",
              "category": "io",
              "match": {
                "syscall": [
                  "read", "write", "pread64", "pwrite64", "readv", "writev",
                  "preadv", "pwritev", "preadv2", "pwritev2",
                  "fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "msync",
                  "open", "openat", "openat2", "creat", "close", "close_range",
                  "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs",
                  "access", "faccessat", "faccessat2", "readlink", "readlinkat",
                  "getdents", "getdents64", "lseek",
                  "rename", "renameat", "renameat2", "unlink", "unlinkat",
                  "mkdir", "mkdirat", "rmdir", "link", "linkat", "symlink", "symlinkat",
                  "truncate", "ftruncate", "fallocate", "fadvise64", "readahead",
                  "sendfile", "splice", "tee", "copy_file_range",
                  "getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr", "fsetxattr",
                  "recvfrom", "recvmsg", "recvmmsg", "sendto", "sendmsg", "sendmmsg",
                  "accept", "accept4", "connect", "shutdown",
                  "poll", "ppoll", "select", "pselect6",
                  "epoll_wait", "epoll_pwait", "epoll_pwait2",
                  "io_uring_enter", "io_getevents", "io_pgetevents", "io_submit", "ioctl"
                ]
              }
            },
            {
              "name": "sleep-syscall",
              "category": "other",
              "match": { "syscall": ["nanosleep", "clock_nanosleep"] }
            },
            {
              "name": "major-fault",
              "category": "io",
              "reason": "page fault",
              "match": { "minDelta": { "majorFaults": 1 } }
            },
            {
              "name": "fault-wait",
              "category": "io",
              "reason": "page fault",
              "match": { "state": "diskSleep", "syscall": "none" }
            },
            {
              "name": "fault-read",
              "category": "io",
              "reason": "page fault",
              "match": { "syscall": "none", "minDelta": { "readBytes": 1 } }
            },
            {
              "name": "fault-in",
              "category": "io",
              "reason": "page fault",
              "match": { "state": "running", "wait": "pageFault" }
            },
            {
              "name": "kernel-read",
              "category": "io",
              "reason": "read",
              "match": { "cpu": "system", "minDelta": { "readBytes": 1 } }
            },
            {
              "name": "kernel-write",
              "category": "io",
              "reason": "write",
              "match": { "cpu": "system", "minDelta": { "writeBytes": 1 } }
            },
            {
              "name": "in-io-syscall",
              "category": "io",
              "reasonFrom": "wait",
              "match": { "state": "running", "wait": ["file", "socket"] }
            },
            {
              "name": "io-wrapper-frame",
              "level": "state",
              "category": "io",
              "match": {
                "symbol": [
                  "read", "write", "pread", "pread64", "pwrite", "pwrite64", "readv", "writev",
                  "preadv", "preadv64", "pwritev", "pwritev64", "preadv2", "pwritev2",
                  "fsync", "fdatasync", "syncfs", "sync_file_range", "msync",
                  "open", "open64", "openat", "openat64", "close",
                  "stat", "stat64", "fstat", "fstat64", "lstat", "lstat64",
                  "fstatat", "fstatat64", "statx", "getdents64", "lseek", "lseek64",
                  "rename", "renameat", "unlink", "unlinkat",
                  "ftruncate", "ftruncate64", "fallocate", "fallocate64", "copy_file_range",
                  "recv", "recvfrom", "recvmsg", "send", "sendto", "sendmsg",
                  "accept", "accept4", "connect", "poll", "ppoll", "select", "pselect",
                  "epoll_wait", "epoll_pwait", "io_uring_enter", "ioctl"
                ],
                "maxDepth": 4
              }
            },
            {
              "name": "sleep-wrapper-frame",
              "level": "state",
              "category": "other",
              "match": {
                "symbol": ["nanosleep", "clock_nanosleep", "usleep", "sleep"],
                "maxDepth": 4
              }
            },
            {
              "name": "disk-sleep",
              "category": "io",
              "match": { "state": "diskSleep" }
            },
            {
              "name": "running",
              "category": "compute",
              "reasonFrom": "appFrame",
              "match": { "state": "running" }
            }
          ]
        }
        """#
}
