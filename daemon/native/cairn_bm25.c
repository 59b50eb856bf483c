/*
** cairn_bm25(memories_fts, counts, w0, w1, ...): FTS5's bm25(), with each phrase's document count handed in.
**
** FTS5's own bm25() counts, in every statement, the rows that hold each phrase of the query (a scan of every
** phrase's whole doclist, namespace tokens included): at 100k memories that was up to 40% of a query whose words
** are all common. Cairn knows those counts already (store/search-fts.ts caches them until the index changes) and
** hands them in as `counts`, a blob of one native-endian double per phrase, in the order the phrases appear in the
** MATCH expression. A negative count leaves that phrase out of the score and its instances unread: it is matched,
** not weighed (a namespace token, whose column weighs 0; the words a scope's every-term matches are ranked without,
** store/search-fts.ts). Everything else is bm25()'s arithmetic in the same order, so given the counts bm25() would
** take, the scores are the same doubles (test/unit/fts-rank-ext.test.ts compares them). Built by
** daemon/native/build.mjs and loaded by store/db.ts; without it, Cairn uses bm25() itself. The arithmetic follows
** SQLite's fts5_aux.c (public domain).
*/
#include <math.h>
#include <string.h>
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include "fts5.h"

/*
** Each row's length (its tokens in every column, what xColumnSize(-1) reads from memories_fts_docsize: one B-tree
** lookup per row, about 60% of scoring a row at 1M memories), remembered per connection between statements. A length
** stays right until its docsize row is written again, so the cache follows the writes row by row rather than starting
** over at each one (at a million memories, a cache emptied by every write cost a full-text arm up to 200 ms at p95
** after it, against 14 warm: bench/README.md):
**   - this connection's writes of memories_fts_docsize forget those rows (sizeHook, SQLite's update hook: it sees
**     every row FTS5 writes there, committed or rolled back later; forgetting is always safe);
**   - another connection's commits move `PRAGMA data_version` (this connection's own never do); then the index's
**     content key (contentKey: its averages record and the structure's write counter and newest segment origin,
**     which every insert and delete moves and a merge or an optimize does not) tells whether the index's contents
**     changed: if so every length is forgotten, else none (the checkpoint worker's merges);
**   - cairn_bm25_settle(), called by the store after each of its own commits that wrote the index, takes the
**     content key as this connection left it, so a later merge by another connection is not mistaken for a change.
** Never used or filled inside a transaction (its uncommitted rows may still roll back). Lengths are kept as
** length + 1 in 16 bits, for rowids 1 .. SIZE_CACHE_MAX_ROWID; other rows are looked up as before. cairn_bm25 ranks
** memories_fts only.
*/
#define SIZE_CACHE_MAX_ROWID (1 << 24)
#define CONTENT_KEY_MAX 512
typedef struct SizeCache {
  sqlite3 *db;
  int bValid;                          /* aKey and iDataVersion were taken with the lengths consistent */
  unsigned char aKey[CONTENT_KEY_MAX]; /* the content key the lengths are right for */
  int nKey;
  sqlite3_int64 iDataVersion; /* PRAGMA data_version then */
  unsigned short *aSize;      /* length + 1 by rowid, 0: not read yet */
  sqlite3_int64 nSize;
  sqlite3_int64 nReset; /* times every length was forgotten (cairn_bm25_settle reports it) */
} SizeCache;

/* Freed with cairn_bm25 when the connection closes; the update hook goes with the connection. */
static void sizeCacheFree(void *v) {
  SizeCache *c = (SizeCache *)v;
  if (c == 0) return;
  sqlite3_free(c->aSize);
  sqlite3_free(c);
}

/* SQLite's update hook: a row of memories_fts_docsize written on this connection has its length forgotten. */
static void sizeHook(void *v, int op, char const *zDb, char const *zTab, sqlite3_int64 iRowid) {
  SizeCache *c = (SizeCache *)v;
  (void)op;
  if (iRowid > 0 && iRowid < c->nSize && strcmp(zTab, "memories_fts_docsize") == 0 && strcmp(zDb, "main") == 0)
    c->aSize[iRowid] = 0;
}

