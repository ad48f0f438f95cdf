// Work items of a program Stallwatch does not own, timed where they run: the iterations of event-loop
// threads, found from their wait calls, and the items of DispatchQueue.main and the Swift jobs of
// pool threads, from the dispatch calls that submit them. The preload library interposes
// epoll_wait, poll, select and their variants and calls sw_loop_wait_begin/sw_loop_wait_end around
// the real call, and runs dispatched items between sw_dispatch_item_begin/sw_dispatch_item_end;
// HeartbeatMonitor's watchdog reads the slots. See docs/watchdog.md, "Event loops found by their
// waits" and "Dispatched items, timed".
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

/// How a slot's items are found: a loop by how it waits, or dispatched items (DispatchQueue.main's,
/// on whatever thread runs each; a pool thread's Swift jobs).
enum sw_loop_kind { SW_LOOP_EPOLL = 1, SW_LOOP_POLL = 2, SW_LOOP_SELECT = 3, SW_LOOP_MAIN_QUEUE = 4, SW_LOOP_JOBS = 5 };

/// One iteration that ran longer than the slot's budget.
typedef struct sw_loop_overrun {
    uint64_t sequence;  ///< the iteration's (odd) sequence
    uint64_t start;     ///< sw_cycles() at its start and end
    uint64_t end;
} sw_loop_overrun;

typedef struct sw_loop_slot {
    // The first six words have sw_callout_clock's layout (CStallwatchSelfSample.h): the slot is the
    // clock its thread's own ticks read, so an item's thread samples itself on time.
    uint64_t sequence;        ///< odd while an iteration runs, even while the thread waits
    uint64_t start;           ///< sw_cycles() at the running iteration's start
    uint64_t clock_rest[4];   ///< the clock's descriptor, label, file and stalled sequence: unused (0)
    int32_t tid;   ///< the loop's thread; with kind, name and fd, set before `ready` (the main
                   ///< queue's: the thread of its latest item, set before the item's start)
    int32_t kind;  ///< sw_loop_kind
    int32_t fd;    ///< the epoll descriptor, or the first descriptor of a poll or select set (-1: none)
    uint32_t ready;  ///< 1 once filled; a pool thread's slot whose thread exited is 2 (free) until
                     ///< another pool thread takes it, with a new `generation`
    char name[SW_LOOP_NAME];  ///< the thread's name when it became a loop
    uint64_t set;             ///< the poll or select set's address (0 for epoll)
    uint64_t budget;          ///< cycles: iterations longer than this are logged (0: none); the watchdog's
    uint64_t overrun_head;    ///< overruns logged, ever
    sw_loop_overrun overruns[SW_LOOP_OVERRUNS];
    uint64_t nested;          ///< waits on another set inside an iteration, ever
    uint64_t end;             ///< sw_cycles() at the last finished item's end (0: none yet)
    uint64_t generation;      ///< how many threads have owned the slot before its current one
} sw_loop_slot;

/// On the thread, before the real wait. `set` is the poll or select set's address (0 for
/// epoll), `fd` the epoll descriptor or the set's first descriptor (-1 for none); `blocking`
/// whether the call may block (a timeout other than zero); `caller` the address the wait was
/// called from (0: unknown). A thread whose waits come from libdispatch itself is its manager
/// thread, whose events' handlers run on other threads: never a loop.
void sw_loop_wait_begin(int kind, uint64_t set, int fd, int blocking, uint64_t caller);

/// On the thread, after the real wait returned.
void sw_loop_wait_end(int kind, uint64_t set, int fd);

/// A hook the watchdog sets, run on a thread (see sw_loop_set_thread_hook, sw_loop_set_item_hook).
typedef void (*sw_loop_thread_hook)(void);

/// A dispatched item begins on the calling thread: an item of DispatchQueue.main (`main_queue` 1)
/// or a Swift job on a pool thread (0; the thread is a pool thread from its first job). Returns
/// the slot that times it, or NULL when it is not timed on its own: an item that runs inside
/// another (nested) or inside an iteration of the thread's event loop (RunLoop.main drains the
/// main queue in its poll loop), or no slot was free. Pass the result to sw_dispatch_item_end.
/// A pool thread's slot is freed when the thread exits. No lock, no syscall, no allocation
/// (but a pool thread's first job: a slot and a thread-exit key).
sw_loop_slot *sw_dispatch_item_begin(int main_queue);

/// The item begun by sw_dispatch_item_begin ended (`slot` may be NULL).
void sw_dispatch_item_end(sw_loop_slot *slot);

/// While on (1) on the calling thread, what it submits is not timed: Stallwatch's own heartbeats
/// (their delay is the measurement, and their first run prepares a thread). Off: 0.
void sw_dispatch_set_untimed(int on);

/// Whether the calling thread submits untimed work now (the interposers ask).
int sw_dispatch_untimed(void);

