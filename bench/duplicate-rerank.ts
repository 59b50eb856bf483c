/**
 * How many of a duplicate check's candidates a compact index (above COMPACT_ABOVE vectors) ranks again from disk
 * (vector-tuning.ts DUP_RERANK), on a store kept by `bench/million.ts --keep` (issue 27: at 1M, catching the vector
 * index up after a batched import spent most of its event loop re-ranking duplicate checks). For each pool size:
 * the event loop's CPU per check for that re-ranking (the int8 vectors read in one statement per batch), and how many
 * of the possible duplicates the check reports with the pool of today (64) it reports too, and the same against
 * exact scores of the whole namespace (every visible memory's stored int8 vector), on the first `--exact` checks.
 *
 *   node --import tsx bench/duplicate-rerank.ts --db path/to/cairn.db [--checks 2000] [--pools 64,32,16,8] [--exact 300]
 *     [--json out.json]
 *
 * Also reported: how far a hit's int8 score rises above its 4-bit one (`q4Rise`, every hit of DUP_RERANK ranked again).
 *
 * Checks are memories spread over the store (a namespace checked in proportion to its size, as an import checks
 * it), in batches of INDEX_BATCH as the indexer runs them, each with its stored vector (int8, scaled back) and left
 * out of its own check. Opens the store as it is: no daemon may be using it.
 */
import * as fs from 'node:fs';
import { loadModel } from '../daemon/src/index/attach';
import { Indexer } from '../daemon/src/index/indexer';
import { DUPLICATE_LIMIT, DUPLICATE_THRESHOLD, INDEX_BATCH } from '../daemon/src/index/indexer-tuning';
import { stmt } from '../daemon/src/store/db';
import { Store } from '../daemon/src/store/store';
import { duplicateHits, int8Cosine, normalized, runDuplicateScan } from '../daemon/src/store/vector-scan';
import { arg, cpuNow } from './stats';

