// CStallwatchSelfSample: the loop thread samples itself from a perf task-clock tick. See
// include/CStallwatchSelfSample.h and docs/watchdog.md, "On time without privileges".
// Everything reachable from self_handler must be async-signal-safe.
#define _GNU_SOURCE
#include "CStallwatchSelfSample.h"
#include "asyncchain.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t self_cycles(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

// A slot's owner. The handler (one per handle: its thread's) writes FREE or READY slots, the
// watchdog reads READY ones; each side claims with a CAS, so neither ever sees a half-written slot.
enum { SLOT_FREE = 0, SLOT_WRITING = 1, SLOT_READY = 2, SLOT_READING = 3 };
#define SLOTS 4

typedef struct {
    _Atomic uint32_t state;
    uint32_t index;
    uint64_t sequence;
    uint64_t start_cycles, descriptor, label, file;
    int64_t time_ns;
    int64_t ready_ns;
    uintptr_t rip;
    int raw_count;
    void *raw[SW_SAMPLER_MAX_FRAMES + SW_RAW_EXTRA];
    sw_async_chain chain;
} self_slot;

typedef struct {
    _Atomic int live;                // 1 while the handle is open (published last by open)
    int fd;                          // SW_SELF_TICK_PERF: the perf event; else -1
    int kind;                        // SW_SELF_TICK_PERF or SW_SELF_TICK_CPU_TIMER
    timer_t timer;                   // SW_SELF_TICK_CPU_TIMER: the POSIX timer on its CPU clock
    int tid;
    sw_callout_clock *clock;
    _Atomic uint64_t budget_cycles;
    _Atomic uint64_t interval_cycles;
    uint64_t cycles_per_ms;
    int64_t floor_ns;              // the shortest tick period
    // The handler's own state (its thread only).
    uint64_t stall_sequence;
    uint32_t stall_index;
    int stall_ahead;  // the stall's index 0 is its capture ahead of the deadline
    uint64_t next_cycles;
    int64_t period_ns;             // the period the event has now
    _Atomic uint64_t ticks, captures, dropped;
    // 1 while the handler runs on the handle's thread (which then has the signal blocked).
    _Atomic uint32_t in_handler;
    self_slot slots[SLOTS];
} self_handle;

static self_handle g_handles[SW_SELF_MAX_THREADS];
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;  // open/close/install; never in the handler
static _Atomic int g_self_signo;
static _Atomic int g_in_handler;     // handlers running now (sw_self_close waits them out)

static inline void add(_Atomic uint64_t *counter) { atomic_fetch_add_explicit(counter, 1, memory_order_relaxed); }

// A slot the handler may write: a free one, else the oldest ready one but the stall's first past
// its deadline (which the watchdog wants for the detection) and its capture ahead of the deadline
// (its first sample). NULL if the watchdog holds them all.
static self_slot *claim_slot(self_handle *h) {
    self_slot *oldest = NULL;
    for (int i = 0; i < SLOTS; i++) {
        self_slot *slot = &h->slots[i];
        uint32_t expected = SLOT_FREE;
        if (atomic_compare_exchange_strong_explicit(&slot->state, &expected, SLOT_WRITING, memory_order_acquire,
                                                    memory_order_relaxed))
            return slot;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < SLOTS; i++) {
            self_slot *slot = &h->slots[i];
            // Only the handler writes index/sequence/time, so it may read them while READY.
            if (atomic_load_explicit(&slot->state, memory_order_acquire) != SLOT_READY) continue;
            if (slot->sequence == h->stall_sequence && (slot->index == 0 || (slot->index == 1 && h->stall_ahead)))
                continue;
            if (oldest == NULL || slot->time_ns < oldest->time_ns) oldest = slot;
        }
        if (oldest == NULL) return NULL;
        uint32_t expected = SLOT_READY;
        if (atomic_compare_exchange_strong_explicit(&oldest->state, &expected, SLOT_WRITING, memory_order_acquire,
                                                    memory_order_relaxed))
            return oldest;
        oldest = NULL;  // the watchdog took it meanwhile: look once more
    }
    return NULL;
}

