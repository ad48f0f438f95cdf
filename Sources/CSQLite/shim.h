// The system's SQLite (Debian: libsqlite3-dev), for the tests, samples and demo.
#include <sqlite3.h>
