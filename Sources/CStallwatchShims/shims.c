#define _GNU_SOURCE
#include "CStallwatchShims.h"

#include <unistd.h>

static pthread_t sw_main;

// Shared objects linked at start-up run their constructors on the main thread before main().
__attribute__((constructor)) static void sw_capture_main_thread(void) { sw_main = pthread_self(); }

pthread_t sw_main_thread(void) { return sw_main; }

int32_t sw_gettid(void) { return (int32_t)gettid(); }

#include <errno.h>
#include <sys/epoll.h>
#include <time.h>

static int sw_pwait2_missing;

int sw_epoll_wait_ns(int epfd, struct epoll_event *events, int max, int64_t timeout_ns) {
    if (!sw_pwait2_missing) {
        struct timespec ts = {timeout_ns / 1000000000, timeout_ns % 1000000000};
        int n = epoll_pwait2(epfd, events, max, timeout_ns < 0 ? 0 : &ts, 0);
        if (n >= 0 || errno != ENOSYS) return n;
        sw_pwait2_missing = 1;
    }
    int ms = timeout_ns < 0 ? -1 : (int)((timeout_ns + 999999) / 1000000);
    return epoll_wait(epfd, events, max, ms);
}

uint64_t sw_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#include <sys/prctl.h>

int sw_set_timer_slack(unsigned long nanos) { return prctl(PR_SET_TIMERSLACK, nanos, 0, 0, 0); }

void sw_set_thread_name(const char *name) { pthread_setname_np(pthread_self(), name); }

#include <sys/uio.h>

long sw_read_memory(uint64_t address, void *buffer, unsigned long length) {
    struct iovec local = {buffer, length};
    struct iovec remote = {(void *)(uintptr_t)address, length};
    return (long)process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

#include <sched.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/syscall.h>

int sw_get_thread_affinity(cpu_set_t *set) { return sched_getaffinity(0, sizeof(cpu_set_t), set); }

int sw_set_thread_affinity(const cpu_set_t *set) { return sched_setaffinity(0, sizeof(cpu_set_t), set); }

// struct sched_attr as the kernel defines it (glibc 2.36 declares no wrapper).
struct sw_sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
    uint32_t sched_util_min, sched_util_max;
};

int sw_raise_thread_scheduling(uint64_t slice_ns) {
    // SCHED_RESET_ON_FORK everywhere: a thread this one creates starts with the default policy
    // and nice 0 (libdispatch starts a worker on the thread that queues work for it).
    const struct sched_param fifo = {.sched_priority = 1};
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &fifo) == 0) return 1;
    const struct sched_param other = {.sched_priority = 0};
    (void)sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &other);
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10) == 0) return 2;
    struct sw_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.sched_policy = SCHED_OTHER;
    attr.sched_flags = 0x01;  // SCHED_FLAG_RESET_ON_FORK
    attr.sched_runtime = slice_ns;
    if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0) return 3;
    return 0;
}

#include "sw_tick_slot.h"

__thread sw_tick_slot *sw_bound_tick_slot;
