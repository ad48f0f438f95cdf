// The async context chain of a sampled thread. See include/CStallwatchAsyncChain.h.
#define _GNU_SOURCE
#include "CStallwatchAsyncChain.h"
#include "asyncchain.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

// The runtime's executable segment; written once by sw_async_prepare, read by handlers.
static _Atomic uint64_t g_runtime_start, g_runtime_end;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

typedef struct {
    uint64_t address;
    uint64_t start, end;
} find_segment;

static int find_executable_segment(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    find_segment *find = data;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
            const uint64_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
            if (find->address >= start && find->address < end) {
                find->start = start;
                find->end = end;
                return 1;
            }
        }
    }
    return 0;
}

static void prepare(void) {
    void *job_run = dlsym(RTLD_DEFAULT, "swift_job_run");
    if (job_run == NULL) return;
    find_segment find = {(uint64_t)(uintptr_t)job_run, 0, 0};
    dl_iterate_phdr(find_executable_segment, &find);
    if (find.end == 0) return;
    // A runtime linked into the executable (-static-stdlib) shares its segment with the app's
    // own code: the "called by the runtime" test would then name the app's frames. Refuse.
    Dl_info di;
    if (dladdr(job_run, &di) == 0 || di.dli_fname == NULL || strstr(di.dli_fname, "libswift_Concurrency") == NULL)
        return;
    atomic_store_explicit(&g_runtime_start, find.start, memory_order_relaxed);
    atomic_store_explicit(&g_runtime_end, find.end, memory_order_release);
}

int sw_async_prepare(void) {
    pthread_once(&g_once, prepare);
    return atomic_load_explicit(&g_runtime_end, memory_order_acquire) != 0;
}

int sw_async_in_runtime(uint64_t address) {
    const uint64_t end = atomic_load_explicit(&g_runtime_end, memory_order_acquire);
    const uint64_t start = atomic_load_explicit(&g_runtime_start, memory_order_relaxed);
    return address >= start && address < end;
}

// process_vm_readv on our own pid (`pid`, read once per walk: glibc's getpid is a system call):
// a syscall (async-signal-safe), and an unmapped or protected address is EFAULT, not SIGSEGV.
static int read_words(pid_t pid, uint64_t address, uint64_t *words, int count) {
    const size_t length = (size_t)count * sizeof(uint64_t);
    struct iovec local = {words, length};
    struct iovec remote = {(void *)(uintptr_t)address, length};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)length;
}

static void clear(sw_async_chain *out) {
    out->count = 0;
    out->end = SW_ASYNC_END_NONE;
    out->caller = 0;
    out->context = 0;
}

static void follow(pid_t pid, uint64_t context, sw_async_chain *out) {
    out->count = 0;
    out->context = context;
    uint64_t ctx = context;
    for (;;) {
        if (ctx == 0 || (ctx & 7) != 0) {
            out->end = SW_ASYNC_END_UNREADABLE;
            return;
        }
        // AsyncContext: Parent, then ResumeParent (Task.h; unsigned on x86_64).
        uint64_t words[2];
        if (!read_words(pid, ctx, words, 2) || words[1] == 0) {
            out->end = SW_ASYNC_END_UNREADABLE;
            return;
        }
        // The task's root context resumes into the runtime (it completes the task).
        if (sw_async_in_runtime(words[1])) {
            out->end = SW_ASYNC_END_ROOT;
            return;
        }
        if (out->count == SW_ASYNC_MAX_CHAIN) {
            out->end = SW_ASYNC_END_TRUNCATED;
            return;
        }
        out->resume[out->count++] = (uintptr_t)words[1];
        if (words[0] == 0) {
            out->end = SW_ASYNC_END_ROOT;
            return;
        }
        ctx = words[0];
    }
}

void sw_async_follow(uint64_t context, sw_async_chain *out) { follow(getpid(), context, out); }

int sw_async_anchor(const uintptr_t *frames, int count) {
    if (atomic_load_explicit(&g_runtime_end, memory_order_acquire) == 0) return -1;
    int anchor = -1;
    for (int i = 0; i + 1 < count; i++) {
        if (!sw_async_in_runtime(frames[i]) && sw_async_in_runtime(frames[i + 1])) anchor = i;
    }
    return anchor;
}

void sw_async_from_frame_pointer(const uintptr_t *frames, int count, uint64_t rbp, sw_async_chain *out) {
    clear(out);
    const int anchor = sw_async_anchor(frames, count);
    if (anchor < 0) return;
    const uint64_t caller = frames[anchor + 1];
    out->caller = caller;
    // Up the frame records from the interrupted RBP to the one whose return address is the
    // anchor's: that record is the anchor's own frame.
    const pid_t pid = getpid();
    uint64_t fp = rbp;
    for (int step = 0; step < 4 * SW_ASYNC_MAX_CHAIN; step++) {
        uint64_t record[3];   // the context slot below the record, the saved RBP, the return address
        if (fp < 8 || (fp & 7) != 0 || !read_words(pid, fp - 8, record, 3)) break;
        if (record[2] == caller) {
            follow(pid, record[0], out);
            return;
        }
        if (record[1] <= fp) break;
        fp = record[1];
    }
    out->end = SW_ASYNC_END_UNREADABLE;
}

void sw_async_from_record(uint64_t fp, sw_async_chain *out) {
    const pid_t pid = getpid();
    uint64_t context;
    if (!read_words(pid, fp - 8, &context, 1)) {
        out->end = SW_ASYNC_END_UNREADABLE;
        return;
    }
    follow(pid, context, out);
}