/* One SQLite varint (1-9 bytes, big-endian groups of 7 bits, the ninth byte whole): its size, 0 when cut short. */
static int getVarint(const unsigned char *p, int n, sqlite3_uint64 *pv) {
  sqlite3_uint64 v = 0;
  int i;
  for (i = 0; i < 8 && i < n; i++) {
    v = (v << 7) | (p[i] & 0x7f);
    if ((p[i] & 0x80) == 0) {
      *pv = v;
      return i + 1;
    }
  }
  if (i == 8 && n > 8) {
    *pv = (v << 8) | p[8];
    return 9;
  }
  return 0;
}

/*
** From FTS5's structure record (fts5StructureWrite in SQLite's fts5_index.c): the write counter (leaves written by
** flushes, and each contentless delete: never moved by a merge) and the newest segment origin (one per flushed
** segment, kept through merges). 0 when the record cannot be read.
*/
static int structureCounters(const unsigned char *p, int n, sqlite3_uint64 *pWrites, sqlite3_uint64 *pOrigin) {
  sqlite3_uint64 nLevel, nSegment, v, origin = 0;
  int i = 4, bV2 = 0, k, m;
  sqlite3_uint64 iLvl, iSeg;
  if (n < 4) return 0;
  if (n >= 8 && memcmp(p + 4, "\xFF\x00\x00\x01", 4) == 0) {
    bV2 = 1;
    i = 8;
  }
  if ((k = getVarint(p + i, n - i, &nLevel)) == 0) return 0;
  i += k;
  if ((k = getVarint(p + i, n - i, &nSegment)) == 0) return 0;
  i += k;
  if ((k = getVarint(p + i, n - i, pWrites)) == 0) return 0;
  i += k;
  for (iLvl = 0; iLvl < nLevel; iLvl++) {
    sqlite3_uint64 nSeg;
    if ((k = getVarint(p + i, n - i, &v)) == 0) return 0; /* nMerge */
    i += k;
    if ((k = getVarint(p + i, n - i, &nSeg)) == 0) return 0;
    i += k;
    for (iSeg = 0; iSeg < nSeg; iSeg++) {
      int nField = bV2 ? 8 : 3; /* segid, first and last page; v2: origins, tombstone pages and entries, entries */
      for (m = 0; m < nField; m++) {
        if ((k = getVarint(p + i, n - i, &v)) == 0) return 0;
        i += k;
        if (m == 4 && v > origin) origin = v; /* iOrigin2 */
      }
    }
  }
  *pOrigin = origin;
  return 1;
}

/*
** The index's content key into aKey: its averages record (row count and token totals), then the structure's write
** counter and newest origin. Every insert, delete or replacement of a row moves it; a merge, an optimize or a write
** to another table does not. -1 when it cannot be read.
*/
static int contentKey(sqlite3 *db, unsigned char *aKey) {
  sqlite3_stmt *pStmt = 0;
  int nKey = 0, ok = 1;
  if (sqlite3_prepare_v2(db, "SELECT id, block FROM main.memories_fts_data WHERE id IN (1, 10) ORDER BY id", -1, &pStmt,
                         0) != SQLITE_OK) {
    sqlite3_finalize(pStmt);
    return -1;
  }
  while (ok && sqlite3_step(pStmt) == SQLITE_ROW) {
    const unsigned char *p = (const unsigned char *)sqlite3_column_blob(pStmt, 1);
    int n = sqlite3_column_bytes(pStmt, 1);
    if (sqlite3_column_int64(pStmt, 0) == 1) {
      if (n + 16 > CONTENT_KEY_MAX) ok = 0;
      else {
        if (n > 0) memcpy(aKey, p, (size_t)n);
        nKey = n;
      }
    } else {
      sqlite3_uint64 w = 0, o = 0;
      if (!structureCounters(p, n, &w, &o)) ok = 0;
      else {
        memcpy(aKey + nKey, &w, 8);
        memcpy(aKey + nKey + 8, &o, 8);
        nKey += 16;
      }
    }
  }
  sqlite3_finalize(pStmt); /* at once: a statement left open would keep sqlite3_close() from closing the connection */
  return ok ? nKey : -1;
}

