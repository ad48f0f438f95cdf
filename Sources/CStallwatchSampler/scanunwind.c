// CStallwatchScanUnwind: libunwind's remote API over this process's own memory, from a parked
// thread's PC and SP. See include/CStallwatchScanUnwind.h and docs/watchdog.md, "The stack scan
// of a parked thread".
#define _GNU_SOURCE
#include "CStallwatchScanUnwind.h"
#include "asyncchain.h"
#include "unwind_remote.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

// ---------------------------------------------------------------------------------------------
// The loaded objects' segments, from dl_iterate_phdr, sorted by start; rebuilt when the loader's
// add/remove counters change. Executable ones carry their object's .eh_frame_hdr search table.
#define MAX_SEGMENTS 1024
#define SW_SCAN_MAX_SPS 512
typedef struct {
    uint64_t start, end;
    int executable;
    uint64_t hdr;        // the object's .eh_frame_hdr (0: none usable)
    uint64_t table;      // its binary-search table: fde_count pairs of int32 (start, fde), hdr-relative
    uint64_t fde_count;
} segment;

// The state of the one unwind under way (g_lock held), which libunwind's callbacks read.
static struct {
    segment segments[MAX_SEGMENTS];
    int count;
    unsigned long long adds, subs;
    uint64_t pc, sp, stack_end;
    uint64_t window_end;            // sp + bytes of the window copied so far
    unsigned char window[SW_SCAN_WINDOW];
    uint64_t frame_ip, frame_sp;    // the frame being stepped
    int frame_index;
    int rbp_source;
    uint64_t rbp;
    pid_t pid;
    // The function at an address: its start and what its prologue puts between its frame pointer
    // and SP (-1: no prologue of that shape), by address: a parked thread is scanned at every
    // sample.
    struct prologue { uint64_t ip, start, end; int64_t below; } prologues[64];
    uint64_t frame_sps[SW_SCAN_MAX_SPS];   // each unwound frame's SP, for the async chain
} g;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
// libunwind's generic library and our address space; NULL when it is missing (set once).
static const sw_unw_generic *unw;
static sw_unw_addr_space_t g_as;

static long read_process(uint64_t address, void *buffer, size_t length) {
    struct iovec local = {buffer, length};
    struct iovec remote = {(void *)(uintptr_t)address, length};
    return (long)process_vm_readv(g.pid, &local, 1, &remote, 1, 0);
}

static const segment *segment_containing(uint64_t address) {
    int lo = 0, hi = g.count;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (g.segments[mid].end <= address) lo = mid + 1; else hi = mid;
    }
    return lo < g.count && g.segments[lo].start <= address ? &g.segments[lo] : NULL;
}

// ---------------------------------------------------------------------------------------------
// Segments.

// Reads an .eh_frame_hdr field of `encoding` at *p (only the sizes the header uses), advancing.
static int read_encoded(const unsigned char **p, unsigned encoding, uint64_t *value) {
    switch (encoding & 0x0f) {
    case 0x00: case 0x04: case 0x0c: { uint64_t v; memcpy(&v, *p, 8); *value = v; *p += 8; return 1; }
    case 0x03: { uint32_t v; memcpy(&v, *p, 4); *value = v; *p += 4; return 1; }
    case 0x0b: { int32_t v; memcpy(&v, *p, 4); *value = (uint64_t)(int64_t)v; *p += 4; return 1; }
    default: return 0;
    }
}

static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    uint64_t hdr = 0, table = 0, fde_count = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_GNU_EH_FRAME) continue;
        // Read directly: the loader lock, held during the callback, keeps the object mapped.
        const unsigned char *p = (const unsigned char *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr);
        const unsigned version = p[0], frame_encoding = p[1], count_encoding = p[2], table_encoding = p[3];
        // Only the sorted table (datarel | sdata4) is searchable; without it, no CFI from here.
        if (version != 1 || table_encoding != 0x3b) break;
        const unsigned char *cursor = p + 4;
        uint64_t ignored;
        if (!read_encoded(&cursor, frame_encoding, &ignored) || !read_encoded(&cursor, count_encoding, &fde_count)) {
            break;
        }
        hdr = (uint64_t)(uintptr_t)p;
        table = (uint64_t)(uintptr_t)cursor;
    }
    for (int i = 0; i < info->dlpi_phnum && g.count < MAX_SEGMENTS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || ph->p_memsz == 0) continue;
        segment *s = &g.segments[g.count++];
        s->start = info->dlpi_addr + ph->p_vaddr;
        s->end = s->start + ph->p_memsz;
        s->executable = (ph->p_flags & PF_X) != 0;
        s->hdr = s->executable ? hdr : 0;
        s->table = s->executable ? table : 0;
        s->fde_count = s->executable ? fde_count : 0;
    }
    return 0;
}

