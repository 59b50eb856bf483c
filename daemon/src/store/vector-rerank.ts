/**
 * Ranking a compact index's hits again by the int8 vectors stored on disk (VectorTables.rerank): the 4-bit vectors
 * in memory choose the candidates, the stored ones order them. On the event loop through the store's connection, or
 * in the embedding worker through a read-only connection of its own (StoredVectorReader), right after the worker's
 * scan, so a search's reads of ~400 stored vectors (~2 ms at a million) run beside its full-text arm instead of after it.
 */
import * as fs from 'node:fs';
import type Database from 'better-sqlite3';
import type { ArmHit } from './search-fts';
import { int8Cosine, normalized } from './vector-scan';
import { STORED_VECTOR_CACHE } from './vector-tuning';

/** Where a model's int8 vectors are stored: the store's file and the model's table (vq_N). */
export interface StoredAt {
  file: string;
  table: string;
  /** The index's VectorIndex.vectorEpoch: vectors read may be kept while it holds (StoredVectorReader). */
  epoch?: Int32Array;
}

/**
 * Stored int8 vectors by rowid, the least recently used dropped past `capacity`; kept for one `key` (the table and
 * the index's vector epoch), emptied when it changes; StoredVectorReader empties it when it opens another file.
 */
export class StoredVectorCache {
  private vectors = new Map<number, Int8Array>();
  private key = '';
  constructor(readonly capacity = STORED_VECTOR_CACHE) {}

  /** Use the cache for `key`: empty it first if it held another's. */
  keyed(key: string): this {
    if (key !== this.key) {
      this.vectors.clear();
      this.key = key;
    }
    return this;
  }

  get(rowid: number): Int8Array | undefined {
    const v = this.vectors.get(rowid);
    if (v) {
      this.vectors.delete(rowid); // most recently used last
      this.vectors.set(rowid, v);
    }
    return v;
  }

  set(rowid: number, v: Int8Array): void {
    this.vectors.delete(rowid);
    this.vectors.set(rowid, v);
    if (this.vectors.size > this.capacity) this.vectors.delete(this.vectors.keys().next().value!);
  }

  get size(): number {
    return this.vectors.size;
  }

  clear(): void {
    this.vectors.clear();
    this.key = '';
  }
}

type Scans = { query: Float32Array; hits: ArmHit[] }[];
type Statement = { all(ids: string): unknown[] };

/** The statement that reads the stored vectors of a JSON list of rowids. */
export const storedVectorsSql = (table: string): string => `SELECT rowid, q FROM ${table} WHERE rowid IN (SELECT value FROM json_each(?))`;

/**
 * The best `limit` of each scan's hits by cosine to its own query (normalized here unless `unit`) against the int8
 * vectors `read` by storedVectorsSql (every hit's in one statement; a memory purged meanwhile has none and is left out).
 * With `cache`, the vectors it holds are not read again and those read are kept in it.
 */
export function rerankStored(read: Statement, scans: Scans, limit: number, unit = false, cache?: StoredVectorCache): ArmHit[][] {
  const stored = new Map<number, Int8Array>();
  const ids = new Set<number>();
  for (const x of scans)
    for (const h of x.hits) {
      const kept = cache?.get(h.rowid);
      if (kept) stored.set(h.rowid, kept);
      else ids.add(h.rowid);
    }
  if (ids.size)
    for (const r of read.all(JSON.stringify([...ids])) as { rowid: number; q: Buffer }[]) {
      const v = new Int8Array(r.q.buffer, r.q.byteOffset, r.q.byteLength);
      stored.set(r.rowid, v);
      cache?.set(r.rowid, v.slice()); // its own bytes: the row's buffer is not held
    }
  return scans.map(({ query, hits }) => {
    const v = unit ? query : normalized(query); // `unit`: the queries are normalized already (a DuplicateScan's)
    const out: ArmHit[] = [];
    for (const h of hits) {
      const q = stored.get(h.rowid);
      if (q && q.length === v.length) out.push({ rowid: h.rowid, score: int8Cosine(q, v) });
    }
    return out.sort((x, y) => y.score - x.score || x.rowid - y.rowid).slice(0, limit);
  });
}

/**
 * rerankStored in the embedding worker: a read-only connection to the store's file, opened on first use and again
 * when the file at that path is another one (a restore put a new file there). It reads committed rows, as the event
 * loop's connection does between its transactions. null when the vectors cannot be read (no such file or table: a
 * model switch dropped it): the event loop then ranks the hits itself, as without the worker.
 */
export class StoredVectorReader {
  private db: Database.Database | null = null;
  private at: { file: string; ino: number } | null = null;
  private statements = new Map<string, Statement>();
  private closed = false;
  /** Vectors read, kept while the file, the table and the index's vector epoch stay the same (StoredAt.epoch). */
  readonly cache = new StoredVectorCache();

  rerank(at: StoredAt, scans: Scans, limit: number, unit = false): ArmHit[][] | null {
    if (this.closed) return null; // the worker is closing: a request still running does not open it again
    try {
      const ino = fs.statSync(at.file).ino;
      if (!this.db || this.at?.file !== at.file || this.at.ino !== ino) {
        this.release();
        // Loaded on first use: a worker whose driver cannot load still embeds (the event loop ranks the hits again).
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const Driver = require('better-sqlite3') as typeof Database;
        this.db = new Driver(at.file, { readonly: true, fileMustExist: true });
        this.db.pragma('busy_timeout = 1000');
        this.db.pragma('cache_size = -2000'); // rows read once per query; the OS page cache holds the rest
        this.at = { file: at.file, ino };
      }
      let read = this.statements.get(at.table);
      if (!read) this.statements.set(at.table, (read = this.db.prepare(storedVectorsSql(at.table))));
      const cache = at.epoch ? this.cache.keyed(`${at.table}:${at.epoch[1]}:${Atomics.load(at.epoch, 0)}`) : undefined;
      return rerankStored(read, scans, limit, unit, cache);
    } catch {
      this.statements.clear(); // a dropped table's statement is not used again
      return null;
    }
  }

  /** Close the connection for good (the worker is closing); later calls answer null. */
  close(): void {
    this.closed = true;
    this.release();
  }

  private release(): void {
    this.statements.clear();
    this.cache.clear();
    try {
      this.db?.close();
    } catch {
      /* closing anyway */
    }
    this.db = null;
    this.at = null;
  }
}
