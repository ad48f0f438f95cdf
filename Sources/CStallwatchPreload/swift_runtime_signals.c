// A program that is not a Swift program gets the Swift runtime only because this library needs
// it, and the runtime's crash handler with it: when libswiftCore.so loads it takes every crash
// signal still at SIG_DFL for its backtracer (SWIFT_BACKTRACE; stdlib/public/runtime/
// CrashHandlerLinux.cpp). That handler prints a Swift crash report for a program that has
// nothing to do with Swift, and returns from a signal sent with kill(), which the program then
// survives (`sh -c 'kill -SEGV $$'` exits 0). These put the signals back before main runs.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

static const char swp_runtime[] = "libswiftCore.so";

// The loaded objects as dl_iterate_phdr lists them: the executable first.
enum { SWP_MAX_OBJECTS = 1024 };
struct swp_object {
    const char *path;  // "" for the executable
    const ElfW(Dyn) *dynamic;
    ElfW(Addr) base;
};
struct swp_objects {
    struct swp_object items[SWP_MAX_OBJECTS];
    int count;
};

static int swp_collect(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct swp_objects *objects = data;
    if (objects->count == SWP_MAX_OBJECTS) return 1;
    const ElfW(Dyn) *dynamic = NULL;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        }
    }
    objects->items[objects->count++] =
        (struct swp_object){info->dlpi_name != NULL ? info->dlpi_name : "", dynamic, info->dlpi_addr};
    return 0;
}

static const char *swp_base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

// glibc relocates the address entries of a dynamic section in place, except where the section is
// read-only (the vDSO): an address below the load address is still an offset.
static const char *swp_string_table(const struct swp_object *object) {
    for (const ElfW(Dyn) *entry = object->dynamic; entry != NULL && entry->d_tag != DT_NULL; entry++) {
        if (entry->d_tag == DT_STRTAB) {
            ElfW(Addr) address = entry->d_un.d_ptr;
            return (const char *)(address < object->base ? address + object->base : address);
        }
    }
    return NULL;
}

// Whether `object` is the one a DT_NEEDED entry `name` names: by its DT_SONAME, or its file name.
static bool swp_is_named(const struct swp_object *object, const char *name) {
    if (object->path[0] != '\0' && strcmp(swp_base_name(object->path), name) == 0) return true;
    const char *strings = swp_string_table(object);
    if (strings == NULL) return false;
    for (const ElfW(Dyn) *entry = object->dynamic; entry->d_tag != DT_NULL; entry++) {
        if (entry->d_tag == DT_SONAME && strcmp(strings + entry->d_un.d_val, name) == 0) return true;
    }
    return false;
}

bool swp_program_needs_swift_runtime(void) {
    static struct swp_objects objects;  // 24 KB: not on a constructor's stack
    objects.count = 0;
    dl_iterate_phdr(swp_collect, &objects);
    if (objects.count == 0) return true;  // nothing known: leave the handlers alone
    // Breadth first through DT_NEEDED from the executable; LD_PRELOAD objects (this library) are
    // not reached unless the program itself links them.
    static bool reached[SWP_MAX_OBJECTS];
    static int queue[SWP_MAX_OBJECTS];
    memset(reached, 0, sizeof reached);
    int head = 0, tail = 0;
    reached[0] = true;
    queue[tail++] = 0;
    while (head < tail) {
        const struct swp_object *object = &objects.items[queue[head++]];
        if (swp_is_named(object, swp_runtime)) return true;
        const char *strings = swp_string_table(object);
        if (strings == NULL) continue;
        for (const ElfW(Dyn) *entry = object->dynamic; entry->d_tag != DT_NULL; entry++) {
            if (entry->d_tag != DT_NEEDED) continue;
            const char *needed = strings + entry->d_un.d_val;
            for (int i = 0; i < objects.count; i++) {
                if (!reached[i] && swp_is_named(&objects.items[i], needed)) {
                    reached[i] = true;
                    queue[tail++] = i;
                }
            }
        }
    }
    return false;
}

int swp_restore_signals_taken_by_swift_runtime(void) {
    int restored = 0;
    for (int signo = 1; signo < SIGRTMIN; signo++) {
        if (signo == SIGKILL || signo == SIGSTOP) continue;
        struct sigaction current;
        if (sigaction(signo, NULL, &current) != 0) continue;
        // sa_handler and sa_sigaction share storage.
        const uintptr_t handler = (uintptr_t)current.sa_handler;
        if (handler == (uintptr_t)SIG_DFL || handler == (uintptr_t)SIG_IGN) continue;
        Dl_info info;
        if (dladdr((void *)handler, &info) == 0 || info.dli_fname == NULL) continue;
        if (strcmp(swp_base_name(info.dli_fname), swp_runtime) != 0) continue;
        // The runtime installs its handler only over SIG_DFL, so that is what was there.
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        if (sigaction(signo, &fallback, NULL) == 0) restored++;
    }
    return restored;
}
