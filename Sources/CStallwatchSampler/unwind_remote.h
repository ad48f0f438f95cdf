// libunwind's generic (local + remote) library, libunwind-x86_64.so.8, as perf.c (perf samples'
// stack copies) and scanunwind.c (parked threads' live stacks) use it: one owner for its types,
// entry points and loading. Not part of the module's API.
//
// As in sampler.c we declare the few types and entry points ourselves (values from libunwind 1.6's
// libunwind-common.h, libunwind-dynamic.h and libunwind-x86_64.h, a stable ABI since 0.99):
// nothing references libunwind at link time, so the process's _Unwind_* stay libgcc_s's.
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef uint64_t sw_unw_word_t;
typedef struct { sw_unw_word_t opaque[127]; } sw_unw_cursor_t;   // UNW_TDEP_CURSOR_LEN
typedef void *sw_unw_addr_space_t;

// unw_proc_info_t (x86_64: no last_ip; unw_tdep_proc_info_t is one char).
typedef struct {
    sw_unw_word_t start_ip, end_ip, lsda, handler, gp, flags;
    int format, unwind_info_size;
    void *unwind_info;
    char extra;
} sw_unw_proc_info_t;

// unw_dyn_info_t with the remote-table member of its union (the union padded to its largest).
typedef struct {
    void *next, *prev;
    sw_unw_word_t start_ip, end_ip, gp;
    int32_t format, pad;
    sw_unw_word_t load_offset;
    union {
        struct { sw_unw_word_t name_ptr, segbase, table_len, table_data; } rti;
        sw_unw_word_t room[8];
    } u;
} sw_unw_dyn_info_t;

typedef int (*sw_find_proc_info_fn)(sw_unw_addr_space_t, sw_unw_word_t, void *, int, void *);
typedef void (*sw_put_unwind_info_fn)(sw_unw_addr_space_t, void *, void *);
typedef int (*sw_get_dyn_info_list_addr_fn)(sw_unw_addr_space_t, sw_unw_word_t *, void *);
typedef int (*sw_access_mem_fn)(sw_unw_addr_space_t, sw_unw_word_t, sw_unw_word_t *, int, void *);
typedef int (*sw_access_reg_fn)(sw_unw_addr_space_t, int, sw_unw_word_t *, int, void *);
typedef int (*sw_access_fpreg_fn)(sw_unw_addr_space_t, int, long double *, int, void *);
typedef int (*sw_resume_fn)(sw_unw_addr_space_t, sw_unw_cursor_t *, void *);
typedef int (*sw_get_proc_name_fn)(sw_unw_addr_space_t, sw_unw_word_t, char *, size_t, sw_unw_word_t *, void *);
// unw_accessors_t as of 1.6; later versions append optional members (NULL means "not provided"),
// so the struct is padded with zeros.
typedef struct {
    sw_find_proc_info_fn find_proc_info;
    sw_put_unwind_info_fn put_unwind_info;
    sw_get_dyn_info_list_addr_fn get_dyn_info_list_addr;
    sw_access_mem_fn access_mem;
    sw_access_reg_fn access_reg;
    sw_access_fpreg_fn access_fpreg;
    sw_resume_fn resume;
    sw_get_proc_name_fn get_proc_name;
    void *reserved[8];
} sw_unw_accessors_t;

enum { SW_UNW_EUNSPEC = 1, SW_UNW_EBADREG = 3, SW_UNW_EREADONLYREG = 4, SW_UNW_EINVAL = 8, SW_UNW_ENOINFO = 10 };
enum { SW_UNW_CACHE_GLOBAL = 1, SW_UNW_CACHE_PER_THREAD = 2 };
enum { SW_UNW_INFO_FORMAT_REMOTE_TABLE = 2 };
// libunwind's x86_64 register numbers; UNW_REG_IP is RIP and UNW_REG_SP is RSP.
enum { UNW_RBP = 6, UNW_RSP = 7, UNW_RIP = 16 };

// The entry points, resolved with dlsym.
typedef struct {
    sw_unw_accessors_t *(*get_accessors)(sw_unw_addr_space_t);
    sw_unw_addr_space_t (*create_addr_space)(sw_unw_accessors_t *, int);
    void (*destroy_addr_space)(sw_unw_addr_space_t);
    int (*set_caching_policy)(sw_unw_addr_space_t, int);
    void (*flush_cache)(sw_unw_addr_space_t, sw_unw_word_t, sw_unw_word_t);
    int (*init_remote)(sw_unw_cursor_t *, sw_unw_addr_space_t, void *);
    int (*step)(sw_unw_cursor_t *);
    int (*get_reg)(sw_unw_cursor_t *, int, sw_unw_word_t *);
    int (*search_unwind_table)(sw_unw_addr_space_t, sw_unw_word_t, sw_unw_dyn_info_t *, sw_unw_proc_info_t *, int,
                               void *);
    sw_unw_addr_space_t local_space;
    void (*set_iterate_phdr)(sw_unw_addr_space_t, void *);   // libunwind >= 1.7 only (else NULL)
} sw_unw_generic;

// libunwind-x86_64.so.8, loaded once (dlopen RTLD_LOCAL | RTLD_NOW | RTLD_NODELETE); NULL when it
// or one of the entry points is missing. Any thread but a signal handler.
__attribute__((visibility("hidden"))) const sw_unw_generic *sw_unw_generic_library(void);
