// Loading libunwind's generic library once, for perf.c and scanunwind.c (unwind_remote.h).
#define _GNU_SOURCE
#include "unwind_remote.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

static sw_unw_generic g_library;
static int g_loaded;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define SW_DLSYM(handle, name, field)                                                             \
    do {                                                                                           \
        void *sym_ = dlsym(handle, name);                                                          \
        if (sym_ == NULL) return;                                                                  \
        memcpy(&g_library.field, &sym_, sizeof sym_);                                              \
    } while (0)

static void load(void) {
    // RTLD_LOCAL keeps its (and its dependency libunwind.so.8's) _Unwind_* out of the global
    // scope; RTLD_NODELETE so no dlclose elsewhere can unmap it under a running unwind.
    void *h = dlopen("libunwind-x86_64.so.8", RTLD_LOCAL | RTLD_NOW | RTLD_NODELETE);
    if (h == NULL) return;
    SW_DLSYM(h, "_Ux86_64_get_accessors", get_accessors);
    SW_DLSYM(h, "_Ux86_64_create_addr_space", create_addr_space);
    SW_DLSYM(h, "_Ux86_64_destroy_addr_space", destroy_addr_space);
    SW_DLSYM(h, "_Ux86_64_set_caching_policy", set_caching_policy);
    SW_DLSYM(h, "_Ux86_64_flush_cache", flush_cache);
    SW_DLSYM(h, "_Ux86_64_init_remote", init_remote);
    SW_DLSYM(h, "_Ux86_64_step", step);
    SW_DLSYM(h, "_Ux86_64_get_reg", get_reg);
    SW_DLSYM(h, "_Ux86_64_dwarf_search_unwind_table", search_unwind_table);
    sw_unw_addr_space_t *local = dlsym(h, "_Ux86_64_local_addr_space");
    if (local == NULL || *local == NULL) return;
    g_library.local_space = *local;
    void *iterate = dlsym(h, "_Ux86_64_set_iterate_phdr_function");
    if (iterate != NULL) memcpy(&g_library.set_iterate_phdr, &iterate, sizeof iterate);
    g_loaded = 1;
}

const sw_unw_generic *sw_unw_generic_library(void) {
    pthread_once(&g_once, load);
    return g_loaded ? &g_library : NULL;
}
