// C helpers for the tests; see include/CStallwatchTestSupport.h.
#define _GNU_SOURCE
#include "CStallwatchTestSupport.h"

#include "CStallwatchSampler.h"

#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef __has_feature
#define __has_feature(x) 0
#endif

int swt_built_with_address_sanitizer(void) {
#if __has_feature(address_sanitizer) || defined(__SANITIZE_ADDRESS__)
    return 1;
#else
    return 0;
#endif
}

int swt_built_with_thread_sanitizer(void) {
#if __has_feature(thread_sanitizer) || defined(__SANITIZE_THREAD__)
    return 1;
#else
    return 0;
#endif
}

// Reports the sanitizer printed in this process. ThreadSanitizer calls __tsan_on_report (a weak
// hook in its runtime, linked statically into the test executable) after printing each report;
// AddressSanitizer calls the callback set with __asan_set_error_report_callback. Under
// halt_on_error=1 (scripts/sanitize.sh) the process ends at the first report anyway; with
// TSAN_OPTIONS=halt_on_error=0 it goes on, and the tests' retry trait must not excuse it.
static atomic_int sanitizer_reports;

int swt_sanitizer_reports(void) { return atomic_load(&sanitizer_reports); }

#if __has_feature(thread_sanitizer) || defined(__SANITIZE_THREAD__)
void __tsan_on_report(void *report);
void __tsan_on_report(void *report) {
    (void)report;
    atomic_fetch_add(&sanitizer_reports, 1);
}
#endif

#if __has_feature(address_sanitizer) || defined(__SANITIZE_ADDRESS__)
void __asan_set_error_report_callback(void (*callback)(const char *));
static void count_address_sanitizer_report(const char *text) {
    (void)text;
    atomic_fetch_add(&sanitizer_reports, 1);
}
__attribute__((constructor)) static void swt_watch_address_sanitizer_reports(void) {
    __asan_set_error_report_callback(count_address_sanitizer_report);
}
#endif

// ---------------------------------------------------------------------------------------------
// Test threads.

struct swt_target {
    pthread_t thread;
    swt_target_kind kind;
    int signo;
    int pipe_fd[2];
    _Atomic int tid;
    _Atomic int running;
    _Atomic int stop;
    _Atomic int prepare_requested;
    _Atomic int prepare_rc;
    _Atomic uint64_t spins;
    _Atomic int stopped;
    _Atomic int errno_intact;
    _Atomic int read_interrupted;
};

#define SWT_ERRNO_SENTINEL 4242

static void pause_briefly(void) {
    const struct timespec ts = {.tv_sec = 0, .tv_nsec = 200000};
    nanosleep(&ts, NULL);
}

// Inlined, so the spinning functions call nothing: frame 0 is always in them.
static inline __attribute__((always_inline)) int should_leave_spin(swt_target *t) {
    return atomic_load_explicit(&t->stop, memory_order_relaxed)
           || atomic_load_explicit(&t->prepare_requested, memory_order_relaxed);
}

// The spinning functions the captures must find. noinline, and an empty asm after each call so
// the call is not turned into a jump (a tail call would drop the outer frame).
__attribute__((noinline, used)) static void swt_spin_inner(swt_target *t) {
    while (!should_leave_spin(t)) atomic_fetch_add_explicit(&t->spins, 1, memory_order_relaxed);
}

__attribute__((noinline, used)) static void swt_spin_outer(swt_target *t) {
    swt_spin_inner(t);
    __asm__ volatile("" ::: "memory");
}

// Same code, different addresses: run only by SWT_TARGET_SPIN_FRESH.
__attribute__((noinline, used)) static void swt_spin_fresh_inner(swt_target *t) {
    while (!should_leave_spin(t)) atomic_fetch_add_explicit(&t->spins, 1, memory_order_relaxed);
}

__attribute__((noinline, used)) static void swt_spin_fresh_outer(swt_target *t) {
    swt_spin_fresh_inner(t);
    __asm__ volatile("" ::: "memory");
}

uintptr_t swt_address_of_spin_inner(void) { return (uintptr_t)&swt_spin_inner; }
uintptr_t swt_address_of_spin_outer(void) { return (uintptr_t)&swt_spin_outer; }
uintptr_t swt_address_of_spin_fresh_inner(void) { return (uintptr_t)&swt_spin_fresh_inner; }
uintptr_t swt_address_of_spin_fresh_outer(void) { return (uintptr_t)&swt_spin_fresh_outer; }

__attribute__((noinline)) static int swt_dirty_stack(int depth) {
    volatile char pad[48];
    pad[0] = (char)depth;
    return depth > 0 ? swt_dirty_stack(depth - 1) + pad[0] : pad[0];
}

__attribute__((noinline)) long swt_read_below_stack_allocation(int fd, unsigned long bytes, int depth) {
    (void)swt_dirty_stack(depth);
    char *buffer = alloca(bytes);
    buffer[0] = 0;
    const long n = read(fd, buffer, 1);
    __asm__ volatile("" ::: "memory");
    return n + buffer[0];
}

static void set_signal_blocked(int signo, int blocked) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

