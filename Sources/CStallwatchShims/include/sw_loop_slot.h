// Event-loop threads of a program Stallwatch does not own, found and timed from their wait calls.
// The preload library interposes epoll_wait, poll, select and their variants and calls
// sw_loop_wait_begin/sw_loop_wait_end around the real call; HeartbeatMonitor's watchdog reads the
// slots. See docs/watchdog.md, "Event loops found by their waits".
//
// A thread that blocks in epoll_wait, or the main thread when its blocking polls or selects use
// the same set twice in a row, is a loop: it gets a slot, and from then on every wait on that set (blocking or not) is an iteration boundary: the
// wait's return starts an iteration, the next call ends it. A wait on another set inside an
// iteration (a blocking client library polling its socket) is part of the iteration.
//
// Per wait the loop thread pays one thread-local read and a few compares; per iteration two
// TSC reads and two release stores, plus one entry in the slot's overrun log for an iteration
// longer than the watchdog's budget. No lock, no syscall, no allocation.
#pragma once

#include <stdint.h>

enum { SW_LOOP_SLOTS = 64, SW_LOOP_OVERRUNS = 32, SW_LOOP_NAME = 16 };

/// How a loop waits.
enum sw_loop_kind { SW_LOOP_EPOLL = 1, SW_LOOP_POLL = 2, SW_LOOP_SELECT = 3 };

/// One iteration that ran longer than the slot's budget.
typedef struct sw_loop_overrun {
    uint64_t sequence;  ///< the iteration's (odd) sequence
    uint64_t start;     ///< sw_cycles() at its start and end
    uint64_t end;
} sw_loop_overrun;

typedef struct sw_loop_slot {
    int32_t tid;   ///< the loop's thread; with kind, name and fd, set before `ready`
    int32_t kind;  ///< sw_loop_kind
    int32_t fd;    ///< the epoll descriptor, or the first descriptor of a poll or select set
    uint32_t ready;
    char name[SW_LOOP_NAME];  ///< the thread's name when it became a loop
    uint64_t set;             ///< the poll or select set's address (0 for epoll)
    uint64_t sequence;        ///< odd while an iteration runs, even while the thread waits
    uint64_t start;           ///< sw_cycles() at the running iteration's start
    uint64_t budget;          ///< cycles: iterations longer than this are logged (0: none); the watchdog's
    uint64_t overrun_head;    ///< overruns logged, ever
    sw_loop_overrun overruns[SW_LOOP_OVERRUNS];
    uint64_t nested;          ///< waits on another set inside an iteration, ever
} sw_loop_slot;

/// On the thread, before the real wait. `set` is the poll or select set's address (0 for
/// epoll), `fd` the epoll descriptor or the set's first descriptor (-1 for none); `blocking`
/// whether the call may block (a timeout other than zero); `caller` the address the wait was
/// called from (0: unknown). A thread whose waits come from libdispatch itself is its manager
/// thread, whose events' handlers run on other threads: never a loop.
void sw_loop_wait_begin(int kind, uint64_t set, int fd, int blocking, uint64_t caller);

/// On the thread, after the real wait returned.
void sw_loop_wait_end(int kind, uint64_t set, int fd);

/// Called on a loop thread once, as it goes idle after becoming a loop (or at its first idle wait
/// after the hook is set): the watchdog prepares the thread for sampling there. Any thread.
typedef void (*sw_loop_thread_hook)(void);
void sw_loop_set_thread_hook(sw_loop_thread_hook hook);

/// The watchdog: iterations longer than `cycles` are logged from now on (0: none).
static inline void sw_loop_set_budget(sw_loop_slot *slot, uint64_t cycles) {
    __atomic_store_n(&slot->budget, cycles, __ATOMIC_RELAXED);
}

/// The watchdog: the descriptor the loop waits on now (a loop whose descriptor was closed may
/// have moved to a new one).
static inline int sw_loop_fd(const sw_loop_slot *slot) { return __atomic_load_n(&slot->fd, __ATOMIC_RELAXED); }

/// Whether the loop's descriptor is still open (for an epoll loop: still an epoll instance). A
/// closed loop is over: its thread may go on with other work. A few microseconds (a readlink of
/// /proc/self/fd for epoll). Any thread.
int sw_loop_is_open(const sw_loop_slot *slot);

/// The watchdog: how many slots are in use (each ready once its `ready` is 1).
uint32_t sw_loop_slot_count(void);

/// The watchdog: slot `index` (below `sw_loop_slot_count()`), or NULL while it is being filled.
sw_loop_slot *sw_loop_slot_at(uint32_t index);

/// The watchdog: the slot's current sequence and the running iteration's start, read together
/// (the start belongs to the sequence when it is odd).
static inline void sw_loop_read(const sw_loop_slot *slot, uint64_t *sequence, uint64_t *start) {
    for (;;) {
        const uint64_t before = __atomic_load_n(&slot->sequence, __ATOMIC_ACQUIRE);
        const uint64_t s = __atomic_load_n(&slot->start, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&slot->sequence, __ATOMIC_RELAXED) == before) {
            *sequence = before;
            *start = s;
            return;
        }
    }
}

/// The watchdog: how many overruns the slot has logged, ever (where a new reader starts: the
/// iterations that overran before it watched are not its stalls).
static inline uint64_t sw_loop_overrun_head(const sw_loop_slot *slot) {
    return __atomic_load_n(&slot->overrun_head, __ATOMIC_ACQUIRE);
}

/// The watchdog: copies the overruns logged since `*cursor` (at most SW_LOOP_OVERRUNS) into
/// `into` and advances the cursor; returns how many were copied, and in `*lost` how many were
/// overwritten before they were read.
uint32_t sw_loop_read_overruns(sw_loop_slot *slot, uint64_t *cursor, sw_loop_overrun *into, uint64_t *lost);

/// Forgets every slot, for tests that make loops of their own threads (none may be waiting).
void sw_loop_reset_for_testing(void);

/// Forgets the calling thread's loop state, for tests.
void sw_loop_forget_thread_for_testing(void);
