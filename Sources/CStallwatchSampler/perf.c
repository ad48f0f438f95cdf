// CStallwatchPerf: perf_event_open sampling of the loop thread's user stack, unwound on the
// watchdog thread. See include/CStallwatchPerf.h and docs/watchdog.md, "Stacks from perf".
#define _GNU_SOURCE
#include "asyncchain.h"
#include "CStallwatchPerf.h"
#include "unwind_remote.h"

#include <asm/perf_regs.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#if !defined(__linux__) || !defined(__x86_64__)
#error "CStallwatchSampler supports Linux on x86_64 only (see docs/watchdog.md, Porting)"
#endif

// The user registers each sample carries, in the kernel's order (ascending bit number): every
// general-purpose register, so CFI rules that restore callee-saved registers find them.
// (DS, ES, FS, GS are refused for 64-bit tasks.)
#define SW_PERF_REGS_MASK                                                                          \
    ((1ull << PERF_REG_X86_AX) | (1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_CX) |           \
     (1ull << PERF_REG_X86_DX) | (1ull << PERF_REG_X86_SI) | (1ull << PERF_REG_X86_DI) |           \
     (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP) |           \
     (1ull << PERF_REG_X86_R8) | (1ull << PERF_REG_X86_R9) | (1ull << PERF_REG_X86_R10) |          \
     (1ull << PERF_REG_X86_R11) | (1ull << PERF_REG_X86_R12) | (1ull << PERF_REG_X86_R13) |        \
     (1ull << PERF_REG_X86_R14) | (1ull << PERF_REG_X86_R15))
#define SW_PERF_NREGS 17

// libunwind's x86_64 register numbers (libunwind-x86_64.h) of the sampled registers, in the
// kernel's order above: AX BX CX DX SI DI BP SP IP R8...R15.
static const int k_unw_regnum[SW_PERF_NREGS] = {0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15};
enum { PERF_IDX_DI = 5, PERF_IDX_BP = 6, PERF_IDX_SP = 7, PERF_IDX_IP = 8 };

#define SW_PERF_RING_PAGES 64      // 256 KiB of data: 15 samples of 16 KiB stacks
#define SW_PERF_MAX_RECORD 65536   // a record's size is a u16
#define SW_PERF_MAX_CALLCHAIN 127  // kernel.perf_event_max_stack's default


// ---------------------------------------------------------------------------------------------
// The handle.
struct sw_perf {
    int fd;
    int kernel_samples;
    void *map;                      // metadata page + data pages
    size_t map_size;
    struct perf_event_mmap_page *meta;
    const uint8_t *data;
    uint64_t data_size;             // power of two
    uint64_t lost;
    int32_t stack_bytes;
    sw_unw_addr_space_t space;      // NULL: frame pointers only
    uint8_t record[SW_PERF_MAX_RECORD];   // the newest sample, copied out of the ring
};

// One sample being unwound: the accessors' `arg`.
typedef struct {
    uint64_t regs[SW_PERF_NREGS];
    uint64_t stack_base;            // user SP at the sample = address of stack[0]
    uint64_t stack_size;
    const uint8_t *stack;
    int hit_end;                    // the unwind asked for stack beyond the copy
} sw_unwind_ctx;

static inline int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int read_paranoid(void) {
    int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -100;
    char buf[16] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? atoi(buf) : -100;
}