/// Called once on each thread before its first timed dispatched item (the watchdog prepares the
/// thread for sampling there; the cost is in no item). Kept apart from the loop-thread hook: a
/// process where the preload's C part alone watches for loops must not act on dispatched items.
void sw_loop_set_item_hook(sw_loop_thread_hook hook);

/// Whether a pool thread found no slot for its jobs (their stalls are not timed; the pool's
/// threads are then found by name too).
int sw_dispatch_jobs_refused(void);

/// The preload library hands the runtime a pool job's trampoline (every time; it counts once):
/// from then on the pool's threads are the threads that ran a job, none before the first begins.
void sw_dispatch_note_job_wrapped(void);

/// Whether a pool job was wrapped (sw_dispatch_note_job_wrapped): 1, else 0.
int sw_dispatch_jobs_wrapped(void);

/// Called on a loop thread once, as it goes idle after becoming a loop (or at its first idle wait
/// after the hook is set), and on a thread that runs dispatched items before its first timed item
/// starts: the watchdog prepares the thread for sampling there. Any thread.
void sw_loop_set_thread_hook(sw_loop_thread_hook hook);

/// The watchdog: iterations longer than `cycles` are logged from now on (0: none).
static inline void sw_loop_set_budget(sw_loop_slot *slot, uint64_t cycles) {
    __atomic_store_n(&slot->budget, cycles, __ATOMIC_RELAXED);
}

/// The watchdog: the budget a new slot starts with (cycles; 0: none), so that an item that
/// overruns before the watchdog first looks at its slot (a new pool thread's first job) is logged.
void sw_loop_set_default_budget(uint64_t cycles);

/// The watchdog: the descriptor the loop waits on now (a loop whose descriptor was closed may
/// have moved to a new one).
static inline int sw_loop_fd(const sw_loop_slot *slot) { return __atomic_load_n(&slot->fd, __ATOMIC_RELAXED); }

/// Whether the loop's descriptor is still open (for an epoll loop: still an epoll instance). A
/// closed loop is over: its thread may go on with other work. A few microseconds (a readlink of
/// /proc/self/fd for epoll). Any thread.
int sw_loop_is_open(const sw_loop_slot *slot);

/// The watchdog: how many slots are in use (each ready once its `ready` is 1).
uint32_t sw_loop_slot_count(void);

/// The watchdog: slot `index` (below `sw_loop_slot_count()`), or NULL while it is first being
/// filled. A pool thread's slot may later be free or change hands: see sw_loop_owner.
sw_loop_slot *sw_loop_slot_at(uint32_t index);

/// The watchdog: the slot's current sequence and the running iteration's start, read together
/// (the start belongs to the sequence when it is odd; when it is even, to the last item).
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

/// The watchdog: as sw_loop_read, with the thread the item runs on, read together (the main
/// queue's items write their thread before their start).
static inline void sw_loop_read_item(const sw_loop_slot *slot, uint64_t *sequence, uint64_t *start, int32_t *tid) {
    for (;;) {
        const uint64_t before = __atomic_load_n(&slot->sequence, __ATOMIC_ACQUIRE);
        const uint64_t s = __atomic_load_n(&slot->start, __ATOMIC_RELAXED);
        const int32_t t = __atomic_load_n(&slot->tid, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&slot->sequence, __ATOMIC_RELAXED) == before) {
            *sequence = before;
            *start = s;
            *tid = t;
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

/// The thread draining DispatchQueue.main now (its drain lock's owner in libdispatch's queue
/// state), 0 when none does (the queue waits for a thread, or has nothing to run), -1 when the
/// queue cannot be found. The layout is libdispatch's on Linux x86_64 (DispatchQueueProbe reads
/// the same word of other queues). Any thread; one load.
int32_t sw_main_queue_drainer(void);

/// The watchdog: sw_cycles() at the end of the slot's last finished item (0: none yet).
static inline uint64_t sw_loop_last_end(const sw_loop_slot *slot) {
    return __atomic_load_n(&slot->end, __ATOMIC_ACQUIRE);
}

/// The states of a slot's `ready`.
enum { SW_SLOT_FILLING = 0, SW_SLOT_OWNED = 1, SW_SLOT_FREE = 2, SW_SLOT_HANDOVER = 3 };

/// The watchdog: the slot's owner generation and thread, read together; 0 while the slot has no
/// owner (a pool thread's slot whose thread exited, or one being handed over), else 1.
static inline int sw_loop_owner(const sw_loop_slot *slot, uint64_t *generation, int32_t *tid) {
    const uint64_t before = __atomic_load_n(&slot->generation, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slot->ready, __ATOMIC_ACQUIRE) != SW_SLOT_OWNED) return 0;
    const int32_t t = __atomic_load_n(&slot->tid, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slot->ready, __ATOMIC_RELAXED) != SW_SLOT_OWNED) return 0;
    if (__atomic_load_n(&slot->generation, __ATOMIC_RELAXED) != before) return 0;
    *generation = before;
    *tid = t;
    return 1;
}

/// Forgets the calling thread's loop state, for tests.
void sw_loop_forget_thread_for_testing(void);
