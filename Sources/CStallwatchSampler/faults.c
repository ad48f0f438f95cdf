// CStallwatchFaults: see include/CStallwatchFaults.h and docs/categories.md, "What the thread
// waited on".
#define _GNU_SOURCE
#include "CStallwatchFaults.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SW_FAULTS_RING_PAGES 16   // 64 KiB: the newest ~2,700 faults

struct sw_faults {
    int fd;
    void *map;
    size_t map_size;
    const struct perf_event_mmap_page *meta;
    const uint8_t *data;
    uint64_t data_size;
};

// A record for PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR, in the kernel's order.
typedef struct {
    struct perf_event_header header;
    uint64_t time;
    uint64_t addr;
} sw_fault_record;

int sw_faults_open(int tid, sw_faults **out) {
    if (out == NULL || tid <= 0) return -EINVAL;
    *out = NULL;
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_PAGE_FAULTS;
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    attr.write_backward = 1;
    // Nobody polls the fd: wake nobody.
    attr.watermark = 1;
    attr.wakeup_watermark = SW_FAULTS_RING_PAGES * 4096;
    int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -errno;
    sw_faults *faults = calloc(1, sizeof *faults);
    if (faults == NULL) {
        close(fd);
        return -ENOMEM;
    }
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    faults->fd = fd;
    faults->map_size = (SW_FAULTS_RING_PAGES + 1) * page;
    // Read-only: the kernel overwrites the oldest records instead of dropping new ones.
    faults->map = mmap(NULL, faults->map_size, PROT_READ, MAP_SHARED, fd, 0);
    if (faults->map == MAP_FAILED) {
        int error = errno;
        close(fd);
        free(faults);
        return -error;
    }
    faults->meta = faults->map;
    faults->data = (const uint8_t *)faults->map + faults->meta->data_offset;
    faults->data_size = faults->meta->data_size;
    *out = faults;
    return 0;
}

int sw_faults_enable(sw_faults *faults) {
    if (faults == NULL) return -EINVAL;
    return ioctl(faults->fd, PERF_EVENT_IOC_ENABLE, 0) == 0 ? 0 : -errno;
}

int sw_faults_disable(sw_faults *faults) {
    if (faults == NULL) return -EINVAL;
    return ioctl(faults->fd, PERF_EVENT_IOC_DISABLE, 0) == 0 ? 0 : -errno;
}

static void ring_copy(const sw_faults *faults, uint64_t position, void *dst, size_t length) {
    const uint64_t offset = position & (faults->data_size - 1);
    const uint64_t first = faults->data_size - offset < length ? faults->data_size - offset : length;
    memcpy(dst, faults->data + offset, first);
    if (first < length) memcpy((uint8_t *)dst + first, faults->data, length - first);
}

int32_t sw_faults_newest(sw_faults *faults, int64_t not_before_ns, uint64_t *addresses, int64_t *times,
                         int32_t capacity) {
    if (faults == NULL || addresses == NULL || times == NULL || capacity <= 0) return 0;
    // Written backward: the newest record starts at data_head, older ones follow it.
    const uint64_t head = __atomic_load_n(&faults->meta->data_head, __ATOMIC_ACQUIRE);
    if (head == 0) return 0;   // nothing written yet
    int32_t count = 0;
    uint64_t walked = 0;
    while (count < capacity && walked + sizeof(sw_fault_record) <= faults->data_size) {
        sw_fault_record record;
        ring_copy(faults, head + walked, &record, sizeof record);
        // Past the oldest record (never written: size 0), or another record type.
        if (record.header.size == 0 || walked + record.header.size > faults->data_size) break;
        walked += record.header.size;
        if (record.header.type != PERF_RECORD_SAMPLE || record.header.size != sizeof record) continue;
        if ((int64_t)record.time < not_before_ns) break;
        addresses[count] = record.addr;
        times[count] = (int64_t)record.time;
        count++;
    }
    // Records the kernel overwrote while they were copied are discarded: it writes below
    // `head`, so a record copied from [head + w, head + w + size) is intact while the new head
    // is above head + w + size - data_size.
    const uint64_t now = __atomic_load_n(&faults->meta->data_head, __ATOMIC_ACQUIRE);
    const uint64_t written = head - now;   // bytes written since (head decreases)
    if (written > 0) {
        uint64_t intact = faults->data_size > written ? faults->data_size - written : 0;
        while (count > 0 && (uint64_t)count * sizeof(sw_fault_record) > intact) count--;
    }
    return count;
}

