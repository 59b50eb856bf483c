/**
 * Ranking a compact index's hits again by the int8 vectors stored on disk (VectorTables.rerank): the 4-bit vectors
 * in memory choose the candidates, the stored ones order them.
 */
import { stmt, type DB } from './db';
import type { ArmHit } from './search-fts';
import type { VecModel } from './vector-index';
import { int8Cosine, normalized } from './vector-scan';

/**
 * The best `limit` of each scan's hits by cosine to its own query against the int8 vectors of `model`, read in one
 * statement (a memory purged meanwhile has none and is left out).
 */
export function rerankStored(db: DB, model: VecModel, scans: { query: Float32Array; hits: ArmHit[] }[], limit: number): ArmHit[][] {
  const ids = new Set<number>();
  for (const x of scans) for (const h of x.hits) ids.add(h.rowid);
  const stored = new Map<number, Int8Array>();
  if (ids.size)
    for (const r of stmt(db, `SELECT rowid, q FROM ${model.table} WHERE rowid IN (SELECT value FROM json_each(?))`).all(
      JSON.stringify([...ids]),
    ) as { rowid: number; q: Buffer }[])
      stored.set(r.rowid, new Int8Array(r.q.buffer, r.q.byteOffset, r.q.byteLength));
  return scans.map(({ query, hits }) => {
    const v = normalized(query);
    const out: ArmHit[] = [];
    for (const h of hits) {
      const q = stored.get(h.rowid);
      if (q && q.length === v.length) out.push({ rowid: h.rowid, score: int8Cosine(q, v) });
    }
    return out.sort((x, y) => y.score - x.score || x.rowid - y.rowid).slice(0, limit);
  });
}