static void schedule_next(self_handle *h, uint64_t remaining);
static void capture(self_handle *h, uint64_t sequence, uint64_t now, void *ucv);
static void capture_ahead(self_handle *h, uint64_t sequence, void *ucv);

// The handle a tick is for: a perf overflow names its descriptor, a POSIX timer its handle's
// index (sigev_value). NULL for anything else (a stray signal, a handle closed meanwhile).
static self_handle *ticked_handle(const siginfo_t *info) {
    if (info == NULL) return NULL;
    if (info->si_code == SI_TIMER) {
        const int index = info->si_value.sival_int;
        if (index < 0 || index >= SW_SELF_MAX_THREADS) return NULL;
        self_handle *h = &g_handles[index];
        if (!atomic_load_explicit(&h->live, memory_order_seq_cst) || h->kind != SW_SELF_TICK_CPU_TIMER) return NULL;
        return h;
    }
    if (info->si_code != POLL_IN) return NULL;
    for (int i = 0; i < SW_SELF_MAX_THREADS; i++) {
        self_handle *h = &g_handles[i];
        if (atomic_load_explicit(&h->live, memory_order_seq_cst) && h->kind == SW_SELF_TICK_PERF &&
            h->fd == info->si_fd)
            return h;
    }
    return NULL;
}

static void self_handler(int signo, siginfo_t *info, void *ucv) {
    (void)signo;
    const int saved_errno = errno;
    atomic_fetch_add_explicit(&g_in_handler, 1, memory_order_seq_cst);  // before the lookup (close)
    self_handle *h = ticked_handle(info);
    if (h == NULL) goto out;
    atomic_store_explicit(&h->in_handler, 1, memory_order_relaxed);
    add(&h->ticks);
    const uint64_t budget = atomic_load_explicit(&h->budget_cycles, memory_order_relaxed);
    const uint64_t sequence = sw_clock_sequence(h->clock);
    const uint64_t now = self_cycles();
    // When a capture would be due next: the running callout's deadline, or the stall's next
    // sample; with no callout running, a whole budget away at the soonest.
    uint64_t target = now + budget;
    if ((sequence & 1) == 1) {
        const uint64_t start = sw_clock_start_cycles_relaxed(h->clock);
        target = start + budget + 1;
        if (h->stall_sequence == sequence && h->next_cycles > target) target = h->next_cycles;
        if (now >= start && now >= target) {
            capture(h, sequence, now, ucv);
            target = h->next_cycles;
        } else if (now >= start && now - start >= budget / 2 && now <= start + budget &&
                   (h->stall_sequence != sequence || h->stall_index <= 1)) {
            // In the second half of its budget, not yet a stall: the latest stack of this callout
            // before its deadline, so that a stall whose thread gets no CPU at the deadline (a
            // loaded machine) has a stack of its own at once.
            capture_ahead(h, sequence, ucv);
        }
    }
    schedule_next(h, target > now ? target - now : 0);
    atomic_store_explicit(&h->in_handler, 0, memory_order_relaxed);
out:
    atomic_fetch_sub_explicit(&g_in_handler, 1, memory_order_release);
    errno = saved_errno;
}

// The next tick: half the way to `remaining` cycles from now, counted in the thread's CPU time
// (which runs at most as fast as the wall clock, so the tick never lands after the target while
// the thread gets at least half a CPU), and never sooner than the floor. A loop running short
// callouts so ticks about twice per budget; one approaching a deadline, a few more.
static void schedule_next(self_handle *h, uint64_t remaining) {
    int64_t period = (int64_t)((remaining / 2) * 1000000 / h->cycles_per_ms);
    const int64_t step = h->floor_ns / 2;
    period = period / step * step;  // in steps of half the floor: fewer system calls
    if (period < h->floor_ns) period = h->floor_ns;
    if (h->kind == SW_SELF_TICK_CPU_TIMER) {
        // One-shot: each tick arms the next (a periodic timer would tick on its own).
        const struct itimerspec next = {.it_interval = {0, 0},
                                        .it_value = {period / 1000000000, period % 1000000000}};
        (void)timer_settime(h->timer, 0, &next, NULL);
        h->period_ns = period;
        return;
    }
    if (period == h->period_ns) return;
    uint64_t value = (uint64_t)period;
    if (ioctl(h->fd, PERF_EVENT_IOC_PERIOD, &value) == 0) h->period_ns = period;
}

