// CStallwatchSampler: the sampling signal handler and its capture protocol.
// Everything reachable from sw_handler must be async-signal-safe; see docs/sampler-notes.md.
#define _GNU_SOURCE
#include "CStallwatchSampler.h"
#include "asyncchain.h"
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

// ---------------------------------------------------------------------------------------------
// The platform, stated once for this target: Linux on x86_64. The architecture-specific parts
// of the sampler are the two definitions below (docs/watchdog.md, "Porting").
#if !defined(__linux__) || !defined(__x86_64__)
#error "CStallwatchSampler supports Linux on x86_64 only (see docs/watchdog.md, Porting)"
#endif

// libunwind exports its local-only cursor API under an architecture prefix (unw_backtrace has
// its plain name).
#define SW_UNW_ARCH_SYMBOL(name) ("_ULx86_64_" name)

// The interrupted instruction: sw_interrupted_pc in internal.h.

// ---------------------------------------------------------------------------------------------
// libunwind, resolved with dlsym. We declare the few entry points ourselves instead of including
// <libunwind.h>: the package then needs only the runtime libunwind8, and nothing can accidentally
// reference a libunwind symbol at link time (which would make the link pull -lunwind and let
// libunwind's _Unwind_* replace libgcc_s's for the whole process).
// Values from libunwind-common.h (stable ABI since libunwind 0.99).
typedef int (*sw_unw_backtrace_fn)(void **buffer, int size);
typedef int (*sw_unw_set_caching_policy_fn)(void *addr_space, int policy);
typedef int (*sw_unw_set_cache_size_fn)(void *addr_space, size_t size, int flag);
enum { SW_UNW_CACHE_NONE = 0, SW_UNW_CACHE_GLOBAL = 1, SW_UNW_CACHE_PER_THREAD = 2 };

static sw_unw_backtrace_fn g_unw_backtrace;   // set once, before the handler is installed
static const char *g_libunwind_path;

// ---------------------------------------------------------------------------------------------
// The slot. One capture at a time, so one slot. Its `state` word says who owns it:
//   0                     idle (never used, or the last request was revoked before any handler claimed it)
//   req | REQ_ARMED       the capturer waits for request `req`; only a handler carrying `req` may claim
//   req | REQ_CLAIMED     the handler for `req` is writing the slot (nobody else touches it)
//   req | REQ_DONE        the handler for `req` finished; the slot holds its stack
// Request ids are multiples of 4, so the low two bits hold the state and a handler for an old id can
// never match a newer ARMED value. The capturer revokes a timed-out request with a CAS ARMED -> 0, so
// a handler that runs later fails its CAS ARMED -> CLAIMED and leaves the slot alone.
#define REQ_ARMED 0u
#define REQ_CLAIMED 1u
#define REQ_DONE 2u
#define REQ_STATE_MASK 3u
#define REQ_STEP 4u

#define RAW_EXTRA SW_RAW_EXTRA

static struct {
    _Atomic uint64_t state;
    _Atomic uint32_t wake_word;   // futex word: +1 by every handler that completes
    int want;                     // frames the handler should unwind (written before ARMED)
    int raw_count;                // below: written by the claiming handler only
    uintptr_t rip;
    int64_t handler_ns;
    int64_t ready_ns;
    void *raw[SW_SAMPLER_MAX_FRAMES + RAW_EXTRA];
    sw_async_chain chain;
} g_slot;

_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "futex word must be a plain 32-bit int");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the handler needs lock-free 64-bit atomics");

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;  // install + capture; never in the handler
static _Atomic int g_signo;          // 0 until installed
static uint64_t g_next_req;          // under g_mutex
static uint64_t g_abandoned_req;     // under g_mutex: timed out while CLAIMED (for the late counter)

// Diagnostic counters (sw_sampler_get_stats; the sampler's tests read them).
static struct {
    _Atomic uint64_t captures, completed, timeouts, stale, late, foreign;
} g_stats;

static inline int64_t mono_ns(void) { return sw_mono_ns(); }

