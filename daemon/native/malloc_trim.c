/*
** cairn_malloc_trim(): gives the C heap's free memory back to the system (glibc's malloc_trim(0)); returns 1 when
** some was given back, 0 when none was or the C library has no malloc_trim.
**
** After a bulk import the daemon's C heap (SQLite's statements and pages, FTS5's segment writes, better-sqlite3's
** buffers) holds tens of MiB it freed but glibc keeps in its arenas: at 300k memories malloc_trim gave back 22 MiB
** of 246 right after an import (bench/README.md). Node has no binding for it, so the ranking extension carries it:
** the vector indexer calls it once after draining a large backlog (index/indexer.ts). Compiled into the same
** loadable extension as cairn_bm25.c (daemon/native/build.mjs), registered by its entry point.
*/
#include <stdlib.h>
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT3
#ifdef __GLIBC__
#include <malloc.h>
#endif

static void cairnMallocTrim(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int given = 0;
  (void)argc;
  (void)argv;
#ifdef __GLIBC__
  given = malloc_trim(0);
#endif
  sqlite3_result_int(ctx, given);
}

int cairnRegisterMallocTrim(sqlite3 *db) {
  return sqlite3_create_function(db, "cairn_malloc_trim", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, cairnMallocTrim, 0, 0);
}