static void *target_main(void *arg) {
    swt_target *t = arg;
    atomic_store(&t->tid, (int)gettid());
    switch (t->kind) {
    case SWT_TARGET_SPIN_PREPARED:
    case SWT_TARGET_SPIN_FRESH:
    case SWT_TARGET_PREPARED_IN_READ:
        atomic_store(&t->prepare_rc, sw_sampler_prepare_thread());
        break;
    case SWT_TARGET_BLOCKED_IN_READ:
    case SWT_TARGET_SPIN_UNPREPARED:
        set_signal_blocked(t->signo, 1);
        break;
    }
    atomic_store(&t->running, 1);
    if (t->kind == SWT_TARGET_PREPARED_IN_READ) {
        char byte;
        for (;;) {
            const ssize_t n = read(t->pipe_fd[0], &byte, 1);
            if (n >= 0) break;
            if (errno == EINTR) atomic_fetch_add(&t->read_interrupted, 1);
        }
        return NULL;
    }
    if (t->kind == SWT_TARGET_BLOCKED_IN_READ) {
        char byte;
        while (read(t->pipe_fd[0], &byte, 1) < 0) { }
        // Queued signals are delivered as soon as they are unblocked (before this call returns).
        set_signal_blocked(t->signo, 0);
        return NULL;
    }
    int intact = 1;
    for (;;) {
        errno = SWT_ERRNO_SENTINEL;
        if (t->kind == SWT_TARGET_SPIN_FRESH) swt_spin_fresh_outer(t);
        else swt_spin_outer(t);
        if (errno != SWT_ERRNO_SENTINEL) intact = 0;
        if (atomic_load(&t->stop)) break;
        if (atomic_load(&t->prepare_requested)) {
            atomic_store(&t->prepare_rc, sw_sampler_prepare_thread());
            atomic_store(&t->prepare_requested, 0);
        }
    }
    atomic_store(&t->errno_intact, intact);
    return NULL;
}

swt_target *swt_target_start(swt_target_kind kind, int signo) {
    swt_target *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->kind = kind;
    t->signo = signo;
    if (pipe(t->pipe_fd) != 0) {
        free(t);
        return NULL;
    }
    if (pthread_create(&t->thread, NULL, target_main, t) != 0) {
        close(t->pipe_fd[0]);
        close(t->pipe_fd[1]);
        free(t);
        return NULL;
    }
    while (!atomic_load(&t->running)) pause_briefly();
    const int prepares = kind == SWT_TARGET_SPIN_PREPARED || kind == SWT_TARGET_SPIN_FRESH
                         || kind == SWT_TARGET_PREPARED_IN_READ;
    if (prepares && atomic_load(&t->prepare_rc) < 0) {
        swt_target_free(t);
        return NULL;
    }
    return t;
}

int swt_target_tid(const swt_target *t) { return atomic_load(&t->tid); }

int swt_target_prepare_rc(const swt_target *t) { return atomic_load(&t->prepare_rc); }

int swt_target_prepare_now(swt_target *t) {
    atomic_store(&t->prepare_requested, 1);
    while (atomic_load(&t->prepare_requested)) pause_briefly();
    return atomic_load(&t->prepare_rc);
}

void swt_target_stop(swt_target *t) {
    if (atomic_exchange(&t->stopped, 1)) return;
    atomic_store(&t->stop, 1);
    const char byte = 'x';
    while (write(t->pipe_fd[1], &byte, 1) < 0) { }
    pthread_join(t->thread, NULL);
}

void swt_target_free(swt_target *t) {
    swt_target_stop(t);
    close(t->pipe_fd[0]);
    close(t->pipe_fd[1]);
    free(t);
}

int swt_target_errno_intact(const swt_target *t) { return atomic_load(&t->errno_intact); }

int swt_target_read_interrupted(const swt_target *t) { return atomic_load(&t->read_interrupted); }

// ---------------------------------------------------------------------------------------------
// The loader lock.

struct swt_loader_lock {
    pthread_t thread;
    _Atomic int held;
    _Atomic int release;
};

static int hold_in_callback(struct dl_phdr_info *info, size_t size, void *data) {
    (void)info;
    (void)size;
    struct swt_loader_lock *lock = data;
    atomic_store(&lock->held, 1);
    while (!atomic_load(&lock->release)) pause_briefly();
    return 1;   // stop iterating
}

static void *loader_lock_main(void *arg) {
    dl_iterate_phdr(hold_in_callback, arg);
    return NULL;
}

swt_loader_lock *swt_loader_lock_hold(void) {
    struct swt_loader_lock *lock = calloc(1, sizeof *lock);
    if (lock == NULL) return NULL;
    if (pthread_create(&lock->thread, NULL, loader_lock_main, lock) != 0) {
        free(lock);
        return NULL;
    }
    while (!atomic_load(&lock->held)) pause_briefly();
    return lock;
}

void swt_loader_lock_release(swt_loader_lock *lock) {
    atomic_store(&lock->release, 1);
    pthread_join(lock->thread, NULL);
    free(lock);
}

// ---------------------------------------------------------------------------------------------
// Senders and lookups.

int swt_send_tkill(int tid, int signo) {
    return syscall(SYS_tgkill, getpid(), tid, signo) == 0 ? 0 : -1;
}

int swt_send_queued(int tid, int signo, uint64_t value) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = signo;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_ptr = (void *)(uintptr_t)value;
    return syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &si) == 0 ? 0 : -1;
}

const char *swt_object_of(uintptr_t address) {
    Dl_info info;
    if (dladdr((void *)address, &info) == 0) return NULL;
    return info.dli_fname;
}

int swt_sigrtmin(void) { return SIGRTMIN; }

int swt_sigrtmax(void) { return SIGRTMAX; }

int swt_gettid(void) { return (int)gettid(); }

int swt_ignore_signal(int signo, int ignore) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ignore ? SIG_IGN : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    return sigaction(signo, &sa, NULL);
}
