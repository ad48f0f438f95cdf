// CStallwatchSelfSample: the loop thread samples itself, on time, without privileges.
//
// Why: the watchdog thread detects a stall when it wakes at the callout's deadline. As an
// ordinary user on a busy machine it can wake milliseconds late (no SCHED_FIFO), and so does
// every stack it then asks for. Here the kernel interrupts the loop thread itself instead.
//
// How: a perf_event task-clock event on the loop thread, counting only its user-mode CPU time
// (exclude_kernel=1, allowed unprivileged at perf_event_paranoid <= 2), overflows and, through
// fcntl O_ASYNC / F_SETOWN_EX / F_SETSIG, sends the self-sampling signal to the loop thread. The
// handler, on the loop thread, reads the callout clock the loop publishes (sw_callout_clock): if
// one callout has run past the budget, it unwinds its own stack (libunwind, as the sampling
// handler does) into a slot, at most once per sample interval. Then it sets the next tick
// (PERF_EVENT_IOC_PERIOD) half-way to the next moment a capture could be due, never sooner than
// a floor: a loop of short callouts ticks about twice per budget, and the tick after a deadline
// comes within one floor of it. (A tick costs ~40 us in this VM, 2 us on bare metal: a fixed
// fine period would cost several per cent.) The watchdog only collects the slots (sw_self_take).
//
// Never in a system call: the event counts user-mode time only, so it overflows only while the
// thread runs user code, and the signal is delivered on the return from that very interrupt. A
// thread parked in nanosleep/epoll_wait/poll (which a handler would cut short with EINTR) or busy
// inside the kernel takes no tick; the watchdog's own paths cover those. An idle loop takes none.
//
// A standard signal (SIGSTKFLT by default, unused on Linux), not a real-time one: ticks that find
// one pending merge into it, so a thread that blocks the signal for a while queues at most one,
// and the kernel never falls back to SIGIO (which it does when an RT signal queue is full).
//
// Order of calls:
//   1. sw_self_install(signo)               once per process (after sw_sampler_install)
//   2. sw_self_open(tid, clock, ...)        any thread; the event starts disabled
//   3. sw_self_enable(handle)               on or after the loop thread unblocked the signal
//   4. sw_self_take(handle, ...)            the watchdog, as often as it likes
//   5. sw_self_close(handle)
#pragma once

#include <stdint.h>

#include "CStallwatchSampler.h"

#ifdef __cplusplus
extern "C" {
#endif

/// What a loop publishes about the callout it runs, in C memory so the self-sampling handler (on
/// the loop thread) can read it. The loop writes it; the watchdog and the handler read it, and
/// the watchdog writes `stalled_sequence`; always through the functions below (atomic accesses).
typedef struct sw_callout_clock {
    uint64_t sequence;          ///< odd while a callout runs; each callout adds 2
    uint64_t start_cycles;      ///< sw_cycles() when the running callout began
    uint64_t descriptor;        ///< the callout's identity: a CalloutDescriptor's raw value
    uint64_t label;             ///< and its label and file, packed static strings
    uint64_t file;
    uint64_t stalled_sequence;  ///< the callout a watchdog declared a stall and is timing
} sw_callout_clock;

#define SW_CLOCK_FIELD(name)                                                                              \
    static inline uint64_t sw_clock_##name(const sw_callout_clock *c) {                                  \
        return __atomic_load_n(&c->name, __ATOMIC_ACQUIRE);                                               \
    }                                                                                                     \
    static inline uint64_t sw_clock_##name##_relaxed(const sw_callout_clock *c) {                        \
        return __atomic_load_n(&c->name, __ATOMIC_RELAXED);                                               \
    }                                                                                                     \
    static inline void sw_clock_set_##name(sw_callout_clock *c, uint64_t value) {                        \
        __atomic_store_n(&c->name, value, __ATOMIC_RELEASE);                                              \
    }                                                                                                     \
    static inline void sw_clock_set_##name##_relaxed(sw_callout_clock *c, uint64_t value) {              \
        __atomic_store_n(&c->name, value, __ATOMIC_RELAXED);                                              \
    }
SW_CLOCK_FIELD(sequence)
SW_CLOCK_FIELD(start_cycles)
SW_CLOCK_FIELD(descriptor)
SW_CLOCK_FIELD(label)
SW_CLOCK_FIELD(file)
SW_CLOCK_FIELD(stalled_sequence)
#undef SW_CLOCK_FIELD

/// Error codes (negative), besides the sampler's.
#define SW_SELF_ENOSLOT (-20)   ///< every one of the SW_SELF_MAX_THREADS handles is in use
#define SW_SELF_EPERF (-21)     ///< perf_event_open failed (sys_errno says why: EACCES at paranoid 3)
#define SW_SELF_EFCNTL (-22)    ///< routing the overflow signal to the thread failed
#define SW_SELF_EINUSE (-23)    ///< the self-sampling signal has a handler someone else installed

