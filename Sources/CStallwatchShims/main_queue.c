// libdispatch's main-queue hooks, in a file of their own: the only code of this target that needs
// libdispatch, which the preload shim (scripts/build-preload-shim.sh) leaves out.
#include "CStallwatchShims.h"

// Exported by libdispatch for CoreFoundation's run loop; not in its public headers.
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *msg);

int sw_dispatch_main_queue_handle(void) { return _dispatch_get_main_queue_handle_4CF(); }

void sw_dispatch_main_queue_drain(void) { _dispatch_main_queue_callback_4CF(0); }