// ---------------------------------------------------------------------------------------------
// The accessors. Stack addresses come from the copy; anything else must lie inside a loaded
// object (its .eh_frame, .eh_frame_hdr and code, which libunwind reads to find and run the CFI)
// and is read in place: those pages are mapped read-only for the process's lifetime (libunwind
// is NODELETE, and an object being dlclosed during a stall is the only risk, as in any unwinder).
// A return address that points nowhere ends the unwind instead of faulting.
static int sw_access_mem(sw_unw_addr_space_t as, sw_unw_word_t addr, sw_unw_word_t *val, int write,
                         void *arg) {
    (void)as;
    sw_unwind_ctx *ctx = arg;
    if (write) return -SW_UNW_EINVAL;
    if (addr >= ctx->stack_base && ctx->stack_size >= sizeof *val &&
        addr - ctx->stack_base <= ctx->stack_size - sizeof *val) {
        memcpy(val, ctx->stack + (addr - ctx->stack_base), sizeof *val);
        return 0;
    }
    // Just above the copy is the rest of the loop thread's live stack: not ours to read.
    if (addr >= ctx->stack_base && addr - ctx->stack_base < (1u << 20)) {
        ctx->hit_end = 1;
        return -SW_UNW_EINVAL;
    }
    struct dl_find_object object;
    if (_dl_find_object((void *)(uintptr_t)addr, &object) != 0) return -SW_UNW_EINVAL;
    if ((uintptr_t)object.dlfo_map_end - addr < sizeof *val) return -SW_UNW_EINVAL;
    memcpy(val, (const void *)(uintptr_t)addr, sizeof *val);
    return 0;
}

static int sw_access_reg(sw_unw_addr_space_t as, int reg, sw_unw_word_t *val, int write, void *arg) {
    (void)as;
    sw_unwind_ctx *ctx = arg;
    if (write) return -SW_UNW_EREADONLYREG;
    for (int i = 0; i < SW_PERF_NREGS; i++) {
        if (k_unw_regnum[i] == reg) {
            *val = ctx->regs[i];
            return 0;
        }
    }
    return -SW_UNW_EBADREG;
}

static int sw_access_fpreg(sw_unw_addr_space_t as, int reg, long double *val, int write, void *arg) {
    (void)as, (void)reg, (void)val, (void)write, (void)arg;
    return -SW_UNW_EBADREG;
}

static int sw_resume(sw_unw_addr_space_t as, sw_unw_cursor_t *cursor, void *arg) {
    (void)as, (void)cursor, (void)arg;
    return -SW_UNW_EINVAL;
}

// An address space for unwinding copies of this process's stacks: the local space's way of
// finding unwind info (dl_iterate_phdr over the loaded objects, the same code and addresses),
// with our memory and register accessors.
static sw_unw_addr_space_t make_space(void) {
    const sw_unw_generic *unw = sw_unw_generic_library();
    if (unw == NULL) return NULL;
    const sw_unw_accessors_t *local = unw->get_accessors(unw->local_space);
    if (local == NULL) return NULL;
    sw_unw_accessors_t acc;
    memset(&acc, 0, sizeof acc);
    acc.find_proc_info = local->find_proc_info;
    acc.put_unwind_info = local->put_unwind_info;
    acc.get_dyn_info_list_addr = local->get_dyn_info_list_addr;
    acc.access_mem = sw_access_mem;
    acc.access_reg = sw_access_reg;
    acc.access_fpreg = sw_access_fpreg;
    acc.resume = sw_resume;
    acc.get_proc_name = NULL;
    sw_unw_addr_space_t space = unw->create_addr_space(&acc, 0);
    if (space != NULL && unw->set_iterate_phdr != NULL) unw->set_iterate_phdr(space, (void *)dl_iterate_phdr);
    return space;
}