static int loader_counters(struct dl_phdr_info *info, size_t size, void *data) {
    unsigned long long *counters = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        counters[0] = info->dlpi_adds;
        counters[1] = info->dlpi_subs;
    }
    return 1;  // the first object is enough
}

static int by_start(const void *a, const void *b) {
    const uint64_t x = ((const segment *)a)->start, y = ((const segment *)b)->start;
    return x < y ? -1 : x > y;
}

static void refresh_segments(void) {
    unsigned long long counters[2] = {0, 0};
    dl_iterate_phdr(loader_counters, counters);
    if (g.count > 0 && counters[0] == g.adds && counters[1] == g.subs) return;
    g.count = 0;
    dl_iterate_phdr(add_object, NULL);
    qsort(g.segments, (size_t)g.count, sizeof g.segments[0], by_start);
    g.adds = counters[0];
    g.subs = counters[1];
    // Cached rules and prologues may be of an object that is gone.
    unw->flush_cache(g_as, 0, 0);
    memset(g.prologues, 0, sizeof g.prologues);
}

// ---------------------------------------------------------------------------------------------
// Memory: the stack from the window, loaded objects through process_vm_readv, nothing else.

static int read_stack(uint64_t address, uint64_t *value) {
    if (address < g.sp || address + 8 > g.stack_end || address + 8 > g.sp + SW_SCAN_WINDOW) return 0;
    while (address + 8 > g.window_end) {
        // Copy on in 16 KiB steps: most unwinds need a few KiB above SP.
        uint64_t end = (g.window_end - g.sp + 16384) & ~(uint64_t)16383;
        if (end > SW_SCAN_WINDOW) end = SW_SCAN_WINDOW;
        if (g.sp + end > g.stack_end) end = g.stack_end - g.sp;
        const size_t offset = (size_t)(g.window_end - g.sp);
        const long copied = read_process(g.window_end, g.window + offset, (size_t)(end - offset));
        if (copied <= 0) return 0;
        g.window_end += (uint64_t)copied;
    }
    memcpy(value, g.window + (address - g.sp), 8);
    return 1;
}

static int read_object(uint64_t address, void *buffer, size_t length) {
    const segment *s = segment_containing(address);
    if (s == NULL || address + length > s->end) return 0;
    return read_process(address, buffer, length) == (long)length;
}

static int access_mem(sw_unw_addr_space_t as, sw_unw_word_t address, sw_unw_word_t *value, int write, void *arg) {
    (void)as;
    (void)arg;
    if (write) return -SW_UNW_EINVAL;
    if (read_stack(address, value) || read_object(address, value, 8)) return 0;
    return -SW_UNW_EINVAL;
}

// ---------------------------------------------------------------------------------------------
// RBP, which the kernel does not show.

// Whether `address` follows a call instruction in executable code (as StackScanner.isReturnAddress).
static int is_return_address(uint64_t address) {
    const segment *s = segment_containing(address);
    if (s == NULL || !s->executable || address < s->start + 7) return 0;
    unsigned char b[7];
    if (!read_object(address - 7, b, sizeof b)) return 0;
    // call rel32; call *reg, *(reg); call *disp8(reg); call *disp32(%rip) or *disp32(reg).
    if (b[2] == 0xE8) return 1;
    if (b[5] == 0xFF && ((b[6] & 0xF8) == 0xD0 || (b[6] & 0xF8) == 0x10)) return 1;
    if (b[4] == 0xFF && (b[5] & 0xF8) == 0x50) return 1;
    if (b[1] == 0xFF && (b[2] == 0x15 || (b[2] & 0xF8) == 0x90)) return 1;
    return 0;
}

// A frame record at `rbp` (16-byte aligned, on the stack above `sp`): a saved RBP further up the
// stack (or 0, the outermost; an async frame's flag bit 60 ignored) next to a return address.
static int is_frame_record(uint64_t rbp, uint64_t sp) {
    uint64_t saved, returns;
    if (rbp < sp || (rbp & 15) != 0 || !read_stack(rbp, &saved) || !read_stack(rbp + 8, &returns)) return 0;
    saved &= ~(1ull << 60);
    if (saved != 0 && (saved <= rbp || saved >= g.stack_end || (saved & 15) != 0)) return 0;
    return is_return_address(returns);
}

