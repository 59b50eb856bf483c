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
** lookup per row, about 60% of scoring a row at 1M memories), remembered per connection between statements while
** the index is unchanged: while the index's structure record (memories_fts_data, id 10, which every committed
** insert and delete rewrites) and its row count are the ones the lengths were read under. Never used or filled
** inside a transaction (its uncommitted rows may still roll back). Lengths are kept as length + 1 in 16 bits, for
** rowids 1 .. SIZE_CACHE_MAX_ROWID; other rows are looked up as before. cairn_bm25 ranks memories_fts only.
*/
#define SIZE_CACHE_MAX_ROWID (1 << 24)
typedef struct SizeCache {
  sqlite3 *db;
  unsigned char *aKey; /* the structure record the lengths were read under */
  int nKey;
  sqlite3_int64 nRowKey;
  unsigned short *aSize; /* length + 1 by rowid, 0: not read yet */
  sqlite3_int64 nSize;
} SizeCache;

static void sizeCacheFree(void *v) {
  SizeCache *c = (SizeCache *)v;
  if (c == 0) return;
  sqlite3_free(c->aKey);
  sqlite3_free(c->aSize);
  sqlite3_free(c);
}

/*
** The cache, valid for the index as this statement reads it, or 0 when it cannot be used now. The statement that
** reads the structure record is finalized at once: one left open would keep sqlite3_close() from closing the
** connection.
*/
static SizeCache *sizeCacheFor(SizeCache *c, sqlite3_int64 nRow) {
  const unsigned char *key;
  int nKey;
  SizeCache *out = 0;
  sqlite3_stmt *pStructure = 0;
  if (c == 0 || sqlite3_get_autocommit(c->db) == 0) return 0;
  if (sqlite3_prepare_v2(c->db, "SELECT block FROM main.memories_fts_data WHERE id = 10", -1, &pStructure, 0) !=
      SQLITE_OK) {
    sqlite3_finalize(pStructure);
    return 0;
  }
  if (sqlite3_step(pStructure) == SQLITE_ROW) {
    key = (const unsigned char *)sqlite3_column_blob(pStructure, 0);
    nKey = sqlite3_column_bytes(pStructure, 0);
    if (nKey != c->nKey || nRow != c->nRowKey || (nKey > 0 && memcmp(key, c->aKey, (size_t)nKey) != 0)) {
      unsigned char *copy = (unsigned char *)sqlite3_malloc64(nKey > 0 ? (sqlite3_uint64)nKey : 1);
      if (copy != 0) {
        if (nKey > 0) memcpy(copy, key, (size_t)nKey);
        sqlite3_free(c->aKey);
        c->aKey = copy;
        c->nKey = nKey;
        c->nRowKey = nRow;
        if (c->aSize) memset(c->aSize, 0, (size_t)c->nSize * sizeof(unsigned short));
        out = c;
      }
    } else {
      out = c;
    }
  }
  sqlite3_finalize(pStructure);
  return out;
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
      p->pSizes = sizeCacheFor((SizeCache *)pApi->xUserData(pFts), nRow);
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
    sizeCacheFree(cache);
    return rc;
  }
  return cairnRegisterMallocTrim(db);
}
