/**
 * Reading a model's stored vectors into an index in memory (VectorTables.load and loadInSlices): in rowid order, a
 * page at a time, each vector with its memory's scope and visibility facts.
 */
import type { DB } from './db';
import type { MetaRow, VectorIndex, VecModel } from './vector-index';

/** A stored vector with its memory's facts, as a raw row: rowid, q, sig, namespace rowid, then MetaRow's facts. */
type LoadRow = [number, Buffer, Buffer, number, string, number | null, number | null, number | null, number | null];

/**
 * A reader of `model`'s vectors into `ix`: each call reads up to `n` vectors after the last one read and returns
 * how many it read (fewer than `n`: the end). A vector written meanwhile with a rowid above the cursor is read by a
 * later call; below it, the writer put it into the index already.
 */
export function vectorPages(db: DB, model: VecModel, ix: VectorIndex): (n: number) => number {
  // Its own statement (raw rows: arrays, not objects), not the shared cache's.
  const page = db
    .prepare(
      `SELECT v.rowid, v.q, v.sig, nn.rowid, m.status, m.deleted_at, m.expires_at, m.valid_from, m.valid_to
        FROM ${model.table} v JOIN memories m ON m.rowid = v.rowid JOIN namespaces nn ON nn.id = m.ns_id
        WHERE v.rowid > ? ORDER BY v.rowid LIMIT ?`,
    )
    .raw(true);
  let after = 0;
  const meta: MetaRow = { rowid: 0, ns: 0, status: '', deleted_at: null, expires_at: null, valid_from: null, valid_to: null };
  return (n) => {
    const rows = page.all(after, n) as LoadRow[];
    for (const r of rows) {
      meta.rowid = r[0];
      meta.ns = r[3];
      meta.status = r[4];
      meta.deleted_at = r[5];
      meta.expires_at = r[6];
      meta.valid_from = r[7];
      meta.valid_to = r[8];
      ix.putStored(meta, r[1], r[2]);
    }
    if (rows.length > 0) after = rows[rows.length - 1][0];
    return rows.length;
  };
}
