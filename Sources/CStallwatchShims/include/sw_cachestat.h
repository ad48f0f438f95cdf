// How many of a file's pages are in the page cache: cachestat(2) (Linux 6.5+), one syscall, no
// mapping. Lets the watchdog tell which open file a long read() on CPU is filling.
#pragma once

#include <stdint.h>

/// The number of `fd`'s pages in the page cache in *pages; 0, or -errno (ENOSYS before 6.5).
int sw_cached_pages(int fd, uint64_t *pages);