static inline void counter_add(_Atomic uint64_t *c) {
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// The handler. Async-signal-safe: atomics, clock_gettime, raw syscalls, and libunwind's
// unw_backtrace, which is safe here only because its caches were primed (see the notes):
// no malloc, no stdio, no locks of ours.
static void sw_handler(int signo, siginfo_t *info, void *ucv) {
    (void)signo;
    // errno first: the interrupted code may be between a failing call and reading errno, and
    // libunwind's memory validation (mincore/msync) and our futex call can overwrite it.
    const int saved_errno = errno;
    const int64_t entry_ns = mono_ns();

    // Only signals queued by sw_sampler_capture carry SI_QUEUE and a request id; a plain
    // kill/tgkill from elsewhere has si_code SI_USER/SI_TKILL and is ignored.
    if (info == NULL || info->si_code != SI_QUEUE) {
        counter_add(&g_stats.foreign);
        goto out;
    }
    const uint64_t req = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
    if (req == 0 || (req & REQ_STATE_MASK) != 0) {
        counter_add(&g_stats.foreign);
        goto out;
    }
    uint64_t expected = req | REQ_ARMED;
    if (!atomic_compare_exchange_strong_explicit(&g_slot.state, &expected, req | REQ_CLAIMED,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        // Our capture timed out and was revoked (or this is a duplicate): the slot belongs to
        // someone else now. Touch nothing.
        counter_add(&g_stats.stale);
        goto out;
    }

    // Frame 0 is the interrupted instruction itself, taken from the kernel's saved context: exact,
    // and independent of how libunwind treats the signal trampoline.
    const ucontext_t *uc = (const ucontext_t *)ucv;
    g_slot.rip = sw_interrupted_pc(uc);
    g_slot.handler_ns = entry_ns;
    // unw_backtrace walks from here: our frame, __restore_rt (recognised as a sigreturn frame,
    // whose saved registers lead back to the interrupted frame), then the interrupted stack.
    // The capturer finds rip in the first entries and drops everything before it.
    int n = g_unw_backtrace(g_slot.raw, g_slot.want);
    g_slot.raw_count = n < 0 ? 0 : n;
    // The async callers, read now: the contexts are exactly those of the interrupted job.
    _Static_assert(sizeof(void *) == sizeof(uintptr_t), "raw frames are read as addresses");
    sw_async_from_frame_pointer((const uintptr_t *)(const void *)g_slot.raw, g_slot.raw_count,
                                (uint64_t)uc->uc_mcontext.gregs[REG_RBP], &g_slot.chain);
    g_slot.ready_ns = mono_ns();

    atomic_store_explicit(&g_slot.state, req | REQ_DONE, memory_order_release);
    // Bump the futex word after publishing DONE: a capturer that read the old word either sees
    // DONE on its next check or gets EAGAIN/woken from FUTEX_WAIT. No lost wake-up.
    atomic_fetch_add_explicit(&g_slot.wake_word, 1, memory_order_release);
    syscall(SYS_futex, (uint32_t *)&g_slot.wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);

out:
    errno = saved_errno;
}

// ---------------------------------------------------------------------------------------------
// Loading libunwind. Caller holds g_mutex.
static int load_libunwind(void) {
    if (g_unw_backtrace != NULL) return SW_SAMPLER_OK;

    // RTLD_LOCAL: libunwind's exported _Unwind_* stay out of the global scope, so every later
    //   lookup (libstdc++, libswiftCore, Foundation) still binds to libgcc_s.
    // RTLD_NOW: resolve all of libunwind's relocations here, not lazily inside the handler.
    // RTLD_NODELETE: a dlclose elsewhere (someone else's dlopen of the same file) can never unmap
    //   code the handler may be running.
    void *h = dlopen("libunwind.so.8", RTLD_LOCAL | RTLD_NOW | RTLD_NODELETE);
    if (h == NULL) return SW_SAMPLER_ENOUNWIND;
    // unw_backtrace is exported under its plain name (the cursor API under SW_UNW_ARCH_SYMBOL).
    void *bt_sym = dlsym(h, "unw_backtrace");
    if (bt_sym == NULL) return SW_SAMPLER_ENOUNWIND;
    sw_unw_backtrace_fn bt;
    memcpy(&bt, &bt_sym, sizeof bt);   // POSIX object->function pointer idiom (ISO C has none)

    // Cache policy. Debian's libunwind 1.6.2 is built without --enable-per-thread-cache: the only
    // register-state cache is the global one. With UNW_CACHE_PER_THREAD it would be used WITHOUT
    // its lock (libunwind 1.6 get_rs_cache), racing between a late handler and a new capture, or
    // a prepare_thread warm-up. UNW_CACHE_GLOBAL (the default; set explicitly so a different build
    // cannot surprise us) takes a mutex with all signals blocked, so it cannot self-deadlock.
    void **as = (void **)dlsym(h, SW_UNW_ARCH_SYMBOL("local_addr_space"));
    void *policy_sym = dlsym(h, SW_UNW_ARCH_SYMBOL("set_caching_policy"));
    void *size_sym = dlsym(h, SW_UNW_ARCH_SYMBOL("set_cache_size"));
    sw_unw_set_caching_policy_fn set_policy = NULL;
    sw_unw_set_cache_size_fn set_size = NULL;
    if (policy_sym != NULL) memcpy(&set_policy, &policy_sym, sizeof set_policy);
    if (size_sym != NULL) memcpy(&set_size, &size_sym, sizeof set_size);
    if (as != NULL && *as != NULL) {
        if (set_policy != NULL) (void)set_policy(*as, SW_UNW_CACHE_GLOBAL);
        // 2^10 register-state entries instead of 2^7, allocated now (mmap), not in the handler.
        // Debian's 1.6.2 accepts it (returns 0); builds with __thread support refuse (-1): harmless.
        if (set_size != NULL) (void)set_size(*as, 1024, 0);
    }

    Dl_info di;
    if (dladdr(bt_sym, &di) != 0) g_libunwind_path = di.dli_fname;
    g_unw_backtrace = bt;
    return SW_SAMPLER_OK;
}

// Warm-up unwind on the calling thread: runs libunwind's one-time init (tdep_init, mempools),
// fills the global register-state cache and dl_iterate_phdr results for common frames.
static void warm_up_unwind(void) {
    void *tmp[SW_SAMPLER_MAX_FRAMES];
    (void)g_unw_backtrace(tmp, SW_SAMPLER_MAX_FRAMES);
}

int sw_sampler_default_signal(void) {
    // SIGRTMIN is 34 with glibc (32, 33 are reserved for NPTL). +4 stays clear of the first few,
    // which other libraries and profilers tend to pick (SIGRTMIN itself, +1).
    return SIGRTMIN + 4;
}

int sw_sampler_installed_signal(void) {
    return atomic_load_explicit(&g_signo, memory_order_acquire);
}

int sw_sampler_install(int signo) {
    int rc = SW_SAMPLER_OK;
    pthread_mutex_lock(&g_mutex);
    const int current = atomic_load_explicit(&g_signo, memory_order_relaxed);
    if (current != 0) {
        rc = (signo == current) ? SW_SAMPLER_OK : SW_SAMPLER_EALREADY;
        goto done;
    }
    // Real-time signals only: they queue (one per capture, each with its own request id) instead
    // of merging, and nothing in the runtime sends them by default.
    if (signo < SIGRTMIN || signo > SIGRTMAX) {
        rc = SW_SAMPLER_EINVAL;
        goto done;
    }
    // Refuse a signal someone else already handles or ignores: taking it over would break them,
    // and their senders would trigger our handler (harmlessly, but counted as foreign).
    rc = sw_signal_free(signo, SW_SAMPLER_EINUSE);
    if (rc != SW_SAMPLER_OK) goto done;
    rc = load_libunwind();
    if (rc != SW_SAMPLER_OK) goto done;
    (void)sw_async_prepare();
    rc = sw_install_unwinding_handler(signo, sw_handler);
    if (rc != SW_SAMPLER_OK) goto done;
    warm_up_unwind();
    atomic_store_explicit(&g_signo, signo, memory_order_release);
done:
    pthread_mutex_unlock(&g_mutex);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Capture. Caller holds g_mutex.
static int capture_locked(int signo, int tid, uintptr_t *frames, int capacity, int64_t timeout_ns,
                          sw_capture_result *r) {
    uint64_t st = atomic_load_explicit(&g_slot.state, memory_order_acquire);
    if ((st & REQ_STATE_MASK) == REQ_CLAIMED) {
        // A handler from an earlier, timed-out capture is still writing the slot.
        return SW_SAMPLER_EBUSY;
    }
    if (g_abandoned_req != 0) {
        if (st == (g_abandoned_req | REQ_DONE)) counter_add(&g_stats.late);
        g_abandoned_req = 0;
    }

    // Arm. The state is 0 or some old id|DONE here; handlers only ever CAS from their own
    // id|ARMED, so a plain store cannot race with them.
    g_next_req += REQ_STEP;
    if (g_next_req == 0) g_next_req = REQ_STEP;   // 2^62 captures later; never use id 0
    const uint64_t req = g_next_req;
    r->request_id = req;
    g_slot.want = capacity + RAW_EXTRA;
    atomic_store_explicit(&g_slot.state, req | REQ_ARMED, memory_order_release);

    // rt_tgsigqueueinfo (not tgkill) so the signal carries the request id in si_value.
    // Sending to our own process with si_code SI_QUEUE is allowed.
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = signo;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_ptr = (void *)(uintptr_t)req;

    r->sent_ns = mono_ns();
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &si) != 0) {
        r->sys_errno = errno;
        atomic_store_explicit(&g_slot.state, 0, memory_order_release);   // nothing was queued
        r->sent_ns = 0;
        return r->sys_errno == ESRCH ? SW_SAMPLER_ENOTHREAD : SW_SAMPLER_ESEND;
    }
    counter_add(&g_stats.captures);

    const int64_t deadline = r->sent_ns + timeout_ns;
    const struct timespec abs_deadline = {
        .tv_sec = (time_t)(deadline / 1000000000), .tv_nsec = (long)(deadline % 1000000000)};
    for (;;) {
        const uint32_t word = atomic_load_explicit(&g_slot.wake_word, memory_order_acquire);
        st = atomic_load_explicit(&g_slot.state, memory_order_acquire);
        if (st == (req | REQ_DONE)) break;
        if (mono_ns() >= deadline) {
            uint64_t expected = req | REQ_ARMED;
            if (atomic_compare_exchange_strong_explicit(&g_slot.state, &expected, 0,
                                                        memory_order_acq_rel, memory_order_acquire)) {
                // Revoked: the queued signal, if it is ever delivered, will find the slot not
                // armed for its id and do nothing.
                counter_add(&g_stats.timeouts);
                r->timed_out = 1;
                return SW_SAMPLER_ETIMEDOUT;
            }
            if (expected == (req | REQ_DONE)) break;   // finished right at the deadline
            // CLAIMED: the handler is unwinding right now (or was preempted/stopped mid-way). We do
            // not wait past the caller's timeout; the slot stays the handler's until it publishes
            // DONE, and captures meanwhile return SW_SAMPLER_EBUSY instead of sharing it.
            counter_add(&g_stats.timeouts);
            g_abandoned_req = req;
            r->timed_out = 1;
            r->late_handler = 1;
            return SW_SAMPLER_ETIMEDOUT;
        }
        // Absolute CLOCK_MONOTONIC deadline (FUTEX_WAIT_BITSET), so spurious wake-ups and EINTR
        // do not stretch the timeout.
        syscall(SYS_futex, (uint32_t *)&g_slot.wake_word, FUTEX_WAIT_BITSET_PRIVATE, word,
                &abs_deadline, NULL, FUTEX_BITSET_MATCH_ANY);
    }

    r->woken_ns = mono_ns();
    r->handler_ns = g_slot.handler_ns;
    r->ready_ns = g_slot.ready_ns;

    int handler_frames = 0, truncated = 0;
    const int n = sw_trim_handler_frames(g_slot.raw, g_slot.raw_count, g_slot.want, g_slot.rip, frames, capacity,
                                         &handler_frames, &truncated);
    r->handler_frames = handler_frames;
    r->truncated = truncated;
    r->chain = g_slot.chain;
    r->frame_count = n;
    counter_add(&g_stats.completed);
    return n;
}

int sw_trim_handler_frames(void *const *raw, int raw_count, int raw_capacity, uintptr_t rip, uintptr_t *frames,
                           int capacity, int *handler_frames, int *truncated) {
    // Drop the handler's frames: everything up to and including the first raw entry equal to the
    // interrupted RIP (libunwind reports the sigreturn frame's RIP unadjusted). If it is not there
    // (unwinding through the trampoline failed), we return RIP alone rather than guess.
    int first_caller = raw_count;
    *handler_frames = raw_count;
    for (int i = 0; i < raw_count && i < RAW_EXTRA; i++) {
        if ((uintptr_t)raw[i] == rip) {
            first_caller = i + 1;
            *handler_frames = i;
            break;
        }
    }
    int n = 0;
    frames[n++] = rip;
    int i = first_caller;
    for (; i < raw_count && n < capacity; i++) frames[n++] = (uintptr_t)raw[i];
    // Deeper than asked if we stopped copying early, or libunwind filled the whole buffer.
    *truncated = (i < raw_count || raw_count >= raw_capacity) ? 1 : 0;
    return n;
}

int sw_unwind_here(void **buffer, int size) {
    return g_unw_backtrace == NULL ? 0 : g_unw_backtrace(buffer, size);
}

int sw_unwinder_loaded(void) {
    return atomic_load_explicit(&g_signo, memory_order_acquire) != 0;
}

int sw_sampler_capture(int tid, uintptr_t *frames, int capacity, int64_t timeout_ns,
                       sw_capture_result *out) {
    sw_capture_result r;
    memset(&r, 0, sizeof r);
    int rc;
    const int signo = atomic_load_explicit(&g_signo, memory_order_acquire);
    if (signo == 0) {
        rc = SW_SAMPLER_ENOTINSTALLED;
    } else if (tid <= 0 || frames == NULL || capacity <= 0 || timeout_ns < 0) {
        rc = SW_SAMPLER_EINVAL;
    } else {
        if (capacity > SW_SAMPLER_MAX_FRAMES) capacity = SW_SAMPLER_MAX_FRAMES;
        pthread_mutex_lock(&g_mutex);
        rc = capture_locked(signo, tid, frames, capacity, timeout_ns, &r);
        pthread_mutex_unlock(&g_mutex);
    }
    if (out != NULL) *out = r;
    return rc;
}

int sw_signal_free(int signo, int in_use) {
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) return SW_SAMPLER_ESYS;
    // sa_handler/sa_sigaction share storage; SIG_DFL is 0.
    return old.sa_handler == SIG_DFL ? SW_SAMPLER_OK : in_use;
}

