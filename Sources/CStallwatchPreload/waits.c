// The wait calls of event loops, interposed: each calls the C library's own function between
// sw_loop_wait_begin and sw_loop_wait_end (sw_loop_slot.h), which find loop threads and time
// their iterations. swift-nio, libuv, GLib and Python's asyncio all wait through these.
// errno is the real call's: the bookkeeping after it never touches errno.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "sw_loop_slot.h"

/// The next definition of `name` (the C library's), looked up once. A racing first call from two
/// threads looks it up twice and stores the same pointer.
#define SWP_REAL(type, name)                                                            \
    static type real_##name;                                                            \
    type next = __atomic_load_n(&real_##name, __ATOMIC_RELAXED);                        \
    if (next == NULL) {                                                                 \
        next = (type)dlsym(RTLD_NEXT, #name);                                           \
        __atomic_store_n(&real_##name, next, __ATOMIC_RELAXED);                         \
    }

/// Runs `call` (which sets `result`) between the loop bookkeeping, keeping the call's errno.
#define SWP_TIMED(kind, set, fd, blocking, call)                                                           \
    sw_loop_wait_begin((kind), (set), (fd), (blocking), (uint64_t)(uintptr_t)__builtin_return_address(0)); \
    call;                                                \
    const int saved = errno;                             \
    sw_loop_wait_end((kind), (set), (fd));               \
    errno = saved;

static int swp_missing(void) {
    errno = ENOSYS;
    return -1;
}

static inline uint64_t swp_address(const void *pointer) { return (uint64_t)(uintptr_t)pointer; }

static inline int swp_first_poll_fd(const struct pollfd *fds, nfds_t count) {
    return count > 0 && fds != NULL ? fds[0].fd : -1;
}

/// The lowest descriptor in the first non-empty set of a select call (-1 for none).
static int swp_first_select_fd(int nfds, const fd_set *read, const fd_set *write, const fd_set *except) {
    const fd_set *sets[3] = {read, write, except};
    const int bits = (int)(8 * sizeof(__fd_mask));
    const int limit = nfds < FD_SETSIZE ? nfds : FD_SETSIZE;
    for (int which = 0; which < 3; which++) {
        if (sets[which] == NULL) continue;
        // A word at a time: a set of a thousand descriptors is a few loads, not a thousand tests.
        for (int word = 0; word * bits < limit; word++) {
            const __fd_mask mask = __FDS_BITS(sets[which])[word];
            if (mask == 0) continue;
            const int fd = word * bits + __builtin_ctzl((unsigned long)mask);
            return fd < limit ? fd : -1;
        }
    }
    return -1;
}

static inline uint64_t swp_select_set(const fd_set *read, const fd_set *write) {
    return swp_address(read != NULL ? (const void *)read : (const void *)write);
}

__attribute__((visibility("default"))) int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout) {
    typedef int (*function)(int, struct epoll_event *, int, int);
    SWP_REAL(function, epoll_wait)
    if (next == NULL) return swp_missing();
    int result;
    SWP_TIMED(SW_LOOP_EPOLL, 0, epfd, timeout != 0, result = next(epfd, events, max, timeout))
    return result;
}

__attribute__((visibility("default"))) int epoll_pwait(
    int epfd, struct epoll_event *events, int max, int timeout, const sigset_t *mask) {
    typedef int (*function)(int, struct epoll_event *, int, int, const sigset_t *);
    SWP_REAL(function, epoll_pwait)
    if (next == NULL) return swp_missing();
    int result;
    SWP_TIMED(SW_LOOP_EPOLL, 0, epfd, timeout != 0, result = next(epfd, events, max, timeout, mask))
    return result;
}

__attribute__((visibility("default"))) int epoll_pwait2(
    int epfd, struct epoll_event *events, int max, const struct timespec *timeout, const sigset_t *mask) {
    typedef int (*function)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
    SWP_REAL(function, epoll_pwait2)
    if (next == NULL) return swp_missing();
    const int blocking = timeout == NULL || timeout->tv_sec != 0 || timeout->tv_nsec != 0;
    int result;
    SWP_TIMED(SW_LOOP_EPOLL, 0, epfd, blocking, result = next(epfd, events, max, timeout, mask))
    return result;
}

__attribute__((visibility("default"))) int poll(struct pollfd *fds, nfds_t count, int timeout) {
    typedef int (*function)(struct pollfd *, nfds_t, int);
    SWP_REAL(function, poll)
    if (next == NULL) return swp_missing();
    int result;
    SWP_TIMED(SW_LOOP_POLL, swp_address(fds), swp_first_poll_fd(fds, count), timeout != 0,
        result = next(fds, count, timeout))
    return result;
}

/// What `poll` becomes under _FORTIFY_SOURCE.
__attribute__((visibility("default"))) int __poll_chk(struct pollfd *fds, nfds_t count, int timeout, size_t length) {
    typedef int (*function)(struct pollfd *, nfds_t, int, size_t);
    SWP_REAL(function, __poll_chk)
    if (next == NULL) return swp_missing();
    int result;
    SWP_TIMED(SW_LOOP_POLL, swp_address(fds), swp_first_poll_fd(fds, count), timeout != 0,
        result = next(fds, count, timeout, length))
    return result;
}

__attribute__((visibility("default"))) int ppoll(
    struct pollfd *fds, nfds_t count, const struct timespec *timeout, const sigset_t *mask) {
    typedef int (*function)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
    SWP_REAL(function, ppoll)
    if (next == NULL) return swp_missing();
    const int blocking = timeout == NULL || timeout->tv_sec != 0 || timeout->tv_nsec != 0;
    int result;
    SWP_TIMED(SW_LOOP_POLL, swp_address(fds), swp_first_poll_fd(fds, count), blocking,
        result = next(fds, count, timeout, mask))
    return result;
}

__attribute__((visibility("default"))) int select(
    int nfds, fd_set *read, fd_set *write, fd_set *except, struct timeval *timeout) {
    typedef int (*function)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    SWP_REAL(function, select)
    if (next == NULL) return swp_missing();
    const int blocking = timeout == NULL || timeout->tv_sec != 0 || timeout->tv_usec != 0;
    // The first descriptor before the call: select overwrites the sets with its result.
    const int fd = swp_first_select_fd(nfds, read, write, except);
    int result;
    SWP_TIMED(SW_LOOP_SELECT, swp_select_set(read, write), fd, blocking,
        result = next(nfds, read, write, except, timeout))
    return result;
}

__attribute__((visibility("default"))) int pselect(
    int nfds, fd_set *read, fd_set *write, fd_set *except, const struct timespec *timeout, const sigset_t *mask) {
    typedef int (*function)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
    SWP_REAL(function, pselect)
    if (next == NULL) return swp_missing();
    const int blocking = timeout == NULL || timeout->tv_sec != 0 || timeout->tv_nsec != 0;
    const int fd = swp_first_select_fd(nfds, read, write, except);
    int result;
    SWP_TIMED(SW_LOOP_SELECT, swp_select_set(read, write), fd, blocking,
        result = next(nfds, read, write, except, timeout, mask))
    return result;
}
