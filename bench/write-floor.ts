/**
 * The SQLite work a stored memory costs at a store's size, with nothing of the daemon around it (issue 27: what a
 * 1M import at 5,000/s would have to fit in). Into a copy of a kept store, `--count` memories are written again as
 * new ones, 500 to a transaction, by the bare statements a write ends in: the memory's row (and its indexes), its
 * history row, its change-log row, its full-text row (the same columns the daemon indexes, putFullText) and its
 * vector row (the stored int8 vector and signature of the memory it copies). No validation, no JSON, no embedding,
 * no duplicate check, no counts, no idempotency record: a lower bound of what any write path over this schema pays.
 * WAL checkpoints run here (PASSIVE, after each transaction once the WAL passes the daemon's WAL_CHECKPOINT_PAGES),
 * in the same thread, so their page writes are counted too; the daemon runs them in its checkpoint worker, on the
 * same cores.
 * Reports CPU ms per memory (this thread: user + system), split by statement family, and the writer's share (all but
 * the checkpoints) as the most memories one connection could store a second on this core.
 *
 *   node --import tsx bench/write-floor.ts --store /tmp/s1m [--count 20000] [--json FILE]
 *
 * The store itself is never written: it is copied first (to `--copy DIR`, default a temporary folder, removed after).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { WAL_CHECKPOINT_PAGES } from '../daemon/src/store/db';
import { putFullText } from '../daemon/src/store/full-text';
import type { MemoryRow } from '../daemon/src/store/rows';
import { namespaceToken } from '../daemon/src/store/search-fts';
import { arg, cpuNow } from './stats';

const PER_TX = 500;

/** The columns of a memory this copies (the daemon's row type). */
type CopiedRow = Pick<
  MemoryRow,
  | 'rowid'
  | 'id'
  | 'ns_id'
  | 'key'
  | 'value'
  | 'value_hash'
  | 'summary'
  | 'kind'
  | 'tags'
  | 'importance'
  | 'confidence'
  | 'source'
  | 'properties'
  | 'anchors'
  | 'valid_from'
  | 'valid_to'
  | 'expires_at'
  | 'status'
>;