int sw_install_unwinding_handler(int signo, void (*handler)(int, siginfo_t *, void *)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    return sigaction(signo, &sa, NULL) == 0 ? SW_SAMPLER_OK : SW_SAMPLER_ESYS;
}

int sw_unblock_signal(int signo) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    return pthread_sigmask(SIG_UNBLOCK, &set, NULL) == 0 ? SW_SAMPLER_OK : SW_SAMPLER_ESYS;
}

int sw_sampler_prepare_thread(void) {
    const int signo = atomic_load_explicit(&g_signo, memory_order_acquire);
    if (signo == 0) return SW_SAMPLER_ENOTINSTALLED;
    if (sw_unblock_signal(signo) != SW_SAMPLER_OK) return SW_SAMPLER_ESYS;
    const int tid = (int)gettid();
    // Capture ourselves once through the real path. The signal is delivered to this thread before
    // the rt_tgsigqueueinfo syscall returns, so the handler runs synchronously here, outside any
    // interesting state. That first run on this thread does what must not happen later inside an
    // arbitrary interruption: allocate libunwind's dynamic TLS block and per-thread trace cache
    // (malloc/mmap, pthread_setspecific), bind the handler's lazy PLT entries, and cache the
    // unwind rules for sw_handler, __restore_rt and this thread's outer frames.
    uintptr_t scratch[SW_SAMPLER_MAX_FRAMES];
    const int rc = sw_sampler_capture(tid, scratch, SW_SAMPLER_MAX_FRAMES, 1000000000, NULL);
    if (rc < 0) return rc;
    return tid;
}