// The function at `ip` from its object's .eh_frame_hdr table: its start, and the next one's
// start as its end (the segment's end for the last). 0 if no table covers `ip`.
static int function_bounds(uint64_t ip, uint64_t *start, uint64_t *end) {
    const segment *s = segment_containing(ip);
    if (s == NULL || !s->executable || s->hdr == 0 || s->fde_count == 0) return 0;
    const int64_t target = (int64_t)(ip - s->hdr);
    uint64_t lo = 0, hi = s->fde_count;
    while (lo < hi) {  // lo: the first entry starting after `ip`
        const uint64_t mid = (lo + hi) / 2;
        int32_t entry[2];
        if (!read_object(s->table + mid * 8, entry, sizeof entry)) return 0;
        if (entry[0] <= target) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return 0;
    int32_t entries[4];
    const int last = lo == s->fde_count;
    if (!read_object(s->table + (lo - 1) * 8, entries, last ? 8 : 16)) return 0;
    *start = s->hdr + (uint64_t)(int64_t)entries[0];
    *end = last ? s->end : s->hdr + (uint64_t)(int64_t)entries[2];
    return 1;
}

// What a function that sets up a frame pointer as clang and swiftc do puts below it: [endbr64]
// push %rbp; mov %rsp,%rbp; push <reg>…; [sub $n,%rsp]. At its call sites RSP = RBP - that.
// -1 for any other start.
static int64_t prologue_below(uint64_t start) {
    unsigned char b[40];
    if (start == 0 || !read_object(start, b, sizeof b)) return -1;
    int i = 0;
    if (b[0] == 0xF3 && b[1] == 0x0F && b[2] == 0x1E && b[3] == 0xFA) i = 4;
    if (b[i] != 0x55 || b[i + 1] != 0x48 || b[i + 2] != 0x89 || b[i + 3] != 0xE5) return -1;
    i += 4;
    int64_t below = 0;
    while (i < 30) {
        if (b[i] == 0x41 && (b[i + 1] & 0xF8) == 0x50) {
            i += 2;
        } else if ((b[i] & 0xF8) == 0x50 && b[i] != 0x54 && b[i] != 0x55) {
            i += 1;
        } else {
            break;
        }
        below += 8;
    }
    if (b[i] == 0x48 && b[i + 1] == 0x83 && b[i + 2] == 0xEC) {
        below += b[i + 3];
    } else if (b[i] == 0x48 && b[i + 1] == 0x81 && b[i + 2] == 0xEC) {
        uint32_t n;
        memcpy(&n, &b[i + 3], 4);
        below += n;
    }
    return below;
}

// The function containing `ip` and its prologue_below, remembered by `ip`.
static const struct prologue *prologue_of(uint64_t ip) {
    struct prologue *entry = &g.prologues[(ip ^ (ip >> 12)) % (sizeof g.prologues / sizeof g.prologues[0])];
    if (entry->ip != ip) {
        entry->ip = ip;
        entry->start = entry->end = 0;
        (void)function_bounds(ip, &entry->start, &entry->end);
        entry->below = prologue_below(entry->start);
    }
    return entry;
}

// Where the code at `address` leads: itself, or for a PLT stub ([endbr64] [bnd] jmp
// *disp32(%rip)) the function its GOT slot holds; 0 for a stub not bound yet (lazy binding points
// the slot back into the PLT) or unreadable code.
static uint64_t call_destination(uint64_t address) {
    unsigned char b[12];
    if (!read_object(address, b, sizeof b)) return 0;
    int i = b[0] == 0xF3 && b[1] == 0x0F && b[2] == 0x1E && b[3] == 0xFA ? 4 : 0;
    if (b[i] == 0xF2) i++;
    if (b[i] != 0xFF || b[i + 1] != 0x25) return address;
    int32_t offset;
    memcpy(&offset, &b[i + 2], sizeof offset);
    uint64_t bound = 0;
    if (!read_object(address + (uint64_t)i + 6 + (uint64_t)(int64_t)offset, &bound, sizeof bound)) return 0;
    return segment_containing(bound) == segment_containing(address) ? 0 : bound;
}

// What the call before the return address in the record at `rbp` says of whether it called
// `function`: 1 it did (a direct call to its start, or through a PLT stub bound to it), -1 it did
// not (a call `function` made itself, or a call that leads elsewhere: a stale record), 0 it
// cannot tell (an indirect call, or a PLT stub not bound yet).
static int called(uint64_t rbp, const struct prologue *function) {
    uint64_t returns;
    unsigned char b[5] = {0};
    if (function->start == 0 || !read_stack(rbp + 8, &returns)) return 0;
    int32_t offset;
    const int direct = read_object(returns - 5, b, sizeof b) && b[0] == 0xE8;
    memcpy(&offset, &b[1], sizeof offset);
    const uint64_t destination = direct ? call_destination(returns + (uint64_t)(int64_t)offset) : 0;
    if (destination == function->start) return 1;
    if (returns - 1 >= function->start && returns - 1 < function->end) return -1;
    return destination == 0 ? 0 : -1;
}

// The live RBP, asked for while stepping the frame at (g.frame_ip, g.frame_sp): no inner frame
// saved it, so it is that frame's own frame pointer, a frame record above its SP. Its locals may
// hold stale records of calls it made before (and a frame that allocates on the stack has more
// below RBP than its prologue says): so the record its prologue points at, else the first up
// from SP, that is not a stale one (`called`); failing both, the first record at all.
static int reconstruct_rbp(void) {
    const uint64_t sp = g.frame_sp;
    const uint64_t lookup = g.frame_index > 0 ? g.frame_ip - 1 : g.frame_ip;  // a return address's call
    const struct prologue *function = prologue_of(lookup);
    const uint64_t from_prologue = function->below >= 0 ? sp + (uint64_t)function->below : 0;
    const uint64_t first = (sp + 15) & ~(uint64_t)15;
    uint64_t limit = sp + 65536;
    if (limit > g.sp + SW_SCAN_WINDOW) limit = g.sp + SW_SCAN_WINDOW;
    for (int least = 0; least >= -1; least--) {
        if (from_prologue != 0 && is_frame_record(from_prologue, sp) && called(from_prologue, function) >= least) {
            g.rbp = from_prologue;
            g.rbp_source = SW_SCAN_RBP_PROLOGUE;
            return 1;
        }
        for (uint64_t rbp = first; rbp + 16 <= limit; rbp += 16) {
            if (is_frame_record(rbp, sp) && called(rbp, function) >= least) {
                g.rbp = rbp;
                g.rbp_source = SW_SCAN_RBP_RECORD;
                return 1;
            }
        }
    }
    g.rbp_source = SW_SCAN_RBP_UNKNOWN;
    return 0;
}

static int access_reg(sw_unw_addr_space_t as, int reg, sw_unw_word_t *value, int write, void *arg) {
    (void)as;
    (void)arg;
    if (write) return -SW_UNW_EBADREG;
    switch (reg) {
    case UNW_RIP: *value = g.pc; return 0;
    case UNW_RSP: *value = g.sp; return 0;
    case UNW_RBP:
        if (g.rbp_source == SW_SCAN_RBP_UNNEEDED) (void)reconstruct_rbp();
        if (g.rbp_source == SW_SCAN_RBP_UNKNOWN) return -SW_UNW_EBADREG;
        *value = g.rbp;
        return 0;
    default: return -SW_UNW_EBADREG;  // nothing else is known; CFI on x86_64 needs no other
    }
}

static int access_fpreg(sw_unw_addr_space_t as, int reg, long double *value, int write, void *arg) {
    (void)as, (void)reg, (void)value, (void)write, (void)arg;
    return -SW_UNW_EBADREG;
}

// ---------------------------------------------------------------------------------------------
// Unwind info: the object's .eh_frame_hdr table, which libunwind searches through access_mem.

static int find_proc_info(sw_unw_addr_space_t as, sw_unw_word_t ip, void *proc_info, int need_unwind_info, void *arg) {
    sw_unw_proc_info_t *pi = proc_info;
    const segment *s = segment_containing(ip);
    if (s == NULL || !s->executable || s->hdr == 0) return -SW_UNW_ENOINFO;
    sw_unw_dyn_info_t di;
    memset(&di, 0, sizeof di);
    di.start_ip = s->start;
    di.end_ip = s->end;
    di.format = SW_UNW_INFO_FORMAT_REMOTE_TABLE;
    di.u.rti.segbase = s->hdr;
    di.u.rti.table_data = s->table;
    di.u.rti.table_len = s->fde_count;  // in words: one 8-byte entry each
    return unw->search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void put_unwind_info(sw_unw_addr_space_t as, void *pi, void *arg) {
    (void)as, (void)pi, (void)arg;  // libunwind frees what its table search allocated
}

static int get_dyn_info_list_addr(sw_unw_addr_space_t as, sw_unw_word_t *address, void *arg) {
    (void)as, (void)address, (void)arg;
    return -SW_UNW_ENOINFO;  // no dynamically registered (JIT) code
}

// ---------------------------------------------------------------------------------------------

static void make_space(void) {
    const sw_unw_generic *library = sw_unw_generic_library();
    if (library == NULL) return;
    static sw_unw_accessors_t accessors = {
        .find_proc_info = find_proc_info,
        .put_unwind_info = put_unwind_info,
        .get_dyn_info_list_addr = get_dyn_info_list_addr,
        .access_mem = access_mem,
        .access_reg = access_reg,
        .access_fpreg = access_fpreg,
    };
    sw_unw_addr_space_t as = library->create_addr_space(&accessors, 0);
    if (as == NULL) return;
    // The rules found for an address are kept (the code does not change while mapped). Per
    // thread where the build allows it: the cache is then used without its lock (and without the
    // two signal-mask system calls around each frame's look-up), which is safe because g_lock
    // serialises every use. Debian's 1.6.2 keeps the global policy (locked) instead.
    (void)library->set_caching_policy(as, SW_UNW_CACHE_PER_THREAD);
    g_as = as;
    unw = library;
}

int sw_scan_unwind(uint64_t pc, uint64_t sp, uint64_t stack_end, uintptr_t *frames, int capacity,
                   sw_scan_unwind_info *info) {
    return sw_scan_unwind_chain(pc, sp, stack_end, frames, capacity, info, NULL);
}

// The chain of the innermost async frame among the n unwound `frames` (g_lock held).
static void read_chain(const uintptr_t *frames, int n, sw_async_chain *chain) {
    chain->count = 0;
    chain->end = SW_ASYNC_END_NONE;
    chain->caller = 0;
    chain->context = 0;
    const int anchor = sw_async_anchor(frames, n < SW_SCAN_MAX_SPS ? n : SW_SCAN_MAX_SPS);
    if (anchor < 0) return;
    chain->caller = frames[anchor + 1];
    const uint64_t fp = g.frame_sps[anchor + 1] - 16;
    uint64_t ret = 0;
    if (read_process(fp + 8, &ret, sizeof ret) != (long)sizeof ret || ret != frames[anchor + 1]) {
        chain->end = SW_ASYNC_END_UNREADABLE;
        return;
    }
    sw_async_from_record(fp, chain);
}

int sw_scan_unwind_chain(uint64_t pc, uint64_t sp, uint64_t stack_end, uintptr_t *frames, int capacity,
                         sw_scan_unwind_info *info, sw_async_chain *chain) {
    pthread_once(&g_once, make_space);
    if (chain != NULL) (void)sw_async_prepare();
    if (unw == NULL) return SW_SCAN_ENOUNWIND;
    if (frames == NULL || capacity < 1 || sp == 0 || (sp & 7) != 0 || sp >= stack_end) return SW_SCAN_EINVAL;
    pthread_mutex_lock(&g_lock);
    g.pid = getpid();
    refresh_segments();
    g.pc = pc;
    g.sp = sp;
    g.stack_end = stack_end;
    g.window_end = sp;
    g.rbp_source = SW_SCAN_RBP_UNNEEDED;
    g.rbp = 0;
    int n = 0;
    g.frame_sps[0] = sp;
    frames[n++] = (uintptr_t)pc;
    sw_unw_cursor_t cursor;
    int step = unw->init_remote(&cursor, g_as, NULL);
    while (step >= 0 && n < capacity) {
        g.frame_index = n - 1;
        sw_unw_word_t ip = 0, frame_sp = 0;
        if (unw->get_reg(&cursor, UNW_RIP, &ip) < 0 || unw->get_reg(&cursor, UNW_RSP, &frame_sp) < 0) break;
        g.frame_ip = ip;
        g.frame_sp = frame_sp;
        step = unw->step(&cursor);
        if (step <= 0) break;
        sw_unw_word_t next_ip = 0, next_sp = 0;
        if (unw->get_reg(&cursor, UNW_RIP, &next_ip) < 0 || unw->get_reg(&cursor, UNW_RSP, &next_sp) < 0) break;
        // The outermost frame has no return address; a frame that does not move up is a loop.
        if (next_ip == 0 || next_sp <= frame_sp) break;
        if (n < SW_SCAN_MAX_SPS) g.frame_sps[n] = next_sp;
        frames[n++] = (uintptr_t)next_ip;
    }
    if (info != NULL) {
        info->rbp_source = g.rbp_source;
        info->last_step = step;
        info->stack_bytes = g.window_end - sp;
    }
    if (chain != NULL) read_chain(frames, n, chain);
    pthread_mutex_unlock(&g_lock);
    return n;
}