static void fill(self_handle *h, self_slot *slot, uint64_t sequence, void *ucv);

// Unwinds this thread into a slot, once per sample interval of the callout's stall.
static void capture(self_handle *h, uint64_t sequence, uint64_t now, void *ucv) {
    if (h->stall_sequence != sequence) {
        h->stall_sequence = sequence;
        h->stall_index = 0;
        h->stall_ahead = 0;
        // Nothing to declare: the loop logs every callout that overruns by its own stamps, and
        // the watchdog takes these captures as that stall's samples, however late it runs.
    }
    h->next_cycles = now + atomic_load_explicit(&h->interval_cycles, memory_order_relaxed);
    // A tick meant for another thread (a reused descriptor) must not unwind this one: one gettid,
    // only when about to capture.
    if ((int)syscall(SYS_gettid) != h->tid) return;
    self_slot *slot = claim_slot(h);
    if (slot == NULL) {
        add(&h->dropped);
        return;
    }
    fill(h, slot, sequence, ucv);
    h->stall_index++;
}

// The callout's capture ahead of its deadline (index 0): one slot, rewritten at each tick of the
// budget's second half while the watchdog has not taken it, so it holds the latest. The first
// capture past the deadline follows it as index 1, at the deadline's tick as without it.
static void capture_ahead(self_handle *h, uint64_t sequence, void *ucv) {
    if ((int)syscall(SYS_gettid) != h->tid) return;
    self_slot *slot = NULL;
    if (h->stall_sequence == sequence) {
        for (int i = 0; i < SLOTS && slot == NULL; i++) {
            self_slot *candidate = &h->slots[i];
            uint32_t expected = SLOT_READY;
            if (candidate->sequence == sequence && candidate->index == 0 &&
                atomic_compare_exchange_strong_explicit(&candidate->state, &expected, SLOT_WRITING,
                                                        memory_order_acquire, memory_order_relaxed))
                slot = candidate;
        }
    } else {
        h->next_cycles = 0;  // the last stall's next capture is no due time of this callout's
    }
    h->stall_sequence = sequence;
    h->stall_index = 0;
    h->stall_ahead = 1;
    if (slot == NULL) slot = claim_slot(h);  // the first, or the last one was freed meanwhile
    if (slot == NULL) {
        add(&h->dropped);
        return;
    }
    fill(h, slot, sequence, ucv);
    h->stall_index = 1;
}

// Unwinds this thread into `slot` (claimed: WRITING) as capture `h->stall_index` of `sequence`.
static void fill(self_handle *h, self_slot *slot, uint64_t sequence, void *ucv) {
    slot->time_ns = sw_mono_ns();
    slot->sequence = sequence;
    slot->start_cycles = sw_clock_start_cycles_relaxed(h->clock);
    slot->descriptor = sw_clock_descriptor_relaxed(h->clock);
    slot->label = sw_clock_label_relaxed(h->clock);
    slot->file = sw_clock_file_relaxed(h->clock);
    slot->index = h->stall_index;
    slot->rip = sw_interrupted_pc((const ucontext_t *)ucv);
    const int n = sw_unwind_here(slot->raw, SW_SAMPLER_MAX_FRAMES + SW_RAW_EXTRA);
    slot->raw_count = n < 0 ? 0 : n;
    sw_async_from_frame_pointer((const uintptr_t *)(const void *)slot->raw, slot->raw_count,
                                (uint64_t)((const ucontext_t *)ucv)->uc_mcontext.gregs[REG_RBP], &slot->chain);
    slot->ready_ns = sw_mono_ns();
    atomic_store_explicit(&slot->state, SLOT_READY, memory_order_release);
    add(&h->captures);
}