static int dataVersion(sqlite3 *db, sqlite3_int64 *pv) {
  sqlite3_stmt *pStmt = 0;
  int ok = 0;
  if (sqlite3_prepare_v2(db, "PRAGMA main.data_version", -1, &pStmt, 0) == SQLITE_OK && sqlite3_step(pStmt) == SQLITE_ROW) {
    *pv = sqlite3_column_int64(pStmt, 0);
    ok = 1;
  }
  sqlite3_finalize(pStmt);
  return ok;
}

/*
** Bring the cache up to the index as this connection now reads it (outside a transaction): kept when no other
** connection committed since it was last made consistent (`own`: or when this connection's own commit is all that
** changed, cairn_bm25_settle), kept when others committed without changing the contents, else every length forgotten.
** 0 when it cannot be used now.
*/
static SizeCache *sizeCacheSync(SizeCache *c, int own) {
  sqlite3_int64 dv;
  unsigned char aKey[CONTENT_KEY_MAX];
  int nKey;
  if (c == 0 || sqlite3_get_autocommit(c->db) == 0 || !dataVersion(c->db, &dv)) return 0;
  if (c->bValid && dv == c->iDataVersion && !own) return c;
  nKey = contentKey(c->db, aKey);
  if (nKey < 0) {
    c->bValid = 0;
    return 0;
  }
  if (!(c->bValid && dv == c->iDataVersion) && (!c->bValid || nKey != c->nKey || memcmp(aKey, c->aKey, (size_t)nKey) != 0)) {
    if (c->aSize) memset(c->aSize, 0, (size_t)c->nSize * sizeof(unsigned short));
    c->nReset++;
  }
  memcpy(c->aKey, aKey, (size_t)nKey);
  c->nKey = nKey;
  c->iDataVersion = dv;
  c->bValid = 1;
  return c;
}

/* The cache, valid for the index as this statement reads it, or 0 when it cannot be used now. */
static SizeCache *sizeCacheFor(SizeCache *c) { return sizeCacheSync(c, 0); }

/*
** cairn_bm25_settle(): after a commit of this connection's that wrote the index, the lengths take the content key as
** it left it (its rows were forgotten as it wrote them). Returns how many times every length has been forgotten so
** far on this connection (tests read it); NULL inside a transaction.
*/
static void cairnBm25Settle(sqlite3_context *pCtx, int nVal, sqlite3_value **apVal) {
  SizeCache *c = (SizeCache *)sqlite3_user_data(pCtx);
  (void)nVal;
  (void)apVal;
  if (sizeCacheSync(c, 1) == 0) {
    sqlite3_result_null(pCtx);
    return;
  }
  sqlite3_result_int64(pCtx, c->nReset);
}

/*
** cairn_fts_content_key(): the content key (contentKey), a blob; NULL when it cannot be read. The store keys the
** phrase counts it hands to cairn_bm25 on it (store/search-fts.ts).
*/
static void cairnFtsContentKey(sqlite3_context *pCtx, int nVal, sqlite3_value **apVal) {
  unsigned char aKey[CONTENT_KEY_MAX];
  int nKey = contentKey(sqlite3_context_db_handle(pCtx), aKey);
  (void)nVal;
  (void)apVal;
  if (nKey < 0) sqlite3_result_null(pCtx);
  else sqlite3_result_blob(pCtx, aKey, nKey, SQLITE_TRANSIENT);
}

