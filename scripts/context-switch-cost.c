// What an event attached to a thread costs it at every context switch: two threads hand a byte
// back and forth through two pipes (each round trip two switches), bare (0), with a disabled
// perf task-clock event attached (1), with an enabled one (2), and with a POSIX timer armed on
// the thread's CPU clock (3). Measured for docs/benchmarks.md, "A real swift-nio server":
//     cc -O2 -o /tmp/cs scripts/context-switch-cost.c -lpthread
//     for m in 0 1 2 3; do taskset -c 0 /tmp/cs $m; done
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static int p1[2], p2[2];
static int mode;
static void *peer(void *a) { char c; for (;;) { if (read(p1[0], &c, 1) != 1) break; write(p2[1], &c, 1);} return 0; }
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec/1e9;}
static void h(int s){}
int main(int argc, char **argv) {
  mode = atoi(argv[1]);
  pipe(p1); pipe(p2);
  pthread_t t; pthread_create(&t, 0, peer, 0);
  int tid = syscall(SYS_gettid);
  signal(SIGSTKFLT, h);
  if (mode == 1 || mode == 2) {
    struct perf_event_attr attr; memset(&attr, 0, sizeof attr); attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE; attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = 8000000; attr.exclude_kernel = 1; attr.disabled = 1; attr.wakeup_events=1;
    int fd = syscall(SYS_perf_event_open, &attr, tid, -1, -1, 0);
    if (fd < 0) { perror("perf"); return 1; }
    if (mode == 2) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  }
  if (mode == 3) {
    struct sigevent ev; memset(&ev,0,sizeof ev); ev.sigev_notify = SIGEV_THREAD_ID; ev.sigev_signo = SIGSTKFLT; ev._sigev_un._tid = tid;
    timer_t tm; if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &tm)) { perror("timer"); return 1; }
    struct itimerspec its = {{0, 8000000}, {0, 8000000}}; timer_settime(tm, 0, &its, 0);
  }
  char c = 'x'; int n = 200000; double s = now();
  for (int i = 0; i < n; i++) { write(p1[1], &c, 1); read(p2[0], &c, 1); }
  double e = now();
  printf("mode %d: %.0f roundtrips/s (%.2f us each)\n", mode, n/(e-s), (e-s)/n*1e6);
  return 0;
}
