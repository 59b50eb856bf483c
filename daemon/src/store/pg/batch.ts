/**
 * memory/upsertBatch on the team store: runs of items with distinct keys written together in one transaction
 * (two statements per run), falling back to a savepoint per item when the database refuses one of them.
 */
import { CairnError } from '../../protocol/errors';
import type { Memory, UpsertBatchResult, UpsertParams, UpsertResult } from '../../protocol/types';
import { normalizedValueHash, uuidv7 } from '../../text/hash';
import { toMemory, type MemoryRow } from '../rows';
import type { PgBackend } from './backend';
import { isConnectionError, mapError, type pg } from './db';
import { embedRows } from './embedding';
import { ensureNamespace } from './namespaces';
import { keyed, positionIn, tx } from './recording';
import { MEMORY_COLUMNS } from './sql';
import { fastUpsert, LOST_RACE, upsertInTx } from './upsert';
import { ftsDocument, plan, stateRow, validateContent, type WritePlan } from './write-plan';

type C = pg.PoolClient;

/** Raised inside a batch transaction when the fast path hit a database error: the batch reruns with savepoints. */
class NeedsSavepoints extends Error {}

/**
 * A run of batch items with distinct keys and no supersedes, written together: one statement
 * reads every stored row, namespace and rejected-value record they need; refusals are decided
 * in TypeScript exactly as for one write (plan()); one statement writes every row with its
 * history and change-log row. An item whose row another writer moved in between comes back
 * undefined (the caller writes it alone). Runs inside the batch's transaction.
 */
