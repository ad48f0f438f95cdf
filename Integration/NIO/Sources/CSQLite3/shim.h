// The system's SQLite (Debian: libsqlite3-dev), for the database handler of the tests.
#include <sqlite3.h>