void sw_sampler_get_stats(sw_sampler_stats *out) {
    if (out == NULL) return;
    out->captures = atomic_load_explicit(&g_stats.captures, memory_order_relaxed);
    out->completed = atomic_load_explicit(&g_stats.completed, memory_order_relaxed);
    out->timeouts = atomic_load_explicit(&g_stats.timeouts, memory_order_relaxed);
    out->stale_signals = atomic_load_explicit(&g_stats.stale, memory_order_relaxed);
    out->late_completions = atomic_load_explicit(&g_stats.late, memory_order_relaxed);
    out->foreign_signals = atomic_load_explicit(&g_stats.foreign, memory_order_relaxed);
}

const char *sw_sampler_libunwind_path(void) {
    return g_libunwind_path;
}

const char *sw_sampler_strerror(int code) {
    switch (code) {
    case SW_SAMPLER_OK: return "ok";
    case SW_SAMPLER_EINVAL: return "invalid argument (signal must be in SIGRTMIN...SIGRTMAX)";
    case SW_SAMPLER_EINUSE: return "signal already has a handler installed by someone else";
    case SW_SAMPLER_EALREADY: return "sampler already installed on another signal";
    case SW_SAMPLER_ENOUNWIND: return "cannot load libunwind.so.8 or resolve unw_backtrace";
    case SW_SAMPLER_ENOTINSTALLED: return "sampler not installed";
    case SW_SAMPLER_ESEND: return "could not queue the sampling signal";
    case SW_SAMPLER_ENOTHREAD: return "no such thread";
    case SW_SAMPLER_ETIMEDOUT: return "timed out: thread did not run the handler (state D, signal blocked or stopped)";
    case SW_SAMPLER_EBUSY: return "a late handler from a timed-out capture is still running";
    case SW_SAMPLER_ESYS: return "system call failed";
    default: return code >= 0 ? "ok" : "unknown error";
    }
}

const char *sw_sampler_unwinder_owner(void) {
    void *sym = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
    if (sym == NULL) return NULL;
    Dl_info di;
    if (dladdr(sym, &di) == 0) return NULL;
    return di.dli_fname;
}

