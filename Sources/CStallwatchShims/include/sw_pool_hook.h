// Swift Concurrency's global enqueue hook, for the heartbeat monitor's watch of the cooperative
// pool (docs/watchdog.md, "The Swift Concurrency pool"). The hook runs on every thread that
// enqueues a job on the global concurrent executor: it counts the job and, only when a watchdog
// is parked waiting for the pool to get work, wakes it. Nothing else, so a busy pool pays one
// atomic add and one load per job, and an idle pool wakes nobody.
#pragma once

#include <stdint.h>

/// Installs the hook into `swift_task_enqueueGlobal_hook` (found with dlsym; chains to a hook
/// already there), once per process. 0, or -1 when the runtime exports no such hook. Any thread.
int sw_pool_hook_install(void);

/// `stallwatch-bench pool` only: takes the hook out of the slot (0) or puts it back (1), so one
/// run can time jobs with and without it. Not while a watchdog is parked.
void sw_pool_hook_set_enabled_for_benchmark(int enabled);

/// Jobs enqueued on the global executor since the hook was installed. Any thread.
uint64_t sw_pool_enqueued(void);

/// Watchdog: sleeps until a job is enqueued after `seen` jobs were counted, `sw_pool_wake` is
/// called, or `timeout_ns` passes (negative: no timeout). Returns at once if the count already
/// moved past `seen`.
void sw_pool_park(uint64_t seen, int64_t timeout_ns);

/// Wakes every parked watchdog (a monitor stops, or has something new to watch). Any thread.
void sw_pool_wake(void);

/// The calling thread's name (prctl PR_GET_NAME: at most 15 bytes and a NUL) into `name`,
/// which holds 16 bytes. Any thread.
void sw_thread_name(char name[16]);
