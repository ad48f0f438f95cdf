// Event-loop threads found by their waits. See sw_loop_slot.h.
#define _GNU_SOURCE
#include "sw_loop_slot.h"

#include "CStallwatchShims.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

static sw_loop_slot g_slots[SW_LOOP_SLOTS];
static uint32_t g_slot_count;
static uint64_t g_default_budget;

void sw_loop_set_default_budget(uint64_t cycles) { __atomic_store_n(&g_default_budget, cycles, __ATOMIC_RELAXED); }

/// The calling thread's state: its slot once it is a loop, else the set of its last blocking
/// wait and how many blocking waits in a row used it.
typedef struct sw_loop_thread {
    sw_loop_slot *slot;
    int kind;
    int fd;
    uint64_t set;
    uint32_t repeats;
    uint32_t full;      // the table was full when this thread became a loop: it is not watched
    uint32_t prepared;  // the thread hook ran on this thread
    sw_loop_slot *jobs;  // a pool thread's slot, from its first Swift job
    uint32_t jobs_full;  // no slot was free at its first job: its jobs are not timed
    int32_t tid;         // the thread's id, once read (0: not yet)
    uint32_t untimed;    // what the thread submits now is not timed (sw_dispatch_set_untimed)
    uint32_t item_prepared;  // the item hook ran on this thread
} sw_loop_thread;

/// Whether `caller` is code of libdispatch.so (its manager thread's epoll loop). Once per thread
/// that would become a loop: a dladdr.
static int sw_called_from_libdispatch(uint64_t caller) {
    Dl_info info;
    if (caller == 0 || dladdr((const void *)(uintptr_t)caller, &info) == 0 || info.dli_fname == NULL) return 0;
    const char *slash = strrchr(info.dli_fname, '/');
    return strncmp(slash != NULL ? slash + 1 : info.dli_fname, "libdispatch.so", 14) == 0;
}

static __thread sw_loop_thread t_loop __attribute__((tls_model("initial-exec")));
static sw_loop_thread_hook g_thread_hook;
static sw_loop_thread_hook g_item_hook;

void sw_loop_set_thread_hook(sw_loop_thread_hook hook) { __atomic_store_n(&g_thread_hook, hook, __ATOMIC_RELEASE); }

void sw_loop_set_item_hook(sw_loop_thread_hook hook) { __atomic_store_n(&g_item_hook, hook, __ATOMIC_RELEASE); }

void sw_dispatch_set_untimed(int on) { t_loop.untimed = on != 0; }

int sw_dispatch_untimed(void) { return (int)t_loop.untimed; }

/// Runs `*hook` on this thread once (`*done` is the thread's flag), if one is set yet.
static inline void sw_run_hook_once(uint32_t *done, sw_loop_thread_hook *hook) {
    if (__builtin_expect(*done, 1)) return;
    const sw_loop_thread_hook function = __atomic_load_n(hook, __ATOMIC_ACQUIRE);
    if (function == NULL) return;
    *done = 1;
    function();
}

/// The thread hook, once per loop thread, as it goes idle (its cost lands in the loop's idle time).
static inline void sw_loop_prepare_thread(void) { sw_run_hook_once(&t_loop.prepared, &g_thread_hook); }

/// The item hook, once per thread, before its first timed item starts.
static inline void sw_item_prepare_thread(void) { sw_run_hook_once(&t_loop.item_prepared, &g_item_hook); }

/// Whether a wait is on the loop's set: the same epoll descriptor; for poll and select, the same
/// array (GLib reuses its poll array) or the same first descriptor (an array that grew moved).
static inline int sw_same_set(int kind, uint64_t set, int fd, int loop_kind, uint64_t loop_set, int loop_fd) {
    if (kind != loop_kind) return 0;
    if (kind == SW_LOOP_EPOLL) return fd == loop_fd;
    return set == loop_set || (fd >= 0 && fd == loop_fd);
}

