#include "sw_cachestat.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451  // x86_64, Linux 6.5+
#endif

struct sw_cachestat_range {
    uint64_t off;
    uint64_t len;
};

struct sw_cachestat {
    uint64_t nr_cache;
    uint64_t nr_dirty;
    uint64_t nr_writeback;
    uint64_t nr_evicted;
    uint64_t nr_recently_evicted;
};

int sw_cached_pages(int fd, uint64_t *pages) {
    struct sw_cachestat_range range = {0, 0};
    struct sw_cachestat stat = {0};
    if (syscall(__NR_cachestat, fd, &range, &stat, 0) != 0) return -errno;
    *pages = stat.nr_cache;
    return 0;
}
