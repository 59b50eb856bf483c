/**
 * Vector storage, one pair of tables per embedding model (model id and
 * dimension recorded in vec_models), so switching models never mixes spaces:
 *
 * - `vec_N`: a sqlite-vec vec0 table partitioned by namespace (namespaces.rowid)
 *   with the visibility facts as metadata columns (status, deleted, expires,
 *   valid_from, valid_to). KNN runs with the scope's namespaces and the
 *   visibility rules as constraints of the KNN itself, so the top-k is taken
 *   among in-scope, visible memories only.
 * - `vecb_N`: the same vectors as plain blobs plus the hash of the embedded
 *   text. Queries with a filter tree compute exact cosine distance over the
 *   rows that the SQL WHERE (scope + visibility + filter) admits, then take
 *   the top-k — again never fetching global neighbours first.
 *
 * The store keeps the metadata columns in step inside every write transaction,
 * so a deleted or superseded memory leaves the vector arm at once, even before
 * the indexer runs.
 */
import { CairnError } from '../protocol/errors';
import type { Filter, Include, Scope } from '../protocol/types';
import { stmt, type DB } from './db';
import { compileFilter } from './filter';
import { and, visibility } from './rows';
import { scopePredicate } from './scope';
import type { ArmHit } from './search-fts';

const MAX_TIME = Number.MAX_SAFE_INTEGER;
const MIN_TIME = -Number.MAX_SAFE_INTEGER;
export const VEC_CHUNK_SIZE = 256;
/** Most namespaces a vec0 KNN names as partitions; a wider scope uses the exact-distance query. */
export const VEC_MAX_PARTITIONS = 512;

export interface VecModel {
  model: string;
  dimension: number;
  table: string;
}

interface MetaRow {
  rowid: number;
  ns_rowid: number;
  status: string;
  deleted_at: number | null;
  expires_at: number | null;
  valid_from: number | null;
  valid_to: number | null;
}

export class VectorTables {
  constructor(
    private readonly db: DB,
    readonly available: boolean,
  ) {}

  models(): VecModel[] {
    if (!this.available) return [];
    return (stmt(this.db, 'SELECT model, dimension, table_name AS "table" FROM vec_models ORDER BY created_at').all() as VecModel[]);
  }

  model(model: string): VecModel | undefined {
    return this.models().find((m) => m.model === model);
  }

  /** Create (or find) the tables of a model. */
  ensure(model: string, dimension: number): VecModel {
    if (!this.available) throw new CairnError('InvalidState', 'sqlite-vec is not available in this build');
    const found = this.model(model);
    if (found) {
      if (found.dimension !== dimension) throw new CairnError('InvalidState', `model ${model} was stored with dimension ${found.dimension}, now reports ${dimension}`);
      return found;
    }
    if (!Number.isInteger(dimension) || dimension < 1 || dimension > 8192) throw new CairnError('InvalidParams', `bad embedding dimension ${dimension}`);
    const n = ((stmt(this.db, 'SELECT coalesce(max(CAST(substr(table_name, 5) AS INTEGER)), 0) AS n FROM vec_models').get() as { n: number }).n ?? 0) + 1;
    const table = `vec_${n}`;
    this.db.exec(`CREATE VIRTUAL TABLE ${table} USING vec0(
      ns integer partition key, embedding float[${dimension}] distance_metric=cosine,
      status text, deleted integer, expires integer, valid_from integer, valid_to integer, chunk_size=${VEC_CHUNK_SIZE})`);
    this.db.exec(`CREATE TABLE vecb_${n} (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL, text_hash TEXT NOT NULL)`);
    stmt(this.db, 'INSERT INTO vec_models(model, dimension, table_name, created_at) VALUES (?, ?, ?, ?)').run(model, dimension, table, Date.now());
    return { model, dimension, table };
  }

  drop(model: string): void {
    const m = this.model(model);
    if (!m) return;
    this.db.exec(`DROP TABLE IF EXISTS ${m.table}; DROP TABLE IF EXISTS vecb_${m.table.slice(4)}`);
    stmt(this.db, 'DELETE FROM vec_models WHERE model = ?').run(model);
    stmt(this.db, 'DELETE FROM index_state WHERE name = ?').run(`vec:${model}`);
  }

  private meta(rowid: number): MetaRow | undefined {
    return stmt(this.db, 'SELECT m.rowid, n.rowid AS ns_rowid, m.status, m.deleted_at, m.expires_at, m.valid_from, m.valid_to FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid = ?')
      .get(rowid) as MetaRow | undefined;
  }

  private metaValues(r: MetaRow): [string, bigint, bigint, bigint, bigint] {
    return [r.status, r.deleted_at === null ? 0n : 1n, BigInt(r.expires_at ?? MAX_TIME), BigInt(r.valid_from ?? MIN_TIME), BigInt(r.valid_to ?? MAX_TIME)];
  }

  /** Called inside every memory write: keep the vec0 metadata equal to the memory's state. */
  syncMeta(rowid: number): void {
    if (!this.available) return;
    const models = this.models();
    if (models.length === 0) return;
    const r = this.meta(rowid);
    if (!r) return;
    const vals = this.metaValues(r);
    for (const m of models) {
      stmt(this.db, `UPDATE ${m.table} SET status = ?, deleted = ?, expires = ?, valid_from = ?, valid_to = ? WHERE rowid = ?`).run(...vals, BigInt(rowid));
    }
  }