/// An item starts: its start, then the odd sequence (the watchdog reads them in that order). The
/// fence keeps the start from being seen before the previous item's end.
static inline void sw_item_start(sw_loop_slot *slot, uint64_t sequence) {
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&slot->start, sw_cycles(), __ATOMIC_RELAXED);
    __atomic_store_n(&slot->sequence, sequence + 1, __ATOMIC_RELEASE);
}

/// The running item (odd `sequence`) ends: logged if it overran the budget, then the even sequence.
static inline void sw_item_finish(sw_loop_slot *slot, uint64_t sequence) {
    const uint64_t end = sw_cycles();
    const uint64_t start = __atomic_load_n(&slot->start, __ATOMIC_RELAXED);
    const uint64_t budget = __atomic_load_n(&slot->budget, __ATOMIC_RELAXED);
    if (budget != 0 && end - start > budget) {
        const uint64_t head = __atomic_load_n(&slot->overrun_head, __ATOMIC_RELAXED);
        sw_loop_overrun *entry = &slot->overruns[head % SW_LOOP_OVERRUNS];
        __atomic_store_n(&entry->sequence, sequence, __ATOMIC_RELAXED);
        __atomic_store_n(&entry->start, start, __ATOMIC_RELAXED);
        __atomic_store_n(&entry->end, end, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->overrun_head, head + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&slot->end, end, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->sequence, sequence + 1, __ATOMIC_RELEASE);
}

static inline int32_t sw_thread_id(void) {
    if (__builtin_expect(t_loop.tid == 0, 0)) t_loop.tid = sw_gettid();
    return t_loop.tid;
}

/// A new slot for the calling thread, named by it (NULL: the table is full).
static sw_loop_slot *sw_slot_new(int kind, uint64_t set, int fd) {
    const uint32_t index = __atomic_fetch_add(&g_slot_count, 1, __ATOMIC_RELAXED);
    if (index >= SW_LOOP_SLOTS) {
        __atomic_store_n(&g_slot_count, SW_LOOP_SLOTS, __ATOMIC_RELAXED);
        return NULL;
    }
    sw_loop_slot *slot = &g_slots[index];
    slot->tid = sw_thread_id();
    slot->kind = kind;
    slot->fd = fd;
    slot->set = set;
    slot->budget = __atomic_load_n(&g_default_budget, __ATOMIC_RELAXED);
    char name[SW_LOOP_NAME + 1] = {0};
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0) memcpy(slot->name, name, SW_LOOP_NAME - 1);
    // Waiting (even) until the wait being entered returns, or the first item starts.
    __atomic_store_n(&slot->sequence, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->ready, SW_SLOT_OWNED, __ATOMIC_RELEASE);
    return slot;
}

static void sw_loop_register(int kind, uint64_t set, int fd) {
    t_loop.slot = sw_slot_new(kind, set, fd);
    if (t_loop.slot == NULL) t_loop.full = 1;
}