int sw_self_default_signal(void) { return SIGSTKFLT; }

int sw_self_install(int signo) {
    int rc = SW_SAMPLER_OK;
    pthread_mutex_lock(&g_mutex);
    const int current = atomic_load_explicit(&g_self_signo, memory_order_relaxed);
    if (current != 0) {
        rc = signo == current ? SW_SAMPLER_OK : SW_SAMPLER_EALREADY;
        goto done;
    }
    if (!sw_unwinder_loaded()) {
        rc = SW_SAMPLER_ENOTINSTALLED;
        goto done;
    }
    if (signo <= 0 || signo >= SIGRTMIN || signo == SIGKILL || signo == SIGSTOP) {
        rc = SW_SAMPLER_EINVAL;
        goto done;
    }
    rc = sw_signal_free(signo, SW_SELF_EINUSE);
    if (rc != SW_SAMPLER_OK) goto done;
    // Ticks arrive only in user mode, so there is no system call to restart.
    rc = sw_install_unwinding_handler(signo, self_handler);
    if (rc != SW_SAMPLER_OK) goto done;
    atomic_store_explicit(&g_self_signo, signo, memory_order_release);
done:
    pthread_mutex_unlock(&g_mutex);
    return rc;
}

int sw_self_prepare_thread(void) {
    const int signo = atomic_load_explicit(&g_self_signo, memory_order_acquire);
    if (signo == 0) return SW_SAMPLER_ENOTINSTALLED;
    return sw_unblock_signal(signo);
}

// The perf task-clock event on `tid`'s user-mode CPU time, disabled, its overflows routed to the
// thread as `signo`. Returns the descriptor, or SW_SELF_EPERF / SW_SELF_EFCNTL with *sys_errno.
static int open_task_clock(int tid, int signo, int64_t first_ns, int *sys_errno) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = (uint64_t)first_ns;
    attr.exclude_kernel = 1;  // user-mode time only: a tick never lands in a system call
    attr.exclude_hv = 1;
    attr.disabled = 1;
    attr.wakeup_events = 1;
    const int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        *sys_errno = errno;
        return SW_SELF_EPERF;
    }
    struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = tid};
    if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, signo) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) != 0) {
        *sys_errno = errno;
        close(fd);
        return SW_SELF_EFCNTL;
    }
    return fd;
}

// A POSIX timer on thread `tid`'s CPU clock (user + system time; the kernel's own
// MAKE_THREAD_CPUCLOCK, as glibc's pthread_getcpuclockid makes it), disarmed, signalling the
// thread with `signo` and the handle's index. 0, or SW_SELF_EPERF with *sys_errno.
static int open_cpu_timer(int tid, int signo, int index, timer_t *timer, int *sys_errno) {
    const clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 4 /* per thread */ | 2 /* sched */);
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = signo;
    event.sigev_value.sival_int = index;
    event._sigev_un._tid = tid;
    if (timer_create(clock, &event, timer) != 0) {
        *sys_errno = errno;
        return SW_SELF_EPERF;
    }
    return 0;
}