/* Row `iRowid`'s length: from the cache when it holds it, else from FTS5 (and then kept). */
static int rowLength(const Fts5ExtensionApi *pApi, Fts5Context *pFts, SizeCache *c, int *pnTok) {
  sqlite3_int64 iRowid = pApi->xRowid(pFts);
  int rc;
  if (c != 0 && iRowid > 0 && iRowid <= SIZE_CACHE_MAX_ROWID) {
    if (iRowid >= c->nSize) {
      sqlite3_int64 n = c->nSize ? c->nSize : 65536;
      unsigned short *grown;
      while (n <= iRowid) n *= 2;
      if (n > SIZE_CACHE_MAX_ROWID + 1) n = SIZE_CACHE_MAX_ROWID + 1;
      grown = (unsigned short *)sqlite3_realloc64(c->aSize, (sqlite3_uint64)n * sizeof(unsigned short));
      if (grown != 0) {
        memset(grown + c->nSize, 0, (size_t)(n - c->nSize) * sizeof(unsigned short));
        c->aSize = grown;
        c->nSize = n;
      }
    }
    if (iRowid < c->nSize && c->aSize[iRowid] != 0) {
      *pnTok = c->aSize[iRowid] - 1;
      return SQLITE_OK;
    }
    rc = pApi->xColumnSize(pFts, -1, pnTok);
    if (rc == SQLITE_OK && iRowid < c->nSize && *pnTok >= 0 && *pnTok < 65535)
      c->aSize[iRowid] = (unsigned short)(*pnTok + 1);
    return rc;
  }
  return pApi->xColumnSize(pFts, -1, pnTok);
}

typedef struct Bm25Data {
  int nPhrase;
  int nWeight;
  double avgdl;
  double *aIDF;
  double *aFreq;
  double *aWeight;
  SizeCache *pSizes; /* 0: every length from FTS5 */
} Bm25Data;

static void cairnBm25(const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3_context *pCtx, int nVal,
                      sqlite3_value **apVal) {
  const double k1 = 1.2;
  const double b = 0.75;
  int rc = SQLITE_OK;
  double score = 0.0;
  int i;
  double D = 0.0;
  Bm25Data *p = (Bm25Data *)pApi->xGetAuxdata(pFts, 0);
  if (p == 0) {
    int nPhrase = pApi->xPhraseCount(pFts);
    int nWeight = nVal > 1 ? nVal - 1 : 0;
    sqlite3_int64 nRow = 0, nToken = 0;
    const unsigned char *blob;
    int nBlob;
    if (nVal < 1 || sqlite3_value_type(apVal[0]) != SQLITE_BLOB) {
      sqlite3_result_error(pCtx, "cairn_bm25: the first argument must be a blob of document counts", -1);
      return;
    }
    blob = (const unsigned char *)sqlite3_value_blob(apVal[0]);
    nBlob = sqlite3_value_bytes(apVal[0]);
    if (nBlob != nPhrase * (int)sizeof(double)) {
      sqlite3_result_error(pCtx, "cairn_bm25: one document count per phrase expected", -1);
      return;
    }
    p = (Bm25Data *)sqlite3_malloc64(sizeof(Bm25Data) + (sqlite3_int64)(2 * nPhrase + nWeight) * sizeof(double));
    if (p == 0) {
      sqlite3_result_error_nomem(pCtx);
      return;
    }
    memset(p, 0, sizeof(Bm25Data) + (size_t)(2 * nPhrase + nWeight) * sizeof(double));
    p->nPhrase = nPhrase;
    p->nWeight = nWeight;
    p->aIDF = (double *)&p[1];
    p->aFreq = &p->aIDF[nPhrase];
    p->aWeight = &p->aFreq[nPhrase];
    for (i = 0; i < nWeight; i++) p->aWeight[i] = sqlite3_value_double(apVal[i + 1]);
    rc = pApi->xRowCount(pFts, &nRow);
    if (rc == SQLITE_OK) rc = pApi->xColumnTotalSize(pFts, -1, &nToken);
    if (rc == SQLITE_OK) {
      p->avgdl = (double)nToken / (double)nRow;
      p->pSizes = sizeCacheFor((SizeCache *)pApi->xUserData(pFts));
      for (i = 0; i < nPhrase; i++) {
        double c;
        sqlite3_int64 nHit;
        memcpy(&c, blob + i * sizeof(double), sizeof(double));
        if (c < 0.0) {
          p->aIDF[i] = 0.0; /* a phrase matched but not weighed: it adds exactly 0.0 to every score */
          continue;
        }
        nHit = (sqlite3_int64)c;
        {
          double idf = log((nRow - nHit + 0.5) / (nHit + 0.5));
          if (idf <= 0.0) idf = 1e-6;
          p->aIDF[i] = idf;
        }
      }
      rc = pApi->xSetAuxdata(pFts, p, sqlite3_free);
    } else {
      sqlite3_free(p);
    }
    if (rc != SQLITE_OK) {
      sqlite3_result_error_code(pCtx, rc);
      return;
    }
  }
  memset(p->aFreq, 0, sizeof(double) * p->nPhrase);
  for (i = 0; i < p->nPhrase; i++) {
    Fts5PhraseIter iter;
    int ic, io;
    if (p->aIDF[i] == 0.0) continue; /* not weighed: its instances are never read */
    rc = pApi->xPhraseFirst(pFts, i, &iter, &ic, &io);
    if (rc != SQLITE_OK) break;
    for (; ic >= 0; pApi->xPhraseNext(pFts, &iter, &ic, &io))
      p->aFreq[i] += (p->nWeight > ic) ? p->aWeight[ic] : 1.0;
  }
  if (rc == SQLITE_OK) {
    int nTok;
    rc = rowLength(pApi, pFts, p->pSizes, &nTok);
    D = (double)nTok;
  }
  if (rc == SQLITE_OK) {
    for (i = 0; i < p->nPhrase; i++) {
      score += p->aIDF[i] * ((p->aFreq[i] * (k1 + 1.0)) / (p->aFreq[i] + k1 * (1 - b + b * D / p->avgdl)));
    }
    sqlite3_result_double(pCtx, -1.0 * score);
  } else {
    sqlite3_result_error_code(pCtx, rc);
  }
}