void sw_loop_wait_begin(int kind, uint64_t set, int fd, int blocking, uint64_t caller) {
    sw_loop_slot *slot = t_loop.slot;
    if (slot != NULL) {
        const uint64_t sequence = __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED);
        if (sw_same_set(kind, set, fd, slot->kind, slot->set, slot->fd)) {
            if ((sequence & 1) == 0) return;  // not in an iteration (a wait interrupted and retried)
            sw_item_finish(slot, sequence);
            sw_loop_prepare_thread();
            return;
        }
        // Another set inside an iteration: part of it. But a loop whose descriptor was closed
        // is over (asyncio.run() closes its epoll): a blocking wait on a new set starts anew.
        __atomic_store_n(&slot->nested, __atomic_load_n(&slot->nested, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
        if (!blocking || sw_loop_is_open(slot)) return;
        if (sequence & 1) __atomic_store_n(&slot->sequence, sequence + 1, __ATOMIC_RELEASE);
        __atomic_store_n(&slot->fd, fd, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->set, set, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->kind, kind, __ATOMIC_RELAXED);
        return;
    }
    // A Swift job that blocks in a wait is a job, not a loop (its thread is a pool thread).
    if (!blocking || t_loop.full || (t_loop.jobs != NULL && (t_loop.jobs->sequence & 1))) return;
    // An epoll descriptor is an event loop's from its first blocking wait (its first iteration
    // is often the one that matters: asyncio runs the program's first step there); a poll or
    // select set, on the process's main thread only, from its second in a row. Elsewhere a
    // poll is a client waiting for its socket or a pipe, called again and again from the same
    // stack frame (a pool thread of swift-build looked like a loop whose last "iteration" was the
    // next job); GLib's and Foundation's main loops poll on the main thread.
    if (kind != SW_LOOP_EPOLL && !pthread_equal(pthread_self(), sw_main_thread())) return;
    if (kind == SW_LOOP_EPOLL || (t_loop.repeats > 0 && sw_same_set(kind, set, fd, t_loop.kind, t_loop.set, t_loop.fd))) {
        if (sw_called_from_libdispatch(caller)) {
            t_loop.full = 1;  // libdispatch's manager thread: not the program's loop, never looked at again
            return;
        }
        sw_loop_register(kind, set, fd);
        if (t_loop.slot != NULL) sw_loop_prepare_thread();
        return;
    }
    t_loop.kind = kind;
    t_loop.set = set;
    t_loop.fd = fd;
    t_loop.repeats = 1;
}

void sw_loop_wait_end(int kind, uint64_t set, int fd) {
    sw_loop_slot *slot = t_loop.slot;
    if (slot == NULL || !sw_same_set(kind, set, fd, slot->kind, slot->set, slot->fd)) return;
    const uint64_t sequence = __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED);
    if (sequence & 1) return;
    sw_item_start(slot, sequence);
}

// Dispatched items.

int32_t sw_main_queue_drainer(void) {
    static const uint64_t *state;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        const char *queue = dlsym(RTLD_DEFAULT, "_dispatch_main_q");
        __atomic_store_n(&state, queue != NULL ? (const uint64_t *)(queue + 56) : NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    const uint64_t *word = __atomic_load_n(&state, __ATOMIC_RELAXED);
    if (word == NULL) return -1;
    return (int32_t)(__atomic_load_n(word, __ATOMIC_RELAXED) & 0x3FFFFFFF);  // DLOCK_OWNER_MASK
}

static sw_loop_slot *g_main_queue;
static pthread_once_t g_main_queue_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_jobs_key;
static int g_jobs_key_made;  // 1: made; -1: could not be (pool threads' slots are never freed)
static pthread_once_t g_jobs_key_once = PTHREAD_ONCE_INIT;

static void sw_main_queue_make(void) {
    sw_loop_slot *slot = sw_slot_new(SW_LOOP_MAIN_QUEUE, 0, -1);
    if (slot == NULL) return;
    // Named by the queue, not by the thread that ran its first item.
    memset(slot->name, 0, sizeof(slot->name));
    memcpy(slot->name, "main-queue", 10);
    __atomic_store_n(&g_main_queue, slot, __ATOMIC_RELEASE);
}

/// At a pool thread's exit: its slot is free for the next pool thread. A thread that left in the
/// middle of a job (pthread_exit inside it) ends that job first, so the next owner starts even.
static void sw_jobs_thread_exit(void *value) {
    sw_loop_slot *slot = value;
    const uint64_t sequence = __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED);
    if (sequence & 1) sw_item_finish(slot, sequence);
    __atomic_store_n(&slot->ready, SW_SLOT_FREE, __ATOMIC_RELEASE);
}

/// At most this many slots go to pool threads (libdispatch can run hundreds during a burst of
/// blocking jobs): the rest stay for event loops and the main queue.
enum { SW_JOB_SLOTS = SW_LOOP_SLOTS - 16 };
static uint32_t g_jobs_refused;
static uint32_t g_job_slots;  // slots made for pool threads

int sw_dispatch_jobs_refused(void) { return (int)__atomic_load_n(&g_jobs_refused, __ATOMIC_RELAXED); }

static uint32_t g_jobs_wrapped;  // the preload library has handed the runtime a pool job's trampoline

void sw_dispatch_note_job_wrapped(void) {
    if (!__atomic_load_n(&g_jobs_wrapped, __ATOMIC_RELAXED)) __atomic_store_n(&g_jobs_wrapped, 1, __ATOMIC_RELAXED);
}