function main() {
  const store = path.resolve(arg('store', ''));
  if (!fs.existsSync(path.join(store, 'cairn.db'))) throw new Error('--store DIR (a kept store: DIR/cairn.db)');
  const count = Number(arg('count', '20000'));
  const copyDir = arg('copy', '') || fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-floor-'));
  const own = !arg('copy', '');
  for (const f of ['cairn.db', 'cairn.db-wal'])
    if (fs.existsSync(path.join(store, f))) fs.copyFileSync(path.join(store, f), path.join(copyDir, f));
  const db = new Database(path.join(copyDir, 'cairn.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('cache_size = -8192');
    db.pragma('wal_checkpoint(TRUNCATE)');
    const table = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'vq\\_%' ESCAPE '\\'").get() as { name: string }
    ).name;
    // The memories copied: spread over the store (every n-th), with their stored vectors.
    const total = (db.prepare('SELECT max(rowid) AS n FROM memories').get() as { n: number }).n;
    const step = Math.max(1, Math.floor(total / count));
    const rows = db
      .prepare(
        `SELECT m.*, v.q AS q, v.sig AS sig, v.text_hash AS text_hash, h.actor AS actor, h.state AS state, h.detail AS detail
         FROM memories m JOIN ${table} v ON v.rowid = m.rowid JOIN history h ON h.memory_id = m.id AND h.version = 1
         WHERE m.rowid % ? = 0 LIMIT ?`,
      )
      .all(step, count) as (CopiedRow & {
      q: Buffer;
      sig: Buffer;
      text_hash: number;
      actor: string;
      state: Buffer | string;
      detail: string | null;
    })[];
    if (rows.length < count) throw new Error(`only ${rows.length} memories to copy`);
    const insMemory = db.prepare(
      `INSERT INTO memories(id, ns_id, key, value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors,
         valid_from, valid_to, expires_at, status, created_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insHistory = db.prepare(
      'INSERT INTO history(memory_id, op, actor, reason, at, version, previous, state, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insChange = db.prepare('INSERT INTO changes(memory_id, ns_id, op, at) VALUES (?, ?, ?, ?)');
    const insVector = db.prepare(`INSERT INTO ${table}(rowid, q, sig, text_hash) VALUES (?, ?, ?, ?)`);
    const watermark = db.prepare("UPDATE index_state SET watermark = ? WHERE name IN ('fts', 'vec')");
    const walFile = path.join(copyDir, 'cairn.db-wal');
    const walLimit = WAL_CHECKPOINT_PAGES * (db.pragma('page_size', { simple: true }) as number);
    const part = { rows: 0, fullText: 0, vectors: 0, commit: 0, checkpoint: 0 };
    const t0 = cpuNow();
    const wall0 = Date.now();
    const suffix = `-floor`;
    for (let i = 0; i < rows.length; i += PER_TX) {
      const batch = rows.slice(i, i + PER_TX);
      let t = cpuNow();
      const lap = (k: keyof typeof part) => {
        const n = cpuNow();
        part[k] += n - t;
        t = n;
      };
      db.exec('BEGIN IMMEDIATE');
      let position = 0;
      const added: number[] = [];
      for (const r of batch) {
        const at = Date.now();
        const id = r.id + suffix;
        const rowid = Number(
          insMemory.run(
            id,
            r.ns_id,
            r.key + suffix,
            r.value,
            r.value_hash,
            r.summary,
            r.kind,
            r.tags,
            r.importance,
            r.confidence,
            r.source,
            r.properties,
            r.anchors,
            r.valid_from,
            r.valid_to,
            r.expires_at,
            r.status,
            at,
            at,
            1,
          ).lastInsertRowid,
        );
        insHistory.run(id, 'create', r.actor, null, at, 1, null, r.state, r.detail);
        position = Number(insChange.run(id, r.ns_id, 'create', at).lastInsertRowid);
        added.push(rowid);
      }
      lap('rows');
      batch.forEach((r, j) =>
        putFullText(
          db,
          added[j],
          { key: r.key + suffix, value: r.value, summary: r.summary, tags: JSON.parse(r.tags) as string[], ns: namespaceToken(r.ns_id) },
          true,
        ),
      );
      lap('fullText');
      batch.forEach((r, j) => insVector.run(added[j], r.q, r.sig, r.text_hash));
      watermark.run(position);
      lap('vectors');
      db.exec('COMMIT');
      lap('commit');
      if (fs.statSync(walFile).size > walLimit) {
        db.pragma('wal_checkpoint(PASSIVE)');
        lap('checkpoint');
      }
    }
    const cpu = cpuNow() - t0;
    const writer = part.rows + part.fullText + part.vectors + part.commit;
    const per = (x: number) => Math.round((x / rows.length) * 1000) / 1000;
    const result = {
      store,
      memories: total,
      written: rows.length,
      perTransaction: PER_TX,
      cpuMsPerMemory: per(cpu),
      parts: Object.fromEntries(Object.entries(part).map(([k, v]) => [k, per(v)])),
      // What the one writer connection must do itself (the checkpoints can run on another thread, as the daemon's do):
      // SQLite lets one connection write at a time, so this bounds any write path over the schema on this core.
      writerMsPerMemory: per(writer),
      writerCeilingPerSec: Math.round(rows.length / (writer / 1000)),
      wallPerSec: Math.round(rows.length / ((Date.now() - wall0) / 1000)),
      load: os.loadavg().map((x) => Math.round(x * 100) / 100),
    };
    console.log(JSON.stringify(result));
    const out = arg('json', '');
    if (out) fs.writeFileSync(out, JSON.stringify(result, null, 1));
  } finally {
    db.close();
    if (own) fs.rmSync(copyDir, { recursive: true, force: true });
  }
}

main();
