/*
** cairn_bm25(memories_fts, counts, w0, w1, ...): FTS5's bm25(), with each phrase's document count handed in.
**
** FTS5's own bm25() counts, in every statement, the rows that hold each phrase of the query (a scan of every
** phrase's whole doclist, namespace tokens included): at 100k memories that was up to 40% of a query whose words
** are all common. Cairn knows those counts already (store/search-fts.ts caches them until the index changes) and
** hands them in as `counts`, a blob of one native-endian double per phrase, in the order the phrases appear in the
** MATCH expression. Everything else is bm25()'s arithmetic in the same order, so given the counts bm25() would take,
** the scores are the same doubles (test/unit/fts-rank-ext.test.ts compares them). Built by daemon/native/build.mjs
** and loaded by store/db.ts; without it, Cairn uses bm25() itself. The arithmetic follows SQLite's fts5_aux.c (public
** domain).
*/
#include <math.h>
#include <string.h>
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include "fts5.h"

typedef struct Bm25Data {
  int nPhrase;
  int nWeight;
  double avgdl;
  double *aIDF;
  double *aFreq;
  double *aWeight;
} Bm25Data;

static void cairnBm25(const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3_context *pCtx, int nVal,
                      sqlite3_value **apVal) {
  const double k1 = 1.2;
  const double b = 0.75;
  int rc = SQLITE_OK;
  double score = 0.0;
  int i;
  int nInst = 0;
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
      for (i = 0; i < nPhrase; i++) {
        double c;
        sqlite3_int64 nHit;
        memcpy(&c, blob + i * sizeof(double), sizeof(double));
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
  rc = pApi->xInstCount(pFts, &nInst);
  for (i = 0; rc == SQLITE_OK && i < nInst; i++) {
    int ip, ic, io;
    rc = pApi->xInst(pFts, i, &ip, &ic, &io);
    if (rc == SQLITE_OK) p->aFreq[ip] += (p->nWeight > ic) ? p->aWeight[ic] : 1.0;
  }
  if (rc == SQLITE_OK) {
    int nTok;
    rc = pApi->xColumnSize(pFts, -1, &nTok);
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
int sqlite3_cairnbm25_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  fts5_api *fts;
  SQLITE_EXTENSION_INIT2(pApi);
  fts = fts5Api(db);
  if (fts == 0 || fts->iVersion < 2) {
    *pzErrMsg = sqlite3_mprintf("cairn_bm25: FTS5 is not available");
    return SQLITE_ERROR;
  }
  return fts->xCreateFunction(fts, "cairn_bm25", 0, cairnBm25, 0);
}