async function main() {
  const store = new Store(arg('db', ''), {});
  const checks = Number(arg('checks', '2000'));
  const pools = arg('pools', '64,32,16,8').split(',').map(Number);
  const exactN = Number(arg('exact', '300'));
  const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
  const indexer = new Indexer(store, () => {});
  await indexer.use(embedder);
  const model = indexer.model!;
  store.vectors.load(model);
  const db = store.db;
  const threshold = DUPLICATE_THRESHOLD.builtin;
  const total = (stmt(db, `SELECT max(rowid) AS n FROM ${model.table}`).get() as { n: number }).n;
  // The checks: memories spread evenly over the rowids, with a stored vector.
  const rows: { rowid: number; ns: number; v: Float32Array }[] = [];
  const get = stmt(
    db,
    `SELECT m.rowid, n.rowid AS ns, v.q FROM memories m JOIN namespaces n ON n.id = m.ns_id JOIN ${model.table} v ON v.rowid = m.rowid
     WHERE m.rowid >= ? AND m.deleted_at IS NULL ORDER BY m.rowid LIMIT 1`,
  );
  for (let i = 0; i < checks; i++) {
    const r = get.get(Math.floor(((i + 0.5) * total) / checks)) as { rowid: number; ns: number; q: Buffer } | undefined;
    if (r)
      rows.push({
        rowid: r.rowid,
        ns: r.ns,
        v: Float32Array.from(new Int8Array(r.q.buffer, r.q.byteOffset, r.q.byteLength), (x) => x / 127),
      });
  }
  const now = Date.now();
  const batches: (typeof rows)[] = [];
  for (let i = 0; i < rows.length; i += INDEX_BATCH) batches.push(rows.slice(i, i + INDEX_BATCH));
  const prepare = (b: typeof rows) =>
    store.vectors.prepareDuplicateScan(
      model,
      b.map((r) => ({ vector: r.v, nsRowid: r.ns, exclude: r.rowid })),
      DUPLICATE_LIMIT,
      now,
    );
  const reported = (hits: { rowid: number; score: number }[]) => new Set(hits.filter((h) => h.score >= threshold).map((h) => h.rowid));
  const results = new Map<number, Set<number>[]>();
  const out: Record<string, unknown> = { store: total, checks: rows.length, batch: INDEX_BATCH, limit: DUPLICATE_LIMIT, threshold };
  const perPool: Record<string, unknown>[] = [];
  for (const pool of pools) {
    let rerankMs = 0;
    let scanMs = 0;
    const got: Set<number>[] = [];
    for (let rep = 0; rep < 2; rep++) {
      got.length = 0;
      rerankMs = 0;
      scanMs = 0;
      for (const b of batches) {
        const scan = prepare(b);
        scan.rerank = Math.max(pool, DUPLICATE_LIMIT);
        let t = cpuNow();
        const result = runDuplicateScan(scan);
        scanMs += cpuNow() - t;
        t = cpuNow();
        const hits = store.vectors.duplicateResults(
          model,
          scan,
          b.map((r) => r.v),
          result,
        );
        rerankMs += cpuNow() - t;
        for (const h of hits) got.push(reported(h));
      }
    }
    results.set(pool, got.slice());
    perPool.push({
      pool,
      rerankMsPerCheck: Math.round((rerankMs / rows.length) * 1000) / 1000,
      scanMsPerCheck: Math.round((scanMs / rows.length) * 1000) / 1000,
      reportedPerCheck: Math.round((got.reduce((s, x) => s + x.size, 0) / rows.length) * 100) / 100,
    });
  }
  // Agreement with the pool of today (the first one given) and with exact scores of the namespace.
  const base = results.get(pools[0])!;
  const exact: Set<number>[] = [];
  const nsVectors = new Map<number, { rowid: number; q: Int8Array }[]>();
  const nsRows = stmt(
    db,
    `SELECT v.rowid, v.q FROM ${model.table} v JOIN memories m ON m.rowid = v.rowid JOIN namespaces n ON n.id = m.ns_id
     WHERE n.rowid = ? AND m.deleted_at IS NULL AND m.status NOT IN ('superseded', 'proposed')`,
  );
  for (const r of rows.slice(0, exactN)) {
    let list = nsVectors.get(r.ns);
    if (!list) {
      list = (nsRows.all(r.ns) as { rowid: number; q: Buffer }[]).map((x) => ({
        rowid: x.rowid,
        q: new Int8Array(x.q.buffer, x.q.byteOffset, x.q.byteLength),
      }));
      nsVectors.set(r.ns, list);
    }
    const v = normalized(r.v);
    const scored = list.filter((x) => x.rowid !== r.rowid).map((x) => ({ rowid: x.rowid, score: int8Cosine(x.q, v) }));
    scored.sort((a, b) => b.score - a.score || a.rowid - b.rowid);
    exact.push(reported(scored.slice(0, DUPLICATE_LIMIT)));
  }
  const share = (a: Set<number>[], b: Set<number>[], n = b.length) => {
    let want = 0;
    let found = 0;
    for (let i = 0; i < n; i++) {
      want += b[i].size;
      for (const x of b[i]) if (a[i].has(x)) found++;
    }
    return want ? Math.round((found / want) * 1000) / 1000 : null;
  };
  for (const p of perPool) {
    const got = results.get(p.pool as number)!;
    p.foundOfToday = share(got, base);
    p.foundOfExact = share(got, exact, exact.length);
  }
  out.pools = perPool;
  out.exactChecks = exact.length;
  // How far the int8 score of a hit rises above its 4-bit one (the scan's hits at DUP_RERANK, every one ranked again,
  // all of them and those within 0.1 of the threshold): whether a hit scored far below the threshold by its 4-bit
  // vector could be left unread. `reportedWithoutCut`: possible duplicates per check when every hit is ranked again.
  const rises: number[] = [];
  const nearRises: number[] = [];
  const noCut: Set<number>[] = [];
  for (const b of batches) {
    const scan = prepare(b);
    const result = runDuplicateScan(scan);
    const hits = duplicateHits(result);
    const again = store.vectors.rerankMany(
      model,
      hits.map((h, i) => ({ query: b[i].v, hits: h })),
      Number.MAX_SAFE_INTEGER,
    );
    hits.forEach((h, i) => {
      const int8 = new Map(again[i].map((x) => [x.rowid, x.score]));
      for (const x of h) {
        const rise = (int8.get(x.rowid) ?? x.score) - x.score;
        rises.push(rise);
        if ((int8.get(x.rowid) ?? 0) >= threshold - 0.1) nearRises.push(rise);
      }
      noCut.push(reported(again[i].slice(0, DUPLICATE_LIMIT)));
    });
  }
  const q = (xs: number[], p: number) => {
    const sorted = xs.slice().sort((a, b) => a - b);
    return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] * 10000) / 10000;
  };
  out.q4Rise = { hits: rises.length, p50: q(rises, 0.5), p99: q(rises, 0.99), p999: q(rises, 0.999), max: q(rises, 1) };
  out.q4RiseNearThreshold = {
    hits: nearRises.length,
    p99: nearRises.length ? q(nearRises, 0.99) : null,
    max: nearRises.length ? q(nearRises, 1) : null,
  };
  out.reportedWithoutCut = Math.round((noCut.reduce((n, x) => n + x.size, 0) / rows.length) * 100) / 100;
  console.log(JSON.stringify(out, null, 1));
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
  await indexer.stop();
  store.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
