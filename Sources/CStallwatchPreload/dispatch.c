// Dispatched items, interposed: each item of DispatchQueue.main and each Swift job runs between
// sw_dispatch_item_begin and sw_dispatch_item_end (sw_loop_slot.h), on whatever thread runs it.
//
// - Swift jobs: the Swift runtime hands every job to dispatch_async_f (or dispatch_after_f, for a
//   task that sleeps) with one of its own functions as the work function. Such a call gets one of
//   our trampolines instead, which runs the runtime's function between the bracket: no
//   allocation, the job is the context as before. Jobs for the main queue are the main queue's
//   items (@MainActor on a dispatchMain() program); all others run on pool threads.
// - Blocks for the main queue (DispatchQueue.main.async, asyncAfter): dispatch_async and
//   dispatch_after with a plain block become dispatch_async_f and dispatch_after_f with the
//   copied block as the context, as libdispatch itself stores them; the trampoline invokes and
//   releases it. Blocks made by dispatch_block_create (a DispatchWorkItem, or flags) carry
//   libdispatch's own invoke function and are left alone, as are other queues' blocks.
// What is not submitted through these calls (a dispatch source's handler, DispatchQueue.main.sync)
// is not timed here; the heartbeat still sees it (docs/watchdog.md, "Dispatched items, timed").
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sw_loop_slot.h"

typedef void *swp_queue;
typedef void (*swp_function)(void *);
typedef uint64_t swp_time;
/// The blocks ABI's layout (what every block starts with).
typedef struct swp_block {
    void *isa;
    int flags;
    int reserved;
    void (*invoke)(struct swp_block *);
} swp_block;

/// An executable segment of a library: [start, end).
typedef struct swp_range {
    uintptr_t start;
    uintptr_t end;
} swp_range;

static inline int swp_in(swp_range range, const void *address) {
    return (uintptr_t)address >= range.start && (uintptr_t)address < range.end;
}

typedef struct swp_find {
    const char *name;
    swp_range range;
} swp_find;

static int swp_find_segment(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    swp_find *find = data;
    const char *slash = info->dlpi_name != NULL ? strrchr(info->dlpi_name, '/') : NULL;
    const char *file = slash != NULL ? slash + 1 : info->dlpi_name;
    if (file == NULL || strncmp(file, find->name, strlen(find->name)) != 0) return 0;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        if (header->p_type != PT_LOAD || (header->p_flags & PF_X) == 0) continue;
        find->range.start = info->dlpi_addr + header->p_vaddr;
        find->range.end = find->range.start + header->p_memsz;
        return 1;
    }
    return 0;
}

/// What the interposers need, found once: the libraries' code, the main queue, the real calls.
typedef struct swp_dispatch {
    swp_range concurrency;  // libswift_Concurrency.so's code: the runtime's work functions
    swp_range dispatch;     // libdispatch.so's code: its own block invoke functions
    swp_queue main_queue;
    void *(*copy)(const void *);
    void (*release)(const void *);
    void (*async_f)(swp_queue, void *, swp_function);
    void (*after_f)(swp_time, swp_queue, void *, swp_function);
    void (*async)(swp_queue, void *);
    void (*after)(swp_time, swp_queue, void *);
} swp_dispatch;

/// What was found, published by pointer: a look fills a fresh entry, then publishes it. The first
/// look runs once; a program that had not loaded the Swift runtime or libdispatch yet is looked at
/// again every 4096 calls, a few times at most (a look is a walk of the loaded libraries).
enum { SWP_LOOKS = 8 };
static swp_dispatch g_looks[SWP_LOOKS];
static const swp_dispatch *g_found;
static uint32_t g_looked;  // looks so far
static __thread uint32_t t_calls __attribute__((tls_model("initial-exec")));  // calls since a look, while incomplete
static uint32_t g_looking;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int swp_complete(const swp_dispatch *found) {
    return found->concurrency.end != 0 && found->dispatch.end != 0 && found->main_queue != NULL &&
           found->copy != NULL && found->release != NULL && found->async_f != NULL && found->after_f != NULL &&
           found->async != NULL && found->after != NULL;
}

