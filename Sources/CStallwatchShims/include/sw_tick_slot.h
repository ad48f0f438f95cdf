// Where an executor that reports its own ticks (swift-nio's NIOEventLoopMetricsDelegate) tells
// HeartbeatMonitor when the tick that ran a heartbeat began and ended, so a stall's duration is
// the executor's own (docs/watchdog.md, "Exact durations from the executor's ticks").
//
// The heartbeat arms the slot of its executor and binds it to its thread; the executor's tick
// report, on that thread, stores the tick into the armed slot (a sequence lock: the watchdog
// reads start and end together); the watchdog reads it once that heartbeat's stall has ended.
// Per tick, the report costs one thread-local read and one relaxed load while nothing is armed.
#pragma once

#include <stdint.h>

typedef struct sw_tick_slot {
    uint64_t armed;     ///< the heartbeat run waiting for the end of its tick, 0 for none
    uint64_t sequence;  ///< odd while the report writes run, start and end
    uint64_t run;       ///< the heartbeat run the stored tick ran
    uint64_t start;     ///< its start and end, CLOCK_MONOTONIC ns
    uint64_t end;
    uint64_t reports;   ///< ticks reported on this slot's thread, ever
} sw_tick_slot;

/// The slot of the executor whose heartbeat last ran on this thread (NULL: none).
extern __thread sw_tick_slot *sw_bound_tick_slot;

/// On the executor's thread, in a heartbeat: the tick in progress ran heartbeat `run`.
static inline void sw_tick_arm(sw_tick_slot *slot, uint64_t run) {
    sw_bound_tick_slot = slot;
    __atomic_store_n(&slot->armed, run, __ATOMIC_RELAXED);
}

/// On the executor's thread, at the end of each tick: a tick ran from `start` to `end`.
static inline void sw_tick_report(uint64_t start, uint64_t end) {
    sw_tick_slot *slot = sw_bound_tick_slot;
    if (slot == NULL) return;
    if (__atomic_load_n(&slot->reports, __ATOMIC_RELAXED) == 0) __atomic_store_n(&slot->reports, 1, __ATOMIC_RELAXED);
    const uint64_t run = __atomic_load_n(&slot->armed, __ATOMIC_RELAXED);
    if (run == 0) return;
    const uint64_t sequence = __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->sequence, sequence + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&slot->run, run, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->start, start, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->end, end, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->sequence, sequence + 2, __ATOMIC_RELEASE);
    __atomic_store_n(&slot->armed, 0, __ATOMIC_RELAXED);
}

/// The watchdog: the tick stored for heartbeat `run`, if it is stored. 1 with *start, *end; 0.
static inline int sw_tick_read(const sw_tick_slot *slot, uint64_t run, uint64_t *start, uint64_t *end) {
    for (int attempt = 0; attempt < 8; attempt++) {
        const uint64_t before = __atomic_load_n(&slot->sequence, __ATOMIC_ACQUIRE);
        if (before & 1) continue;
        const uint64_t stored = __atomic_load_n(&slot->run, __ATOMIC_RELAXED);
        const uint64_t s = __atomic_load_n(&slot->start, __ATOMIC_RELAXED);
        const uint64_t e = __atomic_load_n(&slot->end, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&slot->sequence, __ATOMIC_RELAXED) != before) continue;
        if (stored != run) return 0;
        *start = s;
        *end = e;
        return 1;
    }
    return 0;
}

/// Whether any tick was ever reported on the slot's thread (the executor reports its ticks).
static inline int sw_tick_reported(const sw_tick_slot *slot) {
    return __atomic_load_n(&slot->reports, __ATOMIC_RELAXED) != 0;
}
