/**
 * One upsert on the team store: the fast path (one read, one guarded statement that writes row, vector, history
 * and change-log row together, retried when another writer moved the row) or the locked path (a transaction with
 * row locks; supersedes, idempotency keys and contended rows).
 */
import type { UpsertParams, UpsertResult } from '../../protocol/types';
import { normalizedValueHash, sha256, uuidv7 } from '../../text/hash';
import { toMemory, type MemoryRow } from '../rows';
import { refuseDeleted, refuseStaleVersion } from '../write-rules';
import type { PgBackend } from './backend';
import type { pg } from './db';
import { embeddingText, embedRows, vectorLiteral } from './embedding';
import { prepared } from './get';
import { refetch, rethrow, rowBy, rowByKey } from './lookup';
import { ensureNamespace } from './namespaces';
import { keyed, positionIn, record, requireUser, tx } from './recording';
import { andSql, MEMORY_COLUMNS, scopeSql } from './sql';
import { plan, stateRow, validateContent, writeValues } from './write-plan';

type C = pg.PoolClient;

/** A fast write lost a race with another writer (the row moved between its read and its write): read again. */
export const LOST_RACE = Symbol('lost race');

export async function upsert(b: PgBackend, p: UpsertParams): Promise<UpsertResult> {
  if (p.idempotencyKey !== undefined) {
    // Keyed: the locked path, in one transaction with the key's record.
    const r = await keyed(b, 'memory/upsert', p, (c) => upsertInTx(b, c, p));
    if (r.changed && !('replayed' in r)) await embedRows(b, [r.memory]);
    return r;
  }
  if (b.writePath === 'fast' && p.supersedes === undefined) {
    const vectors = new Map<string, Float32Array | null>();
    for (let i = 0; i < 4; i++) {
      const r = await fastUpsert(b, b.pool, p, vectors).catch(rethrow);
      if (r !== LOST_RACE) return r;
    }
    // Contended: take the row lock instead of racing again.
  }
  const r = await tx(b, (c) => upsertInTx(b, c, p));
  if (r.changed) await embedRows(b, [r.memory]);
  return r;
}

const READ = `SELECT (SELECT row_to_json(x) FROM (SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path = $1 AND n.deleted_at IS NULL AND m.key = $2) x) AS existing,
         (SELECT id FROM namespaces WHERE path = $1 AND deleted_at IS NULL) AS ns_id,
         (SELECT json_build_object('actor', r.actor, 'at', r.at) FROM rejected_values r JOIN namespaces n ON n.id = r.ns_id WHERE n.path = $1 AND n.deleted_at IS NULL AND r.value_hash = $3) AS rejected`;

/**
 * One upsert in two round trips: (1) read the stored row, the namespace and a rejected-value
 * record in one statement; decide in TypeScript exactly as upsertInTx does;
 * (2) one statement whose data-modifying CTEs update (guarded by the version read) or insert
 * (guarded by the unique key) the row, and, only if that row was written, append its history
 * and change-log rows. A single statement is atomic, so history, change log and row are never
 * apart; a guard that matched nothing means another writer got there first (LOST_RACE). A first
 * write into a new namespace costs one more statement (creating it). Both are prepared statements
 * (parsed and planned once per connection).
 * A new key is one round trip: a single write (not a batch's) of a key this daemon has not seen
 * stored, into a namespace whose id it knows (write-cache.ts), with no ifVersion other than 0,
 * skips (1) and is decided as a create; its INSERT is guarded by the key being free, the namespace
 * id being that live path's and the value not being rejected there, and when a guard stops it, it
 * is decided again from a read (the LOST_RACE retry). `vectors` (when given)
 * embeds before writing, so the vector lands in the same statement; its cache spares re-embedding
 * the same text on a retry; without it (a batch) the caller embeds what was written after its commit.
 */