/// The C library's next definition of `name`, else libdispatch's own: a libdispatch loaded
/// RTLD_LOCAL (by a Python extension module, say) is not in the global scope RTLD_NEXT searches.
static void *swp_next(const char *name) {
    void *next = dlsym(RTLD_NEXT, name);
    if (next != NULL) return next;
    void *library = dlopen("libdispatch.so", RTLD_LAZY | RTLD_NOLOAD);
    if (library == NULL) return NULL;
    next = dlsym(library, name);
    dlclose(library);  // NOLOAD took a reference: the library stays loaded
    return next;
}

static void swp_look(void) {
    const uint32_t index = __atomic_load_n(&g_looked, __ATOMIC_RELAXED);
    if (index >= SWP_LOOKS) return;
    swp_dispatch *found = &g_looks[index];
    found->async_f = (void (*)(swp_queue, void *, swp_function))swp_next("dispatch_async_f");
    found->after_f = (void (*)(swp_time, swp_queue, void *, swp_function))swp_next("dispatch_after_f");
    found->async = (void (*)(swp_queue, void *))swp_next("dispatch_async");
    found->after = (void (*)(swp_time, swp_queue, void *))swp_next("dispatch_after");
    swp_find concurrency = {.name = "libswift_Concurrency.so"};
    swp_find dispatch = {.name = "libdispatch.so"};
    dl_iterate_phdr(swp_find_segment, &concurrency);
    dl_iterate_phdr(swp_find_segment, &dispatch);
    found->concurrency = concurrency.range;
    found->dispatch = dispatch.range;
    found->main_queue = dlsym(RTLD_DEFAULT, "_dispatch_main_q");
    found->copy = (void *(*)(const void *))dlsym(RTLD_DEFAULT, "_Block_copy");
    found->release = (void (*)(const void *))dlsym(RTLD_DEFAULT, "_Block_release");
    __atomic_store_n(&g_looked, index + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&g_found, found, __ATOMIC_RELEASE);
}

static inline const swp_dispatch *swp_get(void) {
    const swp_dispatch *found = __atomic_load_n(&g_found, __ATOMIC_ACQUIRE);
    if (__builtin_expect(found == NULL, 0)) {
        pthread_once(&g_once, swp_look);
        return __atomic_load_n(&g_found, __ATOMIC_ACQUIRE);
    }
    // A call whose own function was not found looks again at once (a libdispatch loaded since).
    if (__builtin_expect(!swp_complete(found), 0) &&
        ((++t_calls & 4095) == 0 || found->async_f == NULL || found->after_f == NULL || found->async == NULL ||
         found->after == NULL) &&
        !__atomic_exchange_n(&g_looking, 1, __ATOMIC_ACQUIRE)) {
        swp_look();
        __atomic_store_n(&g_looking, 0, __ATOMIC_RELEASE);
        found = __atomic_load_n(&g_found, __ATOMIC_ACQUIRE);
    }
    return found;
}

/// The runtime's work functions seen so far (it has one; room for a few).
enum { SWP_RUNNERS = 4 };
static swp_function g_runners[SWP_RUNNERS];

#define SWP_TRAMPOLINES(index)                                              \
    static void swp_job_main_##index(void *job) {                           \
        sw_loop_slot *slot = sw_dispatch_item_begin(1);                     \
        g_runners[index](job);                                              \
        sw_dispatch_item_end(slot);                                         \
    }                                                                       \
    static void swp_job_pool_##index(void *job) {                           \
        sw_loop_slot *slot = sw_dispatch_item_begin(0);                     \
        g_runners[index](job);                                              \
        sw_dispatch_item_end(slot);                                         \
    }
SWP_TRAMPOLINES(0)
SWP_TRAMPOLINES(1)
SWP_TRAMPOLINES(2)
SWP_TRAMPOLINES(3)
static const swp_function g_main_trampolines[SWP_RUNNERS] = {
    swp_job_main_0, swp_job_main_1, swp_job_main_2, swp_job_main_3};
