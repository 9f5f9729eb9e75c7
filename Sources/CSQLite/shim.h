// SQLite's C API (the same library GRDB links), for the gateway log's batch insert.
#ifndef TETHER_CSQLITE_SHIM_H
#define TETHER_CSQLITE_SHIM_H

#include <sqlite3.h>

/// Binds `length` bytes of UTF-8 text to parameter `index`. SQLite copies the bytes before it
/// returns (SQLITE_TRANSIENT, a macro Swift cannot import), so the caller's buffer may go.
static inline int tether_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

#endif
