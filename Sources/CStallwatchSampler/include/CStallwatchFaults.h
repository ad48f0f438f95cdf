// CStallwatchFaults: the addresses a thread page-faults on, and which mapping holds an address.
//
// How it works: a software perf event PERF_COUNT_SW_PAGE_FAULTS on the thread, sampling every
// fault (period 1) with its address (PERF_SAMPLE_ADDR) and CLOCK_MONOTONIC time. The kernel
// emits it as the fault begins (before the page is read in), so while the thread is blocked in
// a fault its newest record is that fault. exclude_kernel=1 keeps faults taken in user mode only
// (allowed unprivileged at perf_event_paranoid 2; faults inside syscalls are the syscall's wait).
// The ring is mapped read-only and written backward (overwrite mode): the newest records are
// always kept, and nobody has to consume them. The watchdog enables the event only while a stall
// is in progress: each fault then costs the faulting thread one 24-byte record.
//
// sw_vma_name names the mapping that holds an address with the PROCMAP_QUERY ioctl on
// /proc/self/maps (Linux 6.11+), else by reading /proc/self/maps.
//
// One handle per thread; every call on a handle from one thread at a time (the watchdog).
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// An open page-fault event on one thread, with its ring buffer.
typedef struct sw_faults sw_faults;

/// Opens a disabled page-fault event on thread `tid` (a thread of this process) and maps its
/// ring. Returns 0 and *out, or -errno of the failed call (EACCES: perf_event_paranoid 3). Any thread.
int sw_faults_open(int tid, sw_faults **out);

/// Starts recording faults (a stall began). Returns 0 or -errno.
int sw_faults_enable(sw_faults *faults);

/// Stops recording faults (the stall ended). Returns 0 or -errno.
int sw_faults_disable(sw_faults *faults);

/// Copies the newest faults recorded at or after `not_before_ns` (CLOCK_MONOTONIC), newest
/// first, up to `capacity`: their addresses and times. Returns how many.
int32_t sw_faults_newest(sw_faults *faults, int64_t not_before_ns, uint64_t *addresses, int64_t *times,
                         int32_t capacity);

/// Closes the event and unmaps its ring. NULL is ignored.
void sw_faults_close(sw_faults *faults);

/// The mapping of this process that holds `address`: its range, file offset and name (a path,
/// "[heap]", "[stack]", or "" for anonymous memory) into `name` (NUL-terminated, cut to
/// `name_size`). Returns 0, or -ENOENT when no mapping holds it. Any thread.
int sw_vma_name(uint64_t address, uint64_t *start, uint64_t *end, uint64_t *offset, char *name,
                uint32_t name_size);

#ifdef __cplusplus
}
#endif