export async function fastUpsert(
  b: PgBackend,
  db: C | pg.Pool,
  p: UpsertParams,
  vectors: Map<string, Float32Array | null> | null,
): Promise<UpsertResult | typeof LOST_RACE> {
  validateContent(p);
  const now = b.now();
  const claimed = p.actor ?? p.source;
  const valueHash = normalizedValueHash(p.value);
  type Read = { existing: MemoryRow | null; ns_id: string | null; rejected: { actor: string; at: number } | null };
  const knownNs = vectors && (p.ifVersion === undefined || p.ifVersion === 0) ? b.writes.namespaceId(p.namespace) : undefined;
  const blind = knownNs !== undefined && !b.writes.mayExist(p.namespace, p.key);
  const read: Read = blind
    ? { existing: null, ns_id: knownNs, rejected: null }
    : ((await db.query(prepared(READ, [p.namespace, p.key, valueHash]))).rows[0] as Read);
  const existing = read.existing ?? undefined;
  const w = plan(p, existing, read.rejected ?? undefined, undefined);
  // (The position is read only for a write that changes nothing: under row-level security max(position) scans the log.)
  if (w.unchanged) {
    b.writes.stored(p.namespace, p.key, existing!.ns_id);
    return { memory: toMemory(existing!), created: false, position: await positionIn(db), changed: false, ...w.warn };
  }
  const nsId = existing?.ns_id ?? read.ns_id ?? (await ensureNamespace(b, db, p.namespace));
  const version = existing ? existing.version + 1 : 1;
  const id = existing?.id ?? uuidv7(now);
  const state = stateRow(p, w, existing, nsId, id, version, now);
  const memory = toMemory(state);
  let vec: { v: string; model: string; hash: string } | null = null;
  const e = b.embedder;
  if (vectors && e) {
    const text = embeddingText(memory);
    let v = vectors.get(text);
    if (v === undefined) {
      try {
        v = (await e.embed([text], { priority: true }))[0];
      } catch (err) {
        v = null; // written without a vector; full-text finds it and backfill() embeds it later
        b.log(`team store: embedding before write failed: ${(err as Error).message}`);
      }
      vectors.set(text, v);
    }
    if (v && !v.every((x) => x === 0)) vec = { v: vectorLiteral(v), model: e.info.model, hash: sha256(e.info.model + '\u0000' + text) };
  }
  requireUser(b);
  const FTS = `setweight(to_tsvector('english', $15), 'A') || setweight(to_tsvector('english', $16), 'B') || setweight(to_tsvector('english', $17), 'C') || setweight(to_tsvector('english', $18), 'D')`;
  const values = [
    ...writeValues(p, w),
    now,
    version,
    vec?.v ?? null,
    vec?.model ?? null,
    vec?.hash ?? null,
    id,
    nsId,
    p.key,
    existing?.rowid ?? null,
    existing?.version ?? null,
  ];
  // $19 now, $20 version, $21-$23 vector, $24 id, $25 ns id, $26 key, $27 rowid, $28 version read; history and change log from $29
  // (written by cairn.record_write, which reads the row this statement wrote: a volatile function sees it).
  const tail = ` SELECT cairn.record_write(w.id, $29, $30, $31, $32, $33) AS position FROM w`;
  values.push(
    w.op,
    p.reason ?? null,
    claimed ?? null,
    existing ? JSON.stringify(toMemory(existing)) : null,
    Object.keys(w.detail).length ? JSON.stringify(w.detail) : null,
    p.namespace,
  );
  const live = `EXISTS (SELECT 1 FROM namespaces WHERE id = $25 AND path = $34 AND deleted_at IS NULL)`;
  const sql = existing
    ? `WITH w AS (UPDATE memories SET value = $1, value_hash = $2, summary = $3, kind = $4, tags = $5, importance = $6, confidence = $7, source = $8, properties = $9, anchors = $10,
           valid_from = $11, valid_to = $12, expires_at = $13, status = $14, fts = ${FTS}, updated_at = $19, version = $20, superseded_by = NULL,
           deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, embedding = $21::vector, embed_model = $22, embed_hash = $23
         WHERE rowid = $27 AND version = $28 AND id = $24 AND ns_id = $25 AND key = $26 AND ${live} RETURNING id, ns_id)${tail}`
    : `WITH w AS (INSERT INTO memories(value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status,
           fts, created_at, updated_at, version, embedding, embed_model, embed_hash, id, ns_id, key)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, ${FTS}, $19, $19, $20, $21::vector, $22, $23, $24, $25, $26
         WHERE $27::bigint IS NULL AND $28::int IS NULL AND ${live}
           AND ($35::boolean IS NOT TRUE OR NOT EXISTS (SELECT 1 FROM rejected_values r WHERE r.ns_id = $25 AND r.value_hash = $2))
         ON CONFLICT ON CONSTRAINT cairn_race_memory_key DO NOTHING RETURNING id, ns_id)${tail}`;
  if (!existing) values.push(blind); // $35: a blind create also checks that the value is not rejected
  const r = (await db.query(prepared(sql, values))).rows[0] as { position: number } | undefined;
  if (!r) {
    b.writes.missed(p.namespace, p.key);
    return LOST_RACE;
  }
  b.writes.stored(p.namespace, p.key, nsId);
  return { memory, created: !existing, position: r.position, changed: true, ...w.warn };
}