int sw_dispatch_jobs_wrapped(void) { return (int)__atomic_load_n(&g_jobs_wrapped, __ATOMIC_RELAXED); }

static void sw_jobs_key_make(void) { g_jobs_key_made = pthread_key_create(&g_jobs_key, sw_jobs_thread_exit) == 0 ? 1 : -1; }

/// The calling pool thread's slot: a free one taken over, else a new one (NULL: none left).
static sw_loop_slot *sw_jobs_slot(void) {
    pthread_once(&g_jobs_key_once, sw_jobs_key_make);
    sw_loop_slot *slot = NULL;
    const uint32_t count = sw_loop_slot_count();
    for (uint32_t index = 0; index < count && slot == NULL && g_jobs_key_made == 1; index++) {
        sw_loop_slot *candidate = &g_slots[index];
        // A slot another thread is still filling is not read (its kind is being written).
        const uint32_t state = __atomic_load_n(&candidate->ready, __ATOMIC_ACQUIRE);
        if (state == SW_SLOT_FILLING || __atomic_load_n(&candidate->kind, __ATOMIC_RELAXED) != SW_LOOP_JOBS) continue;
        uint32_t free = SW_SLOT_FREE;
        if (state != SW_SLOT_FREE ||
            !__atomic_compare_exchange_n(&candidate->ready, &free, SW_SLOT_HANDOVER, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        // Handed over between items: the sequence is even, the log and its head carry on.
        __atomic_store_n(&candidate->generation, candidate->generation + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&candidate->tid, sw_thread_id(), __ATOMIC_RELAXED);
        char name[SW_LOOP_NAME + 1] = {0};
        if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0) memcpy(candidate->name, name, SW_LOOP_NAME - 1);
        __atomic_store_n(&candidate->ready, SW_SLOT_OWNED, __ATOMIC_RELEASE);
        slot = candidate;
    }
    if (slot == NULL) {
        // A new slot, if pool threads hold fewer than their share (counted before it is made, so
        // that threads racing for the last ones cannot overshoot).
        if (__atomic_fetch_add(&g_job_slots, 1, __ATOMIC_RELAXED) < SW_JOB_SLOTS) {
            slot = sw_slot_new(SW_LOOP_JOBS, 0, -1);
        } else {
            __atomic_fetch_sub(&g_job_slots, 1, __ATOMIC_RELAXED);
        }
    }
    if (slot == NULL) __atomic_store_n(&g_jobs_refused, 1, __ATOMIC_RELAXED);
    if (slot != NULL && g_jobs_key_made == 1) pthread_setspecific(g_jobs_key, slot);
    return slot;
}

sw_loop_slot *sw_dispatch_item_begin(int main_queue) {
    sw_loop_slot *slot;
    if (main_queue) {
        // Inside an iteration of this thread's loop: the iteration times it.
        sw_loop_slot *loop = t_loop.slot;
        if (loop != NULL && (__atomic_load_n(&loop->sequence, __ATOMIC_RELAXED) & 1)) return NULL;
        slot = __atomic_load_n(&g_main_queue, __ATOMIC_ACQUIRE);
        if (__builtin_expect(slot == NULL, 0)) {
            pthread_once(&g_main_queue_once, sw_main_queue_make);
            slot = __atomic_load_n(&g_main_queue, __ATOMIC_ACQUIRE);
            if (slot == NULL) return NULL;
        }
    } else {
        slot = t_loop.jobs;
        if (__builtin_expect(slot == NULL, 0)) {
            if (t_loop.jobs_full) return NULL;
            slot = sw_jobs_slot();
            if (slot == NULL) {
                t_loop.jobs_full = 1;
                return NULL;
            }
            t_loop.jobs = slot;
        }
    }
    // The main queue runs one item at a time, so an item already running is this thread's: the
    // outer item times this one.
    const uint64_t sequence = __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED);
    if (sequence & 1) return NULL;
    // Before the item's start, so its cost is in no item: a thread's first item may be the long
    // one, and the sampling signal reaches only a prepared thread.
    sw_item_prepare_thread();
    if (main_queue) __atomic_store_n(&slot->tid, sw_thread_id(), __ATOMIC_RELAXED);
    sw_item_start(slot, sequence);
    return slot;
}

