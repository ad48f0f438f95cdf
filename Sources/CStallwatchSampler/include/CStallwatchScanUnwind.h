// CStallwatchScanUnwind: the DWARF unwind of a thread parked in a system call, without a signal.
//
// Why: a thread blocked in a system call is sampled without interrupting it (a handler would end
// some calls early with EINTR). The kernel shows only its user SP and PC (/proc/<tid>/syscall);
// its stack is readable in-process. Code without frame pointers (libc, libdispatch,
// libswiftDispatch's `DispatchQueue.sync`, which pushes RBP and uses it as a scratch register)
// breaks any walk of frame records, while its CFI (.eh_frame) says where each frame's return
// address and saved registers are. So the frames are unwound by libunwind's remote API over
// this process's own memory, from the parked thread's PC and SP: the frames a signal-time unwind
// (unw_backtrace in a handler) gives from the same registers.
//
// RBP is the one register a CFI unwind may need that the kernel does not show: a frame whose
// CFA is RBP-based (code built with frame pointers) needs it unless an inner frame saved it
// (then CFI gives it). Asked for it, the unwinder takes the frame that asked: its frame pointer
// is a frame record (saved RBP, return address) above its SP — the one its prologue (push %rbp;
// mov %rsp,%rbp; pushes; sub $n,%rsp) points at, or the first up from SP — preferring a record
// whose return address follows a direct call to that very function over stale ones.
//
// Every read is bounded: the stack through a copy of at most SW_SCAN_WINDOW bytes above SP
// (process_vm_readv, so a thread that wakes meanwhile gives stale words, never a fault), and
// other memory (.eh_frame_hdr, .eh_frame, code) only inside a loaded object's segments, also
// with process_vm_readv. libunwind-x86_64.so.8 (libunwind's generic build, which has the remote
// API) is loaded with dlopen(RTLD_LOCAL), like the sampler's libunwind.so.8.
//
// Any thread but a signal handler; one unwind at a time (a mutex serialises callers).
#pragma once

#include <stdint.h>

#include "CStallwatchAsyncChain.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The most stack read above SP: deeper frames are not reached.
#define SW_SCAN_WINDOW (256 * 1024)

/// Errors (negative), besides the sampler's.
#define SW_SCAN_ENOUNWIND (-30)  ///< libunwind-x86_64.so.8 cannot be loaded, or lacks the remote API
#define SW_SCAN_EINVAL (-31)     ///< bad argument (SP outside [stack_end - window, stack_end), no room)

/// How the unwind learnt RBP.
#define SW_SCAN_RBP_UNNEEDED 0   ///< no frame needed the live RBP (CFI gave it where a frame used it)
#define SW_SCAN_RBP_PROLOGUE 1   ///< the record the asking frame's prologue points at (its frame size above SP)
#define SW_SCAN_RBP_RECORD 2     ///< a frame record found going up from the asking frame's SP
#define SW_SCAN_RBP_UNKNOWN 3    ///< neither: the unwind stopped at the asking frame

/// What one unwind did, for tests and the benchmark.
typedef struct sw_scan_unwind_info {
    int32_t rbp_source;     ///< SW_SCAN_RBP_*
    int32_t last_step;      ///< libunwind's last unw_step result: 0 at the outermost frame, < 0 on error
    uint64_t stack_bytes;   ///< bytes of stack copied above SP
} sw_scan_unwind_info;

/// Unwinds a thread of this process parked at `pc` with stack pointer `sp`, its stack mapping
/// ending at `stack_end`. Writes up to `capacity` addresses to `frames`: frames[0] = `pc`, then
/// the return addresses of its callers, innermost first (the shape of sw_sampler_capture's).
/// Returns the count (>= 1), or SW_SCAN_ENOUNWIND / SW_SCAN_EINVAL. `info` may be NULL.
int sw_scan_unwind(uint64_t pc, uint64_t sp, uint64_t stack_end, uintptr_t *frames, int capacity,
                   sw_scan_unwind_info *info);

/// sw_scan_unwind, and the async callers of the innermost async frame into `chain` (see
/// CStallwatchAsyncChain.h): that frame's record is 16 bytes below its caller's SP, the one its
/// prologue (push %rbp; mov %rsp,%rbp) made, checked by its return address. `chain` may be NULL.
int sw_scan_unwind_chain(uint64_t pc, uint64_t sp, uint64_t stack_end, uintptr_t *frames, int capacity,
                         sw_scan_unwind_info *info, sw_async_chain *chain);

#ifdef __cplusplus
}
#endif