  deleteRow(rowid: number): void {
    for (const m of this.models()) {
      stmt(this.db, `DELETE FROM ${m.table} WHERE rowid = ?`).run(BigInt(rowid));
      stmt(this.db, `DELETE FROM vecb_${m.table.slice(4)} WHERE rowid = ?`).run(rowid);
    }
  }

  /** Hash of the text a memory's vector was computed from (to skip re-embedding unchanged text). */
  textHash(model: VecModel, rowid: number): string | undefined {
    const r = stmt(this.db, `SELECT text_hash FROM vecb_${model.table.slice(4)} WHERE rowid = ?`).get(rowid) as { text_hash: string } | undefined;
    return r?.text_hash;
  }

  put(model: VecModel, rowid: number, vector: Float32Array, textHash: string): void {
    if (vector.length !== model.dimension) throw new CairnError('Internal', `vector of dimension ${vector.length} for a ${model.dimension}-d model`);
    for (let i = 0; i < vector.length; i++) if (!Number.isFinite(vector[i])) throw new CairnError('Internal', 'refusing to store a vector with NaN or infinite components');
    const r = this.meta(rowid);
    if (!r) return; // purged meanwhile
    const blob = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
    const id = BigInt(rowid);
    stmt(this.db, `DELETE FROM ${model.table} WHERE rowid = ?`).run(id);
    stmt(this.db, `INSERT INTO ${model.table}(rowid, ns, embedding, status, deleted, expires, valid_from, valid_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run(id, BigInt(r.ns_rowid), blob, ...this.metaValues(r));
    stmt(this.db, `INSERT INTO vecb_${model.table.slice(4)}(rowid, embedding, text_hash) VALUES (?, ?, ?) ON CONFLICT(rowid) DO UPDATE SET embedding = excluded.embedding, text_hash = excluded.text_hash`).run(rowid, blob, textHash);
  }

  count(model: VecModel): number {
    return (stmt(this.db, `SELECT count(*) AS c FROM vecb_${model.table.slice(4)}`).get() as { c: number }).c;
  }

  /**
   * KNN inside the scope. Without a filter: vec0 KNN with partition and
   * metadata constraints. With a filter: exact distances over the admitted rows.
   */
  knn(model: VecModel, query: Float32Array, q: { scope?: Scope; filter?: Filter; include?: Include; now: number; limit: number }): ArmHit[] {
    const blob = Buffer.from(query.buffer, query.byteOffset, query.byteLength);
    const scope = scopePredicate(q.scope, 'path');
    // The whole store needs no partition constraint unless a deleted namespace still holds (unpurged) memories.
    const wholeStoreClean = !scope && !stmt(this.db, 'SELECT 1 FROM namespaces n WHERE n.deleted_at IS NOT NULL AND EXISTS (SELECT 1 FROM memories m WHERE m.ns_id = n.id) LIMIT 1').get();
    const ns = wholeStoreClean ? [] : (stmt(this.db, `SELECT rowid FROM namespaces WHERE deleted_at IS NULL AND ${scope ? scope.sql : '1'}`).all(...(scope ? scope.params : [])) as { rowid: number }[]);
    if (!wholeStoreClean && ns.length === 0) return [];
    // A filter, or a scope of more namespaces than one KNN may name as partitions (one SQL variable each),
    // takes the exact-distance path: the scope is then SQL over the namespace row, with no variable per namespace.
    if (q.filter || ns.length > VEC_MAX_PARTITIONS) {
      const where = and(visibility(q.include, q.now), scopePredicate(q.scope), compileFilter(q.filter));
      const rows = stmt(this.db, 
          `SELECT m.rowid AS rowid, vec_distance_cosine(b.embedding, ?) AS d FROM memories m JOIN namespaces n ON n.id = m.ns_id
           JOIN vecb_${model.table.slice(4)} b ON b.rowid = m.rowid WHERE ${where.sql} ORDER BY d ASC, m.rowid ASC LIMIT ?`,
        )
        .all(blob, ...where.params, q.limit) as { rowid: number; d: number }[];
      return rows.map((r) => ({ rowid: r.rowid, score: 1 - r.d }));
    }
    const cons: string[] = [];
    const params: unknown[] = [];
    if (!wholeStoreClean) {
      cons.push(`ns IN (${ns.map(() => '?').join(',')})`);
      params.push(...ns.map((r) => BigInt(r.rowid)));
    }
    const inc = q.include ?? {};
    if (!inc.deleted) cons.push('deleted = 0');
    const statuses = ['active', ...(inc.proposed ? ['proposed'] : []), ...(inc.superseded ? ['superseded'] : [])];
    if (statuses.length < 3) {
      cons.push(`status IN (${statuses.map(() => '?').join(',')})`);
      params.push(...statuses);
    }
    const now = BigInt(q.now);
    if (!inc.expired) {
      cons.push('expires > ?');
      params.push(now);
    }
    if (!inc.outOfValidity) {
      cons.push('valid_from <= ?', 'valid_to > ?');
      params.push(now, now);
    }
    // vec0 applies k per partition (and allows no outer LIMIT): the top k of their union is the true top k.
    const rows = stmt(this.db, `SELECT rowid, distance FROM ${model.table} WHERE embedding MATCH ? AND k = ?${cons.map((c) => ` AND ${c}`).join('')}`)
      .all(blob, q.limit, ...params) as { rowid: number; distance: number }[];
    rows.sort((a, b) => a.distance - b.distance || Number(a.rowid) - Number(b.rowid));
    return rows.slice(0, q.limit).map((r) => ({ rowid: Number(r.rowid), score: 1 - r.distance }));
  }
}