void sw_dispatch_item_end(sw_loop_slot *slot) {
    if (slot == NULL) return;
    const uint64_t sequence = __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED);
    if ((sequence & 1) == 0) return;
    sw_item_finish(slot, sequence);
}

int sw_loop_is_open(const sw_loop_slot *slot) {
    const int fd = __atomic_load_n(&slot->fd, __ATOMIC_RELAXED);
    if (fd < 0) return 1;
    const int saved = errno;
    int open;
    if (__atomic_load_n(&slot->kind, __ATOMIC_RELAXED) == SW_LOOP_EPOLL) {
        // Still an epoll instance: a closed one's number may have gone to any new descriptor.
        char path[32];
        char target[32] = {0};
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        const ssize_t length = readlink(path, target, sizeof(target) - 1);
        open = length > 0 && strcmp(target, "anon_inode:[eventpoll]") == 0;
    } else {
        open = fcntl(fd, F_GETFD) != -1;
    }
    errno = saved;
    return open;
}

uint32_t sw_loop_slot_count(void) {
    const uint32_t count = __atomic_load_n(&g_slot_count, __ATOMIC_RELAXED);
    return count < SW_LOOP_SLOTS ? count : SW_LOOP_SLOTS;
}

sw_loop_slot *sw_loop_slot_at(uint32_t index) {
    if (index >= SW_LOOP_SLOTS) return NULL;
    sw_loop_slot *slot = &g_slots[index];
    return __atomic_load_n(&slot->ready, __ATOMIC_ACQUIRE) != SW_SLOT_FILLING ? slot : NULL;
}

uint32_t sw_loop_read_overruns(sw_loop_slot *slot, uint64_t *cursor, sw_loop_overrun *into, uint64_t *lost) {
    const uint64_t head = __atomic_load_n(&slot->overrun_head, __ATOMIC_ACQUIRE);
    uint64_t from = *cursor;
    *lost = 0;
    if (head - from > SW_LOOP_OVERRUNS) {
        *lost = head - from - SW_LOOP_OVERRUNS;
        from = head - SW_LOOP_OVERRUNS;
    }
    uint32_t count = 0;
    for (uint64_t index = from; index < head; index++) {
        const sw_loop_overrun *entry = &slot->overruns[index % SW_LOOP_OVERRUNS];
        into[count].sequence = __atomic_load_n(&entry->sequence, __ATOMIC_RELAXED);
        into[count].start = __atomic_load_n(&entry->start, __ATOMIC_RELAXED);
        into[count].end = __atomic_load_n(&entry->end, __ATOMIC_RELAXED);
        count++;
    }
    // Entries the thread overwrote while they were copied (it lapped the log) are lost too.
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    const uint64_t now = __atomic_load_n(&slot->overrun_head, __ATOMIC_RELAXED);
    uint32_t skip = 0;
    if (now - from > SW_LOOP_OVERRUNS) skip = (uint32_t)(now - from - SW_LOOP_OVERRUNS);
    if (skip > count) skip = count;
    if (skip > 0) {
        memmove(into, into + skip, (count - skip) * sizeof(*into));
        count -= skip;
        *lost += skip;
    }
    *cursor = head;
    return count;
}

void sw_loop_reset_for_testing(void) {
    memset(g_slots, 0, sizeof(g_slots));
    __atomic_store_n(&g_default_budget, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_jobs_refused, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_jobs_wrapped, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_job_slots, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_main_queue, NULL, __ATOMIC_RELEASE);
    g_main_queue_once = (pthread_once_t)PTHREAD_ONCE_INIT;
    __atomic_store_n(&g_slot_count, 0, __ATOMIC_RELEASE);
}

void sw_loop_forget_thread_for_testing(void) { memset(&t_loop, 0, sizeof(t_loop)); }