int sw_self_open(int tid, sw_callout_clock *clock, int kind, int64_t floor_ns, uint64_t budget_cycles,
                 uint64_t interval_cycles, uint64_t cycles_per_ms, int *sys_errno) {
    int ignored = 0;
    if (sys_errno == NULL) sys_errno = &ignored;
    *sys_errno = 0;
    const int signo = atomic_load_explicit(&g_self_signo, memory_order_acquire);
    if (signo == 0) return SW_SAMPLER_ENOTINSTALLED;
    if (tid <= 0 || clock == NULL || floor_ns < 2 || cycles_per_ms == 0) return SW_SAMPLER_EINVAL;
    if (kind != SW_SELF_TICK_PERF && kind != SW_SELF_TICK_CPU_TIMER) return SW_SAMPLER_EINVAL;
    pthread_mutex_lock(&g_mutex);
    int rc = SW_SELF_ENOSLOT;
    int index = -1;
    for (int i = 0; i < SW_SELF_MAX_THREADS; i++) {
        if (!atomic_load_explicit(&g_handles[i].live, memory_order_relaxed)) {
            index = i;
            break;
        }
    }
    if (index < 0) goto done;
    self_handle *h = &g_handles[index];
    // The first tick half a budget in; the handler programs each next one.
    int64_t first = (int64_t)(budget_cycles / 2 * 1000000 / cycles_per_ms);
    if (first < floor_ns) first = floor_ns;
    if (kind == SW_SELF_TICK_PERF) {
        rc = open_task_clock(tid, signo, first, sys_errno);
        if (rc < 0) goto done;
        h->fd = rc;
    } else {
        rc = open_cpu_timer(tid, signo, index, &h->timer, sys_errno);
        if (rc < 0) goto done;
        h->fd = -1;
    }
    h->kind = kind;
    h->tid = tid;
    h->clock = clock;
    atomic_store_explicit(&h->budget_cycles, budget_cycles, memory_order_relaxed);
    atomic_store_explicit(&h->interval_cycles, interval_cycles, memory_order_relaxed);
    h->cycles_per_ms = cycles_per_ms;
    h->floor_ns = floor_ns;
    h->period_ns = first;
    h->stall_sequence = 0;
    h->stall_index = 0;
    h->stall_ahead = 0;
    h->next_cycles = 0;
    atomic_store_explicit(&h->ticks, 0, memory_order_relaxed);
    atomic_store_explicit(&h->captures, 0, memory_order_relaxed);
    atomic_store_explicit(&h->dropped, 0, memory_order_relaxed);
    for (int i = 0; i < SLOTS; i++) atomic_store_explicit(&h->slots[i].state, SLOT_FREE, memory_order_relaxed);
    // Published last: the handler finds the handle only once it is whole.
    atomic_store_explicit(&h->live, 1, memory_order_release);
    rc = index;
done:
    pthread_mutex_unlock(&g_mutex);
    return rc;
}

static self_handle *handle_at(int handle) {
    if (handle < 0 || handle >= SW_SELF_MAX_THREADS) return NULL;
    self_handle *h = &g_handles[handle];
    return atomic_load_explicit(&h->live, memory_order_acquire) ? h : NULL;
}

int sw_self_enable(int handle) {
    self_handle *h = handle_at(handle);
    if (h == NULL) return SW_SAMPLER_EINVAL;
    if (h->kind == SW_SELF_TICK_CPU_TIMER) {
        const struct itimerspec first = {.it_interval = {0, 0},
                                         .it_value = {h->period_ns / 1000000000, h->period_ns % 1000000000}};
        return timer_settime(h->timer, 0, &first, NULL) == 0 ? SW_SAMPLER_OK : SW_SELF_EPERF;
    }
    if (ioctl(h->fd, PERF_EVENT_IOC_RESET, 0) != 0 || ioctl(h->fd, PERF_EVENT_IOC_ENABLE, 0) != 0) return SW_SELF_EPERF;
    return SW_SAMPLER_OK;
}

void sw_self_set_interval(int handle, uint64_t interval_cycles) {
    self_handle *h = handle_at(handle);
    if (h != NULL) atomic_store_explicit(&h->interval_cycles, interval_cycles, memory_order_relaxed);
}

// Whether the unwind went through the interrupted frame (its RIP among the first raw entries).
// It does not when the handler ran somewhere else than where the tick landed: ThreadSanitizer
// defers asynchronous signals to its next interceptor, where the stack is its own. Such a capture
// is no stack of the stall; the watchdog samples by itself instead.
static int unwound_from_rip(const self_slot *slot) {
    for (int i = 0; i < slot->raw_count && i < SW_RAW_EXTRA; i++) {
        if ((uintptr_t)slot->raw[i] == slot->rip) return 1;
    }
    return 0;
}