export async function bulkInTx(b: PgBackend, c: C, list: UpsertParams[]): Promise<(UpsertResult | CairnError | undefined)[]> {
  const out: (UpsertResult | CairnError | undefined)[] = new Array(list.length).fill(undefined);
  const todo: number[] = [];
  list.forEach((p, i) => {
    try {
      validateContent(p);
      todo.push(i);
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
      out[i] = e;
    }
  });
  if (todo.length === 0) return out;
  const now = b.now();
  const hashes = todo.map((i) => normalizedValueHash(list[i].value));
  const read = (
    await c.query(
      `SELECT u.ord, (SELECT row_to_json(x) FROM (SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path = u.ns AND n.deleted_at IS NULL AND m.key = u.key) x) AS existing,
         (SELECT id FROM namespaces WHERE path = u.ns AND deleted_at IS NULL) AS ns_id,
         (SELECT json_build_object('actor', r.actor, 'at', r.at) FROM rejected_values r JOIN namespaces n ON n.id = r.ns_id WHERE n.path = u.ns AND n.deleted_at IS NULL AND r.value_hash = u.h) AS rejected
       FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(ns, key, h, ord) ORDER BY u.ord`,
      [todo.map((i) => list[i].namespace), todo.map((i) => list[i].key), hashes],
    )
  ).rows as { ord: number; existing: MemoryRow | null; ns_id: string | null; rejected: { actor: string; at: number } | null }[];
  const nsIds = new Map<string, string>();
  const rows: Record<string, unknown>[] = [];
  const written = new Map<string, { i: number; memory: Memory; created: boolean; warn: WritePlan['warn'] }>();
  let unchangedPosition: number | null = null;
  for (const r of read) {
    const i = todo[r.ord - 1];
    const p = list[i];
    const existing = r.existing ?? undefined;
    let w: WritePlan;
    try {
      w = plan(p, existing, r.rejected ?? undefined, undefined);
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
      out[i] = e;
      continue;
    }
    if (w.unchanged) {
      unchangedPosition ??= await positionIn(c);
      out[i] = { memory: toMemory(existing!), created: false, position: unchangedPosition, changed: false, ...w.warn };
      continue;
    }
    let nsId = existing?.ns_id ?? r.ns_id ?? nsIds.get(p.namespace);
    if (!nsId) {
      nsId = await ensureNamespace(b, c, p.namespace);
      nsIds.set(p.namespace, nsId);
    }
    const version = existing ? existing.version + 1 : 1;
    const id = existing?.id ?? uuidv7(now);
    const state = stateRow(p, w, existing, nsId, id, version, now);
    const memory = toMemory(state);
    const [fa, fb, fc, fd] = ftsDocument(p.key, w.next.value, w.summary, w.next.tags);
    rows.push({
      ord: rows.length,
      rowid: existing?.rowid ?? null,
      oldver: existing?.version ?? null,
      id,
      ns_id: nsId,
      ns_path: p.namespace,
      key: p.key,
      value: state.value,
      value_hash: state.value_hash,
      summary: state.summary,
      kind: state.kind,
      tags: state.tags,
      importance: state.importance,
      confidence: state.confidence,
      source: state.source,
      properties: state.properties,
      anchors: state.anchors,
      valid_from: state.valid_from,
      valid_to: state.valid_to,
      expires_at: state.expires_at,
      status: state.status,
      fa,
      fb,
      fc,
      fd,
      version,
      op: w.op,
      claimed: p.actor ?? p.source ?? null,
      reason: p.reason ?? null,
      previous: existing ? JSON.stringify(toMemory(existing)) : null,
      detail: Object.keys(w.detail).length ? JSON.stringify(w.detail) : null,
    });
    written.set(id, { i, memory, created: !existing, warn: w.warn });
  }
  if (rows.length === 0) return out;
  const FTS = `setweight(to_tsvector('english', d.fa), 'A') || setweight(to_tsvector('english', d.fb), 'B') || setweight(to_tsvector('english', d.fc), 'C') || setweight(to_tsvector('english', d.fd), 'D')`;
  const live = `EXISTS (SELECT 1 FROM namespaces n WHERE n.id = d.ns_id AND n.path = d.ns_path AND n.deleted_at IS NULL)`;
  const res = await c.query(
    `WITH d AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS d(ord int, rowid bigint, oldver int, id text, ns_id text, ns_path text, key text,
         value text, value_hash text, summary text, kind text, tags text, importance double precision, confidence double precision, source text,
         properties text, anchors text, valid_from bigint, valid_to bigint, expires_at bigint, status text, fa text, fb text, fc text, fd text,
         version int, op text, claimed text, reason text, previous text, detail text)),
     up AS (UPDATE memories m SET value = d.value, value_hash = d.value_hash, summary = d.summary, kind = d.kind, tags = d.tags, importance = d.importance,
         confidence = d.confidence, source = d.source, properties = d.properties, anchors = d.anchors, valid_from = d.valid_from, valid_to = d.valid_to,
         expires_at = d.expires_at, status = d.status, fts = ${FTS}, updated_at = $2, version = d.version, superseded_by = NULL,
         deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, embedding = NULL, embed_model = NULL, embed_hash = NULL
       FROM d WHERE d.rowid IS NOT NULL AND m.rowid = d.rowid AND m.version = d.oldver AND m.id = d.id AND ${live} RETURNING d.ord),
     ins AS (INSERT INTO memories(value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status,
         fts, created_at, updated_at, version, id, ns_id, key)
       SELECT d.value, d.value_hash, d.summary, d.kind, d.tags, d.importance, d.confidence, d.source, d.properties, d.anchors, d.valid_from, d.valid_to, d.expires_at, d.status,
         ${FTS}, $2, $2, d.version, d.id, d.ns_id, d.key FROM d WHERE d.rowid IS NULL AND ${live} ORDER BY d.ord
       ON CONFLICT ON CONSTRAINT cairn_race_memory_key DO NOTHING RETURNING id),
     w AS (SELECT ord FROM up UNION ALL SELECT d.ord FROM ins JOIN d ON d.id = ins.id),
     x AS (SELECT d.* FROM w JOIN d USING (ord) ORDER BY d.ord OFFSET 0)
     SELECT cairn.record_write(x.id, x.op, x.reason, x.claimed, x.previous, x.detail) AS position, x.id AS memory_id FROM x`,
    [JSON.stringify(rows), now],
  );
  for (const r of res.rows as { position: number; memory_id: string }[]) {
    const x = written.get(r.memory_id)!;
    out[x.i] = { memory: x.memory, created: x.created, position: r.position, changed: true, ...x.warn };
  }
  return out;
}