/// Threads that can self-sample at once (one per watched loop).
#define SW_SELF_MAX_THREADS 8

/// One stack the handler took: frames[0] is the interrupted instruction, the rest return
/// addresses, innermost first (the handler's own frames removed).
typedef struct sw_self_capture {
    uint64_t sequence;      ///< the callout (clock sequence) it belongs to
    uint64_t start_cycles;  ///< and that callout's start and identity, as the clock showed them
    uint64_t descriptor;
    uint64_t label;
    uint64_t file;
    uint32_t index;         ///< 0 for the first capture of that callout's stall, then 1, 2, …
    int32_t frame_count;
    int32_t truncated;      ///< 1 if the stack was deeper than SW_SAMPLER_MAX_FRAMES
    int32_t reserved;
    int64_t time_ns;        ///< CLOCK_MONOTONIC at the handler's entry: when the stack was this
    int64_t ready_ns;       ///< when the unwind finished
    uintptr_t frames[SW_SAMPLER_MAX_FRAMES];
    sw_async_chain chain;   ///< the async callers, read by the handler (CStallwatchAsyncChain.h)
} sw_self_capture;

/// Counters of one handle, for statistics and tests.
typedef struct sw_self_stats {
    uint64_t ticks;         ///< signals the handler took for this handle
    uint64_t captures;      ///< stacks it took
    uint64_t dropped;       ///< stacks it could not store (every slot was being read)
} sw_self_stats;

/// Installs the handler on `signo` (a standard signal; SIGSTKFLT by default) for the process.
/// Refuses one that has a handler already (SW_SELF_EINUSE). Requires sw_sampler_install first
/// (it shares libunwind). Calling it again with the same signal returns 0. Any thread.
int sw_self_install(int signo);

/// The default self-sampling signal, SIGSTKFLT.
int sw_self_default_signal(void);

/// On the thread to be sampled: unblocks the self-sampling signal (threads made by libdispatch
/// and Swift Testing block signals, and their children inherit that). Returns 0, or
/// SW_SAMPLER_ENOTINSTALLED / SW_SAMPLER_ESYS.
int sw_self_prepare_thread(void);

/// Tick sources for sw_self_open.
/// SW_SELF_TICK_PERF: a perf task-clock event on the thread's user-mode CPU time. Ticks as fine
/// as the floor; while attached it costs the thread on every context switch (the kernel stops
/// and restarts its hrtimer), several microseconds in a VM.
/// SW_SELF_TICK_CPU_TIMER: a POSIX timer on the thread's CPU clock (user + system time). Checked
/// at the scheduler tick, so ticks come at its granularity (4 ms at HZ=250); nothing per context
/// switch. With CONFIG_POSIX_CPU_TIMERS_TASK_WORK its signal is sent on the return to user mode,
/// so it never cuts a system call short either.
#define SW_SELF_TICK_PERF 0
#define SW_SELF_TICK_CPU_TIMER 1

/// Opens a disarmed tick of `kind` on thread `tid` (in this process), routed to it as the
/// installed signal. The handler captures when the callout
/// `clock` shows has run more than `budget_cycles` (sw_cycles units; `cycles_per_ms` of them in
/// a millisecond), then whenever `interval_cycles` have passed since its last capture; it
/// programs each next tick itself: half the time to the next capture due, at least `floor_ns`.
/// Returns a handle (>= 0) or a negative error, with errno in *sys_errno. `clock` must outlive
/// the handle.
int sw_self_open(int tid, sw_callout_clock *clock, int kind, int64_t floor_ns, uint64_t budget_cycles,
                 uint64_t interval_cycles, uint64_t cycles_per_ms, int *sys_errno);

/// Starts the ticks. Call once the thread has unblocked the signal (sw_sampler_prepare_thread
/// unblocks it too). Returns 0 or SW_SELF_EPERF.
int sw_self_enable(int handle);

/// Changes the capture interval (the watchdog's sample interval, which grows for long hangs).
void sw_self_set_interval(int handle, uint64_t interval_cycles);

/// Takes a capture of callout `sequence` taken after `after_ns`: the stall's earliest one if
/// `earliest`, else its newest. Every capture of that callout up to the one taken is released,
/// and so is any of an older callout. Returns 1 with *out filled, or 0. The watchdog only.
int sw_self_take(int handle, uint64_t sequence, int earliest, int64_t after_ns, sw_self_capture *out);

/// The handle's counters. Any thread.
void sw_self_get_stats(int handle, sw_self_stats *out);

/// 1 while the tick handler runs on the handle's thread, which has the signal blocked meanwhile
/// (so its SigBlk alone does not say the thread blocks the ticks). Any thread.
int sw_self_in_handler(int handle);

/// Stops the ticks and frees the handle (a tick still pending finds no handle and does nothing).
void sw_self_close(int handle);

#ifdef __cplusplus
}
#endif