int sw_self_take(int handle, uint64_t sequence, int earliest, int64_t after_ns, sw_self_capture *out) {
    self_handle *h = handle_at(handle);
    if (h == NULL || out == NULL) return 0;
    // Claim every ready slot, keep the one wanted, give back the later ones and free the rest.
    int held[SLOTS];
    int best = -1;
    for (int i = 0; i < SLOTS; i++) {
        held[i] = 0;
        self_slot *slot = &h->slots[i];
        uint32_t expected = SLOT_READY;
        if (!atomic_compare_exchange_strong_explicit(&slot->state, &expected, SLOT_READING, memory_order_acquire,
                                                     memory_order_relaxed))
            continue;
        held[i] = 1;
        if (slot->sequence != sequence || slot->time_ns <= after_ns || !unwound_from_rip(slot)) continue;
        if (best < 0) {
            best = i;
        } else {
            const int64_t t = slot->time_ns, b = h->slots[best].time_ns;
            if (earliest ? t < b : t > b) best = i;
        }
    }
    if (best >= 0) {
        const self_slot *slot = &h->slots[best];
        out->sequence = slot->sequence;
        out->start_cycles = slot->start_cycles;
        out->descriptor = slot->descriptor;
        out->label = slot->label;
        out->file = slot->file;
        out->index = slot->index;
        out->time_ns = slot->time_ns;
        out->ready_ns = slot->ready_ns;
        out->reserved = 0;
        int handler_frames = 0, truncated = 0;
        out->frame_count = sw_trim_handler_frames(slot->raw, slot->raw_count, SW_SAMPLER_MAX_FRAMES + SW_RAW_EXTRA,
                                                  slot->rip, out->frames, SW_SAMPLER_MAX_FRAMES, &handler_frames,
                                                  &truncated);
        out->truncated = truncated;
        out->chain = slot->chain;
    }
    const int64_t taken = best >= 0 ? h->slots[best].time_ns : INT64_MAX;
    for (int i = 0; i < SLOTS; i++) {
        if (!held[i]) continue;
        self_slot *slot = &h->slots[i];
        // Later captures of the same callout stay for the next take; everything else is done.
        const int keep = best >= 0 && slot->sequence == sequence && slot->time_ns > taken && unwound_from_rip(slot);
        atomic_store_explicit(&slot->state, keep ? SLOT_READY : SLOT_FREE, memory_order_release);
    }
    return best >= 0;
}

void sw_self_get_stats(int handle, sw_self_stats *out) {
    if (out == NULL) return;
    memset(out, 0, sizeof *out);
    self_handle *h = handle_at(handle);
    if (h == NULL) return;
    out->ticks = atomic_load_explicit(&h->ticks, memory_order_relaxed);
    out->captures = atomic_load_explicit(&h->captures, memory_order_relaxed);
    out->dropped = atomic_load_explicit(&h->dropped, memory_order_relaxed);
}

int sw_self_in_handler(int handle) {
    if (handle < 0 || handle >= SW_SELF_MAX_THREADS) return 0;
    return (int)atomic_load_explicit(&g_handles[handle].in_handler, memory_order_relaxed);
}

void sw_self_close(int handle) {
    pthread_mutex_lock(&g_mutex);
    self_handle *h = handle_at(handle);
    if (h != NULL) {
        if (h->kind == SW_SELF_TICK_PERF) {
            (void)ioctl(h->fd, PERF_EVENT_IOC_DISABLE, 0);
        } else {
            const struct itimerspec disarmed = {{0, 0}, {0, 0}};
            (void)timer_settime(h->timer, 0, &disarmed, NULL);
        }
        // Unpublished before the tick source goes: a tick still pending finds no handle. One
        // already past the lookup is waited out (it may re-arm the timer: deleted after).
        atomic_store_explicit(&h->live, 0, memory_order_seq_cst);
        while (atomic_load_explicit(&g_in_handler, memory_order_seq_cst) != 0) sched_yield();
        if (h->kind == SW_SELF_TICK_PERF) {
            close(h->fd);
        } else {
            (void)timer_delete(h->timer);
        }
        h->fd = -1;
    }
    pthread_mutex_unlock(&g_mutex);
}