static fts5_api *fts5Api(sqlite3 *db) {
  fts5_api *pRet = 0;
  sqlite3_stmt *pStmt = 0;
  if (sqlite3_prepare(db, "SELECT fts5(?1)", -1, &pStmt, 0) == SQLITE_OK) {
    sqlite3_bind_pointer(pStmt, 1, (void *)&pRet, "fts5_api_ptr", 0);
    sqlite3_step(pStmt);
  }
  sqlite3_finalize(pStmt);
  return pRet;
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int cairnRegisterMallocTrim(sqlite3 *db); /* malloc_trim.c */

int sqlite3_cairnbm25_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  fts5_api *fts;
  SizeCache *cache;
  int rc;
  SQLITE_EXTENSION_INIT2(pApi);
  fts = fts5Api(db);
  if (fts == 0 || fts->iVersion < 2) {
    *pzErrMsg = sqlite3_mprintf("cairn_bm25: FTS5 is not available");
    return SQLITE_ERROR;
  }
  cache = (SizeCache *)sqlite3_malloc64(sizeof(SizeCache));
  if (cache == 0) return SQLITE_NOMEM;
  memset(cache, 0, sizeof(SizeCache));
  cache->db = db;
  rc = fts->xCreateFunction(fts, "cairn_bm25", (void *)cache, cairnBm25, sizeCacheFree);
  if (rc != SQLITE_OK) {
    sqlite3_free(cache);
    return rc;
  }
  /* From here the cache lives until the connection closes (FTS5 frees it with the function: sizeCacheFree). */
  sqlite3_update_hook(db, sizeHook, cache);
  rc = sqlite3_create_function(db, "cairn_bm25_settle", 0, SQLITE_UTF8, cache, cairnBm25Settle, 0, 0);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "cairn_fts_content_key", 0, SQLITE_UTF8, 0, cairnFtsContentKey, 0, 0);
  if (rc != SQLITE_OK) return rc;
  return cairnRegisterMallocTrim(db);
}