export async function upsertInTx(b: PgBackend, c: C, p: UpsertParams): Promise<UpsertResult> {
  validateContent(p);
  const now = b.now();
  const claimed = p.actor ?? p.source;
  const existing = await rowByKey(c, p.namespace, p.key, true);
  const valueHash = normalizedValueHash(p.value);
  // Refused before the namespace is created (as the SQLite store does); the full plan runs below.
  refuseDeleted(p, existing, {});
  refuseStaleVersion(p, existing);
  const nsId = existing?.ns_id ?? (await ensureNamespace(b, c, p.namespace));
  const rejected = (await c.query(`SELECT actor, at FROM rejected_values WHERE ns_id = $1 AND value_hash = $2`, [nsId, valueHash]))
    .rows[0] as { actor: string; at: number } | undefined;
  let superseded: MemoryRow | undefined;
  if (p.supersedes !== undefined) {
    const sid = p.supersedes;
    superseded = await rowBy(c, (q) => andSql(`m.id = ${q.p(sid)} AND n.deleted_at IS NULL`, scopeSql(q, p.scope)), true);
  }
  const w = plan(p, existing, rejected, superseded);
  const { op, detail, warn } = w;
  if (w.unchanged) return { memory: toMemory(existing!), created: false, position: await positionIn(c), changed: false, ...warn };

  const previous = existing ? toMemory(existing) : null;
  const cols = writeValues(p, w);
  const FTS = `setweight(to_tsvector('english', $15), 'A') || setweight(to_tsvector('english', $16), 'B') || setweight(to_tsvector('english', $17), 'C') || setweight(to_tsvector('english', $18), 'D')`;
  let rowid: number;
  let id: string;
  let version: number;
  if (existing) {
    id = existing.id;
    rowid = existing.rowid;
    version = existing.version + 1;
    await c.query(
      `UPDATE memories SET value = $1, value_hash = $2, summary = $3, kind = $4, tags = $5, importance = $6, confidence = $7, source = $8, properties = $9, anchors = $10,
         valid_from = $11, valid_to = $12, expires_at = $13, status = $14, fts = ${FTS}, updated_at = $19, version = $20, superseded_by = NULL,
         deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, embedding = NULL, embed_model = NULL, embed_hash = NULL WHERE rowid = $21`,
      [...cols, now, version, rowid],
    );
  } else {
    id = uuidv7(now);
    version = 1;
    rowid = (
      await c.query(
        `INSERT INTO memories(value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status,
           fts, created_at, updated_at, version, id, ns_id, key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, ${FTS}, $19, $19, $20, $21, $22, $23) RETURNING rowid`,
        [...cols, now, version, id, nsId, p.key],
      )
    ).rows[0].rowid;
  }
  let position = await record(b, c, id, op, claimed, p.reason, previous, detail);

  if (superseded) {
    const before = toMemory(superseded);
    await c.query(
      `UPDATE memories SET status = 'superseded', superseded_by = $1, version = version + 1, updated_at = $2 WHERE rowid = $3`,
      [id, now, superseded.rowid],
    );
    position = await record(b, c, superseded.id, 'supersede', claimed, p.reason ?? `superseded by ${p.namespace}/${p.key}`, before, {
      supersededBy: id,
    });
  }
  return { memory: toMemory(await refetch(c, rowid)), created: !existing, position, changed: true, ...warn };
}
