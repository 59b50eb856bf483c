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

/** Where a model's int8 vectors are stored: the store's file and the model's table (vq_N). */
export interface StoredAt {
  file: string;
  table: string;
}

type Scans = { query: Float32Array; hits: ArmHit[] }[];
type Statement = { all(ids: string): unknown[] };

/** The statement that reads the stored vectors of a JSON list of rowids. */
export const storedVectorsSql = (table: string): string => `SELECT rowid, q FROM ${table} WHERE rowid IN (SELECT value FROM json_each(?))`;

/**
 * The best `limit` of each scan's hits by cosine to its own query (normalized here unless `unit`) against the int8
 * vectors `read` by storedVectorsSql (every hit's in one statement; a memory purged meanwhile has none and is left out).
 */
export function rerankStored(read: Statement, scans: Scans, limit: number, unit = false): ArmHit[][] {
  const ids = new Set<number>();
  for (const x of scans) for (const h of x.hits) ids.add(h.rowid);
  const stored = new Map<number, Int8Array>();
  if (ids.size)
    for (const r of read.all(JSON.stringify([...ids])) as { rowid: number; q: Buffer }[])
      stored.set(r.rowid, new Int8Array(r.q.buffer, r.q.byteOffset, r.q.byteLength));
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
      return rerankStored(read, scans, limit, unit);
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
    try {
      this.db?.close();
    } catch {
      /* closing anyway */
    }
    this.db = null;
    this.at = null;
  }
}