void sw_faults_close(sw_faults *faults) {
    if (faults == NULL) return;
    (void)ioctl(faults->fd, PERF_EVENT_IOC_DISABLE, 0);
    munmap(faults->map, faults->map_size);
    close(faults->fd);
    free(faults);
}

// ---------------------------------------------------------------------------------------------
// Which mapping holds an address. PROCMAP_QUERY (linux/fs.h of Linux 6.11; declared here since
// older headers lack it).
struct sw_procmap_query {
    uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define SW_PROCMAP_QUERY _IOWR('f', 17, struct sw_procmap_query)

static int maps_fd = -1;
static int query_unsupported;

static int vma_from_text(uint64_t address, uint64_t *start, uint64_t *end, uint64_t *offset, char *name,
                         uint32_t name_size) {
    FILE *file = fopen("/proc/self/maps", "re");
    if (file == NULL) return -errno;
    char *line = NULL;
    size_t capacity = 0;
    int result = -ENOENT;
    while (getline(&line, &capacity, file) > 0) {
        unsigned long long low, high, off;
        int path_at = 0;
        if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &low, &high, &off, &path_at) < 3) continue;
        if (address < low || address >= high) continue;
        *start = low;
        *end = high;
        *offset = off;
        const char *path = path_at > 0 ? line + path_at : "";
        size_t length = strcspn(path, "\n");
        if (length >= name_size) length = name_size - 1;
        memcpy(name, path, length);
        name[length] = 0;
        result = 0;
        break;
    }
    free(line);
    fclose(file);
    return result;
}

int sw_vma_name(uint64_t address, uint64_t *start, uint64_t *end, uint64_t *offset, char *name,
                uint32_t name_size) {
    if (start == NULL || end == NULL || offset == NULL || name == NULL || name_size == 0) return -EINVAL;
    name[0] = 0;
    if (!__atomic_load_n(&query_unsupported, __ATOMIC_RELAXED)) {
        int fd = __atomic_load_n(&maps_fd, __ATOMIC_ACQUIRE);
        if (fd < 0) {
            int opened = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
            int expected = -1;
            if (opened >= 0 && !__atomic_compare_exchange_n(&maps_fd, &expected, opened, 0, __ATOMIC_ACQ_REL,
                                                            __ATOMIC_ACQUIRE)) {
                close(opened);
            }
            fd = __atomic_load_n(&maps_fd, __ATOMIC_ACQUIRE);
        }
        struct sw_procmap_query query;
        memset(&query, 0, sizeof query);
        query.size = sizeof query;
        query.query_addr = address;   // flags 0: the mapping that covers the address exactly
        query.vma_name_addr = (uint64_t)(uintptr_t)name;
        query.vma_name_size = name_size;
        if (fd >= 0 && ioctl(fd, SW_PROCMAP_QUERY, &query) == 0) {
            *start = query.vma_start;
            *end = query.vma_end;
            *offset = query.vma_offset;
            return 0;
        }
        if (fd >= 0 && errno == ENOENT) return -ENOENT;
        // ENOTTY/EINVAL: a kernel before 6.11.
        if (errno == ENOTTY || errno == EINVAL) __atomic_store_n(&query_unsupported, 1, __ATOMIC_RELAXED);
    }
    return vma_from_text(address, start, end, offset, name, name_size);
}
