// The preload shim's constructor: what `stallwatch record` puts in LD_PRELOAD when the shim
// (libStallwatchPreloadShim.so, StallwatchSymbols.preloadShim) is next to the Swift preload
// library. scripts/build-preload-shim.sh links it from this file, the interposers of
// Sources/CStallwatchPreload and the registries of Sources/CStallwatchShims, against the C library
// only: every process of a recording maps it, and one that is not a Swift program and runs no
// event loop maps nothing else (no Swift runtime, no libdispatch).
//
// The Swift part (libStallwatchPreload.so, in the shim's directory) is loaded with dlopen:
// - at once, here, in the recorded command itself (the recording's root, which always leaves a
//   trace) and in a program that has the Swift runtime or libdispatch loaded already (its main
//   queue and pool are watched from the start);
// - in any other process, when the wait interposers find its first event loop: from the loop
//   registry's thread hook (sw_loop_slot.h), on the loop's thread, as it goes idle;
// - never in a process that does neither.
// Its constructor (Sources/CStallwatchPreload/preload.c) gives a program that is not a Swift
// program its crash signals back, as when it is preloaded itself; then this library starts its
// monitor (stallwatch_preload_start), once dlopen has returned. Its references to the registries
// (sw_loop_*, sw_main_thread, …) bind to this library's copies: LD_PRELOAD puts this library
// before it in the global lookup scope. So the loops this library found before the Swift part was
// loaded are the ones that part watches, and the interposers here (waits, dispatch calls) are the
// ones every call reaches; the Swift part's own copies go unused.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sw_loop_slot.h"

/// The Swift part's file name (StallwatchSymbols.preloadLibrary).
static const char swl_swift_part[] = "libStallwatchPreload.so";

/// The libraries whose presence makes a program a Swift program (or a libdispatch one) here.
static const char *const swl_swift_runtimes[] = {"libswiftCore.so", "libdispatch.so"};

static pthread_once_t swl_once = PTHREAD_ONCE_INIT;
static void *swl_handle;

/// The environment variable's value as `StallwatchEnvironment.isOff` reads it.
static bool swl_is_off(const char *name) {
    const char *value = getenv(name);
    if (value == NULL) return false;
    static const char *const off[] = {"0", "off", "false", "no"};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        if (strcasecmp(value, off[i]) == 0) return true;
    }
    return false;
}

static long swl_process_id(const char *name) {
    const char *value = getenv(name);
    if (value == NULL || *value == '\0') return 0;
    char *end;
    const long pid = strtol(value, &end, 10);
    return *end == '\0' && pid > 0 ? pid : 0;
}

/// Whether this process is the recording's root, as `ProcessTree.role` decides it.
static bool swl_is_root(void) {
    const long root = swl_process_id("STALLWATCH_ROOT_PID");
    if (root != 0) return root == (long)getpid();
    const long record = swl_process_id("STALLWATCH_RECORD_PID");
    if (record != 0) return record == (long)getppid();
    return true;
}

/// Read by the Swift part's constructor (preload.c): loaded by this shim, it leaves the start to
/// swl_load, which starts it once dlopen has returned. glibc adds a library opened with
/// RTLD_GLOBAL to the global scope only after its constructors ran, and the monitor looks the Swift
/// runtime's hooks up there (dlsym(RTLD_DEFAULT, "swift_task_enqueueGlobal_hook")).
__attribute__((visibility("default"))) const int stallwatch_preload_shim = 1;

static int swl_find_runtime(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    const char *path = info->dlpi_name != NULL ? info->dlpi_name : "";
    const char *slash = strrchr(path, '/');
    const char *name = slash != NULL ? slash + 1 : path;
    for (size_t i = 0; i < sizeof swl_swift_runtimes / sizeof swl_swift_runtimes[0]; i++) {
        if (strcmp(name, swl_swift_runtimes[i]) == 0) {
            *(bool *)found = true;
            return 1;
        }
    }
    return 0;
}

/// Whether the Swift runtime or libdispatch is loaded: by the names of the loaded objects (a
/// dlopen with RTLD_NOLOAD would search the library path for the file, a few dozen failed opens).
static bool swl_has_swift_runtime(void) {
    bool found = false;
    dl_iterate_phdr(swl_find_runtime, &found);
    return found;
}

/// Says why the Swift part could not be loaded, as `Messages.say` says things: appended to the
/// file STALLWATCH_MESSAGES names (record prints it on its own stderr), else on stderr.
static void swl_say(const char *problem) {
    char comm[32] = "?";
    FILE *file = fopen("/proc/self/comm", "re");
    if (file != NULL) {
        if (fgets(comm, sizeof comm, file) != NULL) comm[strcspn(comm, "\n")] = '\0';
        fclose(file);
    }
    char line[1024];
    const char *messages = getenv("STALLWATCH_MESSAGES");
    const bool toFile = messages != NULL && *messages != '\0';
    const int length = toFile
        ? snprintf(line, sizeof line, "stallwatch: %s (pid %ld): not recording: %s\n", comm, (long)getpid(), problem)
        : snprintf(line, sizeof line, "stallwatch: not recording: %s\n", problem);
    if (length <= 0) return;
    const size_t size = (size_t)length < sizeof line ? (size_t)length : sizeof line - 1;
    // One write with O_APPEND: the lines of the processes of a tree do not interleave.
    const int fd = toFile ? open(messages, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : STDERR_FILENO;
    if (fd < 0) return;
    (void)!write(fd, line, size);
    if (toFile) close(fd);
}

/// Loads the Swift part from this library's directory and starts its monitor. A failure is said
/// (swl_say) and leaves the program unwatched.
static void swl_load(void) {
    Dl_info self;
    if (dladdr((const void *)&swl_load, &self) == 0 || self.dli_fname == NULL) return;
    const char *slash = strrchr(self.dli_fname, '/');
    const size_t directory = slash != NULL ? (size_t)(slash - self.dli_fname) + 1 : 0;
    char path[4096];
    if (directory + sizeof swl_swift_part > sizeof path) return;
    memcpy(path, self.dli_fname, directory);
    memcpy(path + directory, swl_swift_part, sizeof swl_swift_part);
    void *handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (handle == NULL) {
        swl_say(dlerror());
        return;
    }
    void (*start)(void) = (void (*)(void))dlsym(handle, "stallwatch_preload_start");
    if (start == NULL) {
        swl_say(dlerror());
        return;
    }
    start();
    swl_handle = handle;
}

/// The registry's thread hook until the Swift part's monitor sets its own: the process's first
/// event loop loads the Swift part, and this thread is then prepared for sampling through it.
static void swl_loop_found(void) {
    pthread_once(&swl_once, swl_load);
    if (swl_handle == NULL) return;
    void (*prepare)(void) = (void (*)(void))dlsym(swl_handle, "stallwatch_preload_prepare_loop_thread");
    if (prepare != NULL) prepare();
}

__attribute__((constructor)) static void swl_constructor(void) {
    // No recording asked for: the Swift part would do nothing.
    const char *trace = getenv("STALLWATCH_TRACE");
    if (trace == NULL || *trace == '\0') return;
    const bool root = swl_is_root();
    // A process the recording leaves out (STALLWATCH_CHILDREN=0).
    if (!root && swl_is_off("STALLWATCH_CHILDREN")) return;
    if (root || swl_has_swift_runtime()) {
        pthread_once(&swl_once, swl_load);
    } else if (!swl_is_off("STALLWATCH_LOOPS")) {
        sw_loop_set_thread_hook(swl_loop_found);
    }
}
