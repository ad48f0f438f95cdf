// What the page-fault wait fact costs (docs/benchmarks.md, "Wait facts"): the faulting thread's
// cost per fault while the perf page-fault event is enabled (it is only during a stall), and the
// watchdog's cost per sample to read the newest faults and name a mapping.
//   cc -O2 -pthread -I Sources/CStallwatchSampler/include scripts/fault-facts-cost.c Sources/CStallwatchSampler/faults.c -o /tmp/fault-facts-cost
//   /tmp/fault-facts-cost
#define _GNU_SOURCE
#include "CStallwatchFaults.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

enum { PAGES = 65536 };   // 256 MiB of fresh anonymous memory: one minor fault per page

static pthread_barrier_t ready, go, done;
static volatile int worker_tid;
enum { ROUNDS = 16 };   // alternating: event off, on, off, on…
static int64_t elapsed[ROUNDS];

static void *worker(void *unused) {
    (void)unused;
    worker_tid = gettid();
    pthread_barrier_wait(&ready);
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&go);
        volatile uint8_t *memory = mmap(NULL, (size_t)PAGES * 4096, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        madvise((void *)memory, (size_t)PAGES * 4096, MADV_NOHUGEPAGE);
        int64_t start = now_ns();
        for (int page = 0; page < PAGES; page++) memory[(size_t)page * 4096] = 1;
        elapsed[round] = now_ns() - start;
        munmap((void *)memory, (size_t)PAGES * 4096);
        pthread_barrier_wait(&done);
    }
    return NULL;
}

static int compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(void) {
    pthread_barrier_init(&ready, NULL, 2);
    pthread_barrier_init(&go, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    pthread_barrier_wait(&ready);
    sw_faults *faults;
    int code = sw_faults_open(worker_tid, &faults);
    if (code != 0) {
        printf("sw_faults_open: %d\n", code);
        return 1;
    }
    for (int round = 0; round < ROUNDS; round++) {
        if (round % 2 == 1) sw_faults_enable(faults);
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&done);
        sw_faults_disable(faults);
    }
    // The median of each half (the machine is shared: single rounds vary by 2x).
    int64_t off[ROUNDS / 2], on[ROUNDS / 2];
    for (int i = 0; i < ROUNDS / 2; i++) {
        off[i] = elapsed[2 * i];
        on[i] = elapsed[2 * i + 1];
    }
    qsort(off, ROUNDS / 2, sizeof off[0], compare);
    qsort(on, ROUNDS / 2, sizeof on[0], compare);
    printf("per fault, median of %d rounds: event disabled %.0f ns, enabled %.0f ns\n", ROUNDS / 2,
           (double)off[ROUNDS / 4] / PAGES, (double)on[ROUNDS / 4] / PAGES);

    uint64_t addresses[64];
    int64_t times[64];
    int64_t start = now_ns();
    int32_t count = 0;
    for (int i = 0; i < 1000; i++) count = sw_faults_newest(faults, 0, addresses, times, 64);
    printf("sw_faults_newest, 64 of %d records: %.2f us\n", count, (double)(now_ns() - start) / 1000 / 1000);
    char name[4097];
    uint64_t low, high, offset;
    start = now_ns();
    for (int i = 0; i < 1000; i++) sw_vma_name((uint64_t)(uintptr_t)&main, &low, &high, &offset, name, sizeof name);
    printf("sw_vma_name (PROCMAP_QUERY) %s: %.2f us\n", name, (double)(now_ns() - start) / 1000 / 1000);
    pthread_join(thread, NULL);
    sw_faults_close(faults);
    return 0;
}