// ---------------------------------------------------------------------------------------------
// Opening.
static int open_event(int tid, int64_t period_ns, int32_t stack_bytes, int exclude_kernel) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;   // the thread's own CPU time: fires only while it runs
    attr.sample_period = (uint64_t)period_ns;
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
                       PERF_SAMPLE_STACK_USER;
    attr.sample_regs_user = SW_PERF_REGS_MASK;
    attr.sample_stack_user = (uint32_t)stack_bytes;
    attr.sample_max_stack = SW_PERF_MAX_CALLCHAIN;
    attr.disabled = 1;
    attr.exclude_kernel = (uint64_t)exclude_kernel;
    attr.exclude_hv = 1;
    attr.exclude_callchain_kernel = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;           // sample times on the monitor's clock
    // Nobody polls the fd: wake nobody.
    attr.watermark = 1;
    attr.wakeup_watermark = SW_PERF_RING_PAGES * 4096;
    return (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int sw_perf_open(int tid, int64_t period_ns, int32_t stack_bytes, int32_t flags, sw_perf **out,
                 sw_perf_open_info *info) {
    (void)sw_async_prepare();
    sw_perf_open_info local_info;
    if (info == NULL) info = &local_info;
    memset(info, 0, sizeof *info);
    info->paranoid = read_paranoid();
    if (out == NULL) return SW_PERF_EINVAL;
    *out = NULL;
    if (tid <= 0 || period_ns <= 0 || stack_bytes < 8 || stack_bytes > 65000) return SW_PERF_EINVAL;
    stack_bytes &= ~7;

    int kernel = (flags & SW_PERF_USER_ONLY) ? 0 : 1;
    int fd = kernel ? open_event(tid, period_ns, stack_bytes, 0) : -1;
    if (fd < 0 && kernel && errno != EACCES && errno != EPERM) {
        info->sys_errno = errno;
        return SW_PERF_EOPEN;
    }
    if (fd < 0) {
        kernel = 0;
        fd = open_event(tid, period_ns, stack_bytes, 1);
        if (fd < 0) {
            info->sys_errno = errno;
            return SW_PERF_EOPEN;
        }
    }

    sw_perf *perf = calloc(1, sizeof *perf);
    if (perf == NULL) {
        close(fd);
        return SW_PERF_ENOMEM;
    }
    perf->fd = fd;
    perf->kernel_samples = kernel;
    perf->stack_bytes = stack_bytes;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    // Unprivileged mappings count against perf_event_mlock_kb (516 KiB by default): fall back to
    // smaller rings if the first does not fit.
    for (size_t pages = SW_PERF_RING_PAGES; pages >= 8; pages /= 2) {
        perf->map_size = (pages + 1) * page;
        perf->map = mmap(NULL, perf->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (perf->map != MAP_FAILED) {
            info->ring_pages = (int32_t)pages;
            break;
        }
        info->sys_errno = errno;
    }
    if (perf->map == MAP_FAILED) {
        close(fd);
        free(perf);
        return SW_PERF_EMMAP;
    }
    info->sys_errno = 0;
    perf->meta = perf->map;
    perf->data = (const uint8_t *)perf->map + perf->meta->data_offset;
    perf->data_size = perf->meta->data_size;
    perf->space = make_space();
    info->kernel_samples = kernel;
    info->dwarf_unwinder = perf->space != NULL;
    info->stack_bytes = stack_bytes;
    *out = perf;
    return SW_PERF_OK;
}

static void discard_unread(sw_perf *perf) {
    const uint64_t head = __atomic_load_n(&perf->meta->data_head, __ATOMIC_ACQUIRE);
    __atomic_store_n(&perf->meta->data_tail, head, __ATOMIC_RELEASE);
}

int sw_perf_enable(sw_perf *perf) {
    if (perf == NULL) return SW_PERF_EINVAL;
    discard_unread(perf);
    if (ioctl(perf->fd, PERF_EVENT_IOC_RESET, 0) != 0) return SW_PERF_ESYS;
    return ioctl(perf->fd, PERF_EVENT_IOC_ENABLE, 0) == 0 ? SW_PERF_OK : SW_PERF_ESYS;
}

int sw_perf_disable(sw_perf *perf) {
    if (perf == NULL) return SW_PERF_EINVAL;
    return ioctl(perf->fd, PERF_EVENT_IOC_DISABLE, 0) == 0 ? SW_PERF_OK : SW_PERF_ESYS;
}

int sw_perf_set_period(sw_perf *perf, int64_t period_ns) {
    if (perf == NULL || period_ns <= 0) return SW_PERF_EINVAL;
    uint64_t period = (uint64_t)period_ns;
    return ioctl(perf->fd, PERF_EVENT_IOC_PERIOD, &period) == 0 ? SW_PERF_OK : SW_PERF_ESYS;
}

void sw_perf_close(sw_perf *perf) {
    if (perf == NULL) return;
    (void)ioctl(perf->fd, PERF_EVENT_IOC_DISABLE, 0);
    munmap(perf->map, perf->map_size);
    close(perf->fd);
    // Its caches live inside it (26 KiB); nothing else refers to it.
    if (perf->space != NULL) sw_unw_generic_library()->destroy_addr_space(perf->space);
    free(perf);
}

// ---------------------------------------------------------------------------------------------
// Reading the ring.
static void ring_copy(const sw_perf *perf, uint64_t position, void *dst, size_t length) {
    const uint64_t offset = position & (perf->data_size - 1);
    const uint64_t first = perf->data_size - offset < length ? perf->data_size - offset : length;
    memcpy(dst, perf->data + offset, first);
    if (first < length) memcpy((uint8_t *)dst + first, perf->data, length - first);
}

// The layout of a sample record for our sample_type, in the kernel's order:
//   header · pid, tid (u32 each) · time · nr, ips[nr] · abi, regs[17] · size, data[size], dyn_size
typedef struct {
    uint32_t tid;
    uint64_t time;
    const uint64_t *callchain;
    uint64_t callchain_nr;
    uint64_t abi;
    const uint64_t *regs;
    const uint8_t *stack;
    uint64_t stack_size;
} sw_parsed_sample;

static int parse_sample(const uint8_t *record, size_t size, sw_parsed_sample *s) {
    memset(s, 0, sizeof *s);
    size_t at = sizeof(struct perf_event_header);
#define NEED(n) \
    if (size < at + (n)) return 0
    NEED(8);
    memcpy(&s->tid, record + at + 4, 4);
    at += 8;
    NEED(8);
    memcpy(&s->time, record + at, 8);
    at += 8;
    NEED(8);
    memcpy(&s->callchain_nr, record + at, 8);
    at += 8;
    if (s->callchain_nr > (size - at) / 8) return 0;
    s->callchain = (const uint64_t *)(record + at);
    at += 8 * s->callchain_nr;
    NEED(8);
    memcpy(&s->abi, record + at, 8);
    at += 8;
    if (s->abi != PERF_SAMPLE_REGS_ABI_NONE) {
        NEED(8 * SW_PERF_NREGS);
        s->regs = (const uint64_t *)(record + at);
        at += 8 * SW_PERF_NREGS;
    }
    NEED(8);
    uint64_t size_field;
    memcpy(&size_field, record + at, 8);
    at += 8;
    if (size_field != 0) {
        NEED(size_field + 8);
        uint64_t dyn;
        memcpy(&dyn, record + at + size_field, 8);
        s->stack = record + at;
        s->stack_size = dyn < size_field ? dyn : size_field;
    }
#undef NEED
    return 1;
}

// The SPs unwind_dwarf keeps (of the innermost frames), for the async chain.
#define SW_PERF_MAX_SPS 512

// The saved-RBP chain inside the copy (SwiftPM code keeps frame pointers; libc does not).
static int unwind_frame_pointers(const sw_unwind_ctx *ctx, uintptr_t *frames, int capacity, int *truncated) {
    int n = 0;
    frames[n++] = (uintptr_t)ctx->regs[PERF_IDX_IP];
    uint64_t bp = ctx->regs[PERF_IDX_BP];
    while (n < capacity) {
        if (bp < ctx->stack_base || bp & 7 || bp - ctx->stack_base + 16 > ctx->stack_size) {
            if (bp >= ctx->stack_base && bp - ctx->stack_base < (1u << 20)) *truncated = 1;
            break;
        }
        uint64_t next, ret;
        memcpy(&next, ctx->stack + (bp - ctx->stack_base), 8);
        memcpy(&ret, ctx->stack + (bp - ctx->stack_base) + 8, 8);
        if (ret < 4096) break;
        frames[n++] = (uintptr_t)ret;
        if (next <= bp) break;
        bp = next;
    }
    if (n == capacity) *truncated = 1;
    return n;
}

static int unwind_dwarf(sw_perf *perf, sw_unwind_ctx *ctx, uintptr_t *frames, uint64_t *sps, int capacity,
                        int *truncated) {
    const sw_unw_generic *unw = sw_unw_generic_library();  // not NULL: perf->space was made
    sw_unw_cursor_t cursor;
    if (unw->init_remote(&cursor, perf->space, ctx) < 0) return 0;
    int n = 0;
    sps[0] = ctx->regs[PERF_IDX_SP];
    frames[n++] = (uintptr_t)ctx->regs[PERF_IDX_IP];
    sw_unw_word_t last_sp = ctx->regs[PERF_IDX_SP];
    while (n < capacity) {
        if (unw->step(&cursor) <= 0) break;
        sw_unw_word_t ip = 0, sp = 0;
        if (unw->get_reg(&cursor, UNW_RIP, &ip) < 0 || ip < 4096) break;
        if (unw->get_reg(&cursor, UNW_RSP, &sp) < 0 || sp < last_sp) break;
        last_sp = sp;
        if (n < SW_PERF_MAX_SPS) sps[n] = sp;
        frames[n++] = (uintptr_t)ip;
    }
    if (n == capacity || ctx->hit_end) *truncated = 1;
    return n;
}

// The chain of the innermost async frame among `frames`: its frame record 16 bytes below its
// caller's SP when the DWARF unwind gave the SPs (`sps`, else NULL), else found up the saved-RBP
// chain in the copy (the record whose return address is the anchor's); its context at fp - 8.
static void read_chain(const sw_unwind_ctx *ctx, const uintptr_t *frames, const uint64_t *sps, int n,
                       sw_async_chain *chain) {
    const int anchor = sw_async_anchor(frames, sps != NULL && n > SW_PERF_MAX_SPS ? SW_PERF_MAX_SPS : n);
    if (anchor < 0) return;
    chain->caller = frames[anchor + 1];
    chain->end = SW_ASYNC_END_UNREADABLE;
    uint64_t bp = ctx->regs[PERF_IDX_BP];
    if (sps != NULL) bp = sps[anchor + 1] - 16;
    for (int step = 0; step < 4 * SW_ASYNC_MAX_CHAIN; step++) {
        if (bp < ctx->stack_base + 8 || bp & 7 || bp - ctx->stack_base + 16 > ctx->stack_size) return;
        uint64_t next, ret, context;
        memcpy(&next, ctx->stack + (bp - ctx->stack_base), 8);
        memcpy(&ret, ctx->stack + (bp - ctx->stack_base) + 8, 8);
        if (ret == chain->caller) {
            memcpy(&context, ctx->stack + (bp - ctx->stack_base) - 8, 8);
            sw_async_follow(context, chain);
            return;
        }
        if (next <= bp) return;
        bp = next;
    }
}

int sw_perf_latest(sw_perf *perf, int64_t not_before_ns, int32_t method, uintptr_t *frames,
                   int32_t capacity, uintptr_t *callchain, int32_t callchain_capacity,
                   sw_perf_sample *out) {
    sw_perf_sample result;
    memset(&result, 0, sizeof result);
    if (out == NULL) out = &result;
    memset(out, 0, sizeof *out);
    if (perf == NULL || frames == NULL || capacity <= 0) return SW_PERF_EINVAL;

    const uint64_t head = __atomic_load_n(&perf->meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = perf->meta->data_tail;
    uint64_t newest = UINT64_MAX;
    uint16_t newest_size = 0, newest_misc = 0;
    while (tail < head) {
        struct perf_event_header header;
        ring_copy(perf, tail, &header, sizeof header);
        if (header.size < sizeof header || header.size > head - tail) break;   // never: kernel-written
        if (header.type == PERF_RECORD_SAMPLE) {
            newest = tail;
            newest_size = header.size;
            newest_misc = header.misc;
            out->records++;
        } else if (header.type == PERF_RECORD_LOST && header.size >= sizeof header + 16) {
            uint64_t lost;
            ring_copy(perf, tail + sizeof header + 8, &lost, sizeof lost);
            perf->lost += lost;
        }
        tail += header.size;
    }
    if (newest != UINT64_MAX) ring_copy(perf, newest, perf->record, newest_size);
    __atomic_store_n(&perf->meta->data_tail, head, __ATOMIC_RELEASE);
    out->lost_total = perf->lost;
    if (newest == UINT64_MAX) return 0;

    sw_parsed_sample s;
    if (!parse_sample(perf->record, newest_size, &s)) return 0;
    if ((int64_t)s.time < not_before_ns || s.regs == NULL) return 0;
    out->time_ns = (int64_t)s.time;
    out->tid = (int32_t)s.tid;
    out->in_kernel = (newest_misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
    out->stack_bytes = (int32_t)s.stack_size;
    // In the kernel the user registers are those saved at entry: a syscall's if the user IP
    // follows a `syscall` instruction (0F 05), else a fault's or an interrupt's. Read with
    // process_vm_readv, so an unmapped address fails instead of faulting.
    if (out->in_kernel) {
        uint8_t code[2] = {0, 0};
        struct iovec local = {code, sizeof code};
        struct iovec remote = {(void *)(uintptr_t)(s.regs[PERF_IDX_IP] - 2), sizeof code};
        if (s.regs[PERF_IDX_IP] >= 2 && process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 2 &&
            code[0] == 0x0F && code[1] == 0x05) {
            out->in_syscall = 1;
            out->syscall_arg0 = s.regs[PERF_IDX_DI];
        }
    }

    if (callchain != NULL && callchain_capacity > 0) {
        int n = 0;
        for (uint64_t i = 0; i < s.callchain_nr && n < callchain_capacity; i++) {
            uint64_t address;
            memcpy(&address, &s.callchain[i], 8);
            if (address >= (uint64_t)PERF_CONTEXT_MAX) continue;   // PERF_CONTEXT_USER and friends
            callchain[n++] = (uintptr_t)address;
        }
        out->callchain_count = n;
    }

    sw_unwind_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    memcpy(ctx.regs, s.regs, sizeof ctx.regs);
    ctx.stack_base = ctx.regs[PERF_IDX_SP];
    ctx.stack = s.stack;
    ctx.stack_size = s.stack_size;
    const int64_t started = mono_ns();
    int truncated = 0;
    int n = 0;
    uint64_t sps[SW_PERF_MAX_SPS];
    if (method == SW_PERF_UNWIND_DWARF && perf->space != NULL)
        n = unwind_dwarf(perf, &ctx, frames, sps, capacity, &truncated);
    int dwarf = n > 1;
    if (n <= 1) n = unwind_frame_pointers(&ctx, frames, capacity, &truncated);
    if (dwarf && sw_async_anchor(frames, n > SW_PERF_MAX_SPS ? SW_PERF_MAX_SPS : n) < 0) {
        // The DWARF unwind stops short in some async code (it reached no frame the Concurrency
        // runtime called): the saved-RBP chain, which Swift code keeps, may reach further. The
        // longer of the two is the stack, and only the chain's own walk finds the async frame.
        uintptr_t chained[SW_PERF_MAX_SPS];
        int chained_truncated = 0;
        const int limit = capacity < SW_PERF_MAX_SPS ? capacity : SW_PERF_MAX_SPS;
        const int m = unwind_frame_pointers(&ctx, chained, limit, &chained_truncated);
        if (m > n && sw_async_anchor(chained, m) >= 0) {
            memcpy(frames, chained, (size_t)m * sizeof(uintptr_t));
            n = m;
            truncated = chained_truncated;
            dwarf = 0;
        }
    }
    out->unwind_ns = mono_ns() - started;
    out->truncated = truncated;
    out->frame_count = n;
    read_chain(&ctx, frames, dwarf ? sps : NULL, n, &out->chain);
    return n;
}

const char *sw_perf_strerror(int code) {
    switch (code) {
    case SW_PERF_OK: return "ok";
    case SW_PERF_EINVAL: return "invalid argument";
    case SW_PERF_EOPEN: return "perf_event_open failed";
    case SW_PERF_EMMAP: return "cannot map the perf ring buffer";
    case SW_PERF_ESYS: return "perf ioctl failed";
    case SW_PERF_ENOMEM: return "out of memory";
    default: return code >= 0 ? "ok" : "unknown error";
    }
}
