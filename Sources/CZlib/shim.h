// The system's zlib (Debian zlib1g-dev), for the gzip'ed pprof export.
#include <zlib.h>