static const swp_function g_pool_trampolines[SWP_RUNNERS] = {
    swp_job_pool_0, swp_job_pool_1, swp_job_pool_2, swp_job_pool_3};

/// The trampoline for `work` on `queue`, or `work` itself when it is not the runtime's.
static inline swp_function swp_wrap(const swp_dispatch *found, swp_queue queue, swp_function work) {
    if (!swp_in(found->concurrency, (const void *)work) || sw_dispatch_untimed()) return work;
    for (int index = 0; index < SWP_RUNNERS; index++) {
        swp_function runner = __atomic_load_n(&g_runners[index], __ATOMIC_ACQUIRE);
        if (runner == NULL) {
            swp_function none = NULL;
            if (!__atomic_compare_exchange_n(&g_runners[index], &none, work, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
                runner = none;
            } else {
                runner = work;
            }
        }
        if (runner != work) continue;
        if (queue == found->main_queue) return g_main_trampolines[index];
        sw_dispatch_note_job_wrapped();
        return g_pool_trampolines[index];
    }
    return work;
}

/// A block of the main queue, timed: invoked, then released inside the item (as libdispatch
/// releases a block: what its last reference frees is the item's time).
static void swp_block_main(void *context) {
    swp_block *block = context;
    sw_loop_slot *slot = sw_dispatch_item_begin(1);
    block->invoke(block);
    __atomic_load_n(&g_found, __ATOMIC_ACQUIRE)->release(block);
    sw_dispatch_item_end(slot);
}

/// Whether `block` for `queue` is timed by the trampoline: a plain block for the main queue,
/// submitted by the app (not Stallwatch's own heartbeat).
static inline int swp_wraps_block(const swp_dispatch *found, swp_queue queue, const void *block) {
    if (found->main_queue == NULL || queue != found->main_queue || found->copy == NULL || block == NULL) return 0;
    if (found->async_f == NULL || found->after_f == NULL || sw_dispatch_untimed()) return 0;
    return !swp_in(found->dispatch, (const void *)((const swp_block *)block)->invoke);
}

/// DISPATCH_TIME_FOREVER: libdispatch drops such a call, and the block with it.
#define SWP_FOREVER (~(swp_time)0)

/// A dispatch call whose libdispatch function cannot be found anywhere cannot be made: say so
/// and stop, rather than jump to address 0.
static void swp_require(const void *function, const char *name) {
    if (__builtin_expect(function != NULL, 1)) return;
    static const char message[] = "stallwatch: the preload library cannot find libdispatch's ";
    (void)!write(2, message, sizeof(message) - 1);
    (void)!write(2, name, strlen(name));
    (void)!write(2, "\n", 1);
    abort();
}

__attribute__((visibility("default"))) void dispatch_async_f(swp_queue queue, void *context, swp_function work) {
    const swp_dispatch *found = swp_get();
    swp_require((const void *)found->async_f, "dispatch_async_f");
    found->async_f(queue, context, swp_wrap(found, queue, work));
}

__attribute__((visibility("default"))) void dispatch_after_f(
    swp_time when, swp_queue queue, void *context, swp_function work) {
    const swp_dispatch *found = swp_get();
    swp_require((const void *)found->after_f, "dispatch_after_f");
    found->after_f(when, queue, context, swp_wrap(found, queue, work));
}

__attribute__((visibility("default"))) void dispatch_async(swp_queue queue, void *block) {
    const swp_dispatch *found = swp_get();
    swp_require((const void *)found->async, "dispatch_async");
    if (swp_wraps_block(found, queue, block)) {
        found->async_f(queue, found->copy(block), swp_block_main);
    } else {
        found->async(queue, block);
    }
}

__attribute__((visibility("default"))) void dispatch_after(swp_time when, swp_queue queue, void *block) {
    const swp_dispatch *found = swp_get();
    swp_require((const void *)found->after, "dispatch_after");
    if (when != SWP_FOREVER && swp_wraps_block(found, queue, block)) {
        found->after_f(when, queue, found->copy(block), swp_block_main);
    } else {
        found->after(when, queue, block);
    }
}
