// The global enqueue hook and the futex a pool watchdog parks on. See sw_pool_hook.h.
#include "sw_pool_hook.h"

#include <dlfcn.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// The runtime's types (swift/Runtime/Concurrency.h): both calls use the Swift calling convention.
typedef __attribute__((swiftcall)) void (*sw_enqueue_original)(void *job);
typedef __attribute__((swiftcall)) void (*sw_enqueue_hook)(void *job, sw_enqueue_original original);

static _Atomic uint64_t g_enqueued;
// 1 while some watchdog is parked (or about to park) waiting for jobs: the futex word.
static _Atomic uint32_t g_parked;
static sw_enqueue_hook g_previous;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_installed = -1;

static void sw_futex_wake_all(void) {
    syscall(SYS_futex, &g_parked, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

// Sequentially consistent add and load against the watchdog's store and load in sw_pool_park:
// one of the two always sees the other, so a job enqueued while the watchdog parks wakes it.
static __attribute__((swiftcall)) void sw_pool_hook(void *job, sw_enqueue_original original) {
    atomic_fetch_add_explicit(&g_enqueued, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&g_parked, memory_order_seq_cst) != 0 &&
        atomic_exchange_explicit(&g_parked, 0, memory_order_seq_cst) != 0) {
        sw_futex_wake_all();
    }
    if (g_previous != NULL) {
        g_previous(job, original);
    } else {
        original(job);
    }
}

static void sw_pool_install_once(void) {
    sw_enqueue_hook *slot = (sw_enqueue_hook *)dlsym(RTLD_DEFAULT, "swift_task_enqueueGlobal_hook");
    if (slot == NULL) return;
    // Never removed: the runtime reads the slot without synchronisation, so a hook must stay
    // callable for the process's life; with no watchdog parked it only counts.
    g_previous = *slot;
    *slot = sw_pool_hook;
    g_installed = 0;
}

int sw_pool_hook_install(void) {
    pthread_once(&g_once, sw_pool_install_once);
    return g_installed;
}

void sw_pool_hook_set_enabled_for_benchmark(int enabled) {
    if (sw_pool_hook_install() != 0) return;
    sw_enqueue_hook *slot = (sw_enqueue_hook *)dlsym(RTLD_DEFAULT, "swift_task_enqueueGlobal_hook");
    *slot = enabled ? sw_pool_hook : g_previous;
}

uint64_t sw_pool_enqueued(void) { return atomic_load_explicit(&g_enqueued, memory_order_seq_cst); }

void sw_pool_park(uint64_t seen, int64_t timeout_ns) {
    atomic_store_explicit(&g_parked, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&g_enqueued, memory_order_seq_cst) != seen) {
        atomic_store_explicit(&g_parked, 0, memory_order_seq_cst);
        return;
    }
    struct timespec timeout = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
    // Returns when woken, on a signal, at the timeout, or at once if the word is 0 already.
    syscall(SYS_futex, &g_parked, FUTEX_WAIT_PRIVATE, 1, timeout_ns < 0 ? NULL : &timeout, NULL, 0);
}

void sw_pool_wake(void) {
    atomic_store_explicit(&g_parked, 0, memory_order_seq_cst);
    sw_futex_wake_all();
}

void sw_thread_name(char name[16]) {
    name[0] = 0;
    prctl(PR_GET_NAME, name, 0, 0, 0);
    name[15] = 0;
}