export async function upsertBatch(
  b: PgBackend,
  items: UpsertParams[],
  actor?: string,
  idempotencyKey?: string,
): Promise<UpsertBatchResult> {
  const list = items.map((it) => (actor && !it.actor ? { ...it, actor } : it));
  const done: Memory[] = [];
  const itemResult = (r: UpsertResult): UpsertBatchResult['results'][number] => ({
    ok: true as const,
    id: r.memory.id,
    created: r.created,
    position: r.position,
    version: r.memory.version,
    ...(r.warnings ? { warnings: r.warnings } : {}),
  });
  const refused = (err: CairnError): UpsertBatchResult['results'][number] => ({
    ok: false as const,
    error: { code: err.code, message: err.message, data: err.data },
  });
  let results: UpsertBatchResult['results'] | null = null;
  const withSavepoints = async (c: C): Promise<UpsertBatchResult['results']> => {
    done.length = 0;
    const out: UpsertBatchResult['results'] = [];
    for (const it of list) {
      await c.query('SAVEPOINT item');
      try {
        const r = await upsertInTx(b, c, it);
        await c.query('RELEASE SAVEPOINT item');
        if (r.changed) done.push(r.memory);
        out.push(itemResult(r));
      } catch (e) {
        const err = mapError(e);
        if (!(err instanceof CairnError) || err.codeName === 'Unavailable') throw e;
        await c.query('ROLLBACK TO SAVEPOINT item');
        out.push(refused(err));
      }
    }
    return out;
  };
  if (idempotencyKey !== undefined) {
    // Keyed: the locked path with a savepoint per item, in one transaction with the key's record.
    const params: { items: UpsertParams[]; actor?: string; idempotencyKey: string } = {
      items,
      ...(actor !== undefined ? { actor } : {}),
      idempotencyKey,
    };
    const r = await keyed<UpsertBatchResult>(b, 'memory/upsertBatch', params, async (c) => {
      const out = await withSavepoints(c);
      return { results: out, position: out.reduce((m, x) => (x.ok ? Math.max(m, x.position) : m), 0) || (await positionIn(c)) };
    });
    if (!('replayed' in r)) await embedRows(b, done);
    return r;
  }
  if (b.writePath === 'fast') {
    // One transaction, no savepoints, two statements per run of items (bulkInTx; an item alone costs two):
    // refusals are decided before any statement writes, so they never abort the transaction. A database
    // error (say a row-level-security refusal) aborts it; the batch then reruns below with a savepoint per item.
    try {
      results = await tx(b, async (c) => {
        done.length = 0;
        const out: UpsertBatchResult['results'] = new Array(list.length);
        const one = async (i: number): Promise<void> => {
          const it = list[i];
          let r: UpsertResult | typeof LOST_RACE = LOST_RACE;
          try {
            for (let k = 0; k < 4 && r === LOST_RACE; k++) r = await fastUpsert(b, c, it, null);
            if (r === LOST_RACE) r = await upsertInTx(b, c, it); // contended: lock the row (same transaction)
            if (r.changed) done.push(r.memory);
          } catch (e) {
            if (e instanceof CairnError && e.codeName !== 'Unavailable' && e.codeName !== 'Forbidden') {
              out[i] = refused(e);
              return;
            }
            throw e instanceof CairnError || isConnectionError(e) ? e : new NeedsSavepoints();
          }
          out[i] = itemResult(r);
        };
        // Runs of items with distinct keys and no supersedes go together (bulkInTx); an item that
        // repeats a key of its run starts the next run, so every key's writes keep the batch order.
        for (let i = 0; i < list.length;) {
          if (list[i].supersedes !== undefined) {
            await one(i++);
            continue;
          }
          const run: number[] = [];
          const keys = new Set<string>();
          for (; i < list.length && list[i].supersedes === undefined && !keys.has(`${list[i].namespace}\u0000${list[i].key}`); i++) {
            keys.add(`${list[i].namespace}\u0000${list[i].key}`);
            run.push(i);
          }
          if (run.length === 1) {
            await one(run[0]);
            continue;
          }
          let got: (UpsertResult | CairnError | undefined)[];
          try {
            got = await bulkInTx(
              b,
              c,
              run.map((j) => list[j]),
            );
          } catch (e) {
            throw e instanceof CairnError || isConnectionError(e) ? e : new NeedsSavepoints();
          }
          for (let k = 0; k < run.length; k++) {
            const r = got[k];
            if (r === undefined)
              await one(run[k]); // another writer moved the row: alone, retried
            else if (r instanceof CairnError) {
              if (r.codeName === 'Forbidden') throw r;
              out[run[k]] = refused(r);
            } else {
              if (r.changed) done.push(r.memory);
              out[run[k]] = itemResult(r);
            }
          }
        }
        return out;
      });
    } catch (e) {
      if (!(e instanceof NeedsSavepoints) && !(e instanceof CairnError && e.codeName === 'Forbidden')) throw e;
    }
  }
  if (results === null) results = await tx(b, withSavepoints);
  await embedRows(b, done);
  return { results, position: results.reduce((m, r) => (r.ok ? Math.max(m, r.position) : m), 0) || (await b.position()) };
}
