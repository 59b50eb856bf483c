/**
 * The benchmark's team fixture: N corpus memories (bench/corpus.ts, namespaces
 * moved under `team.`) written straight into cairn.memories by the database
 * owner with multi-row INSERTs of unnest()ed arrays, vectors from the daemon's
 * embedder, full-text vectors from the same document as the store's
 * (ftsDocument). This is a FIXTURE, not the product write path: it skips
 * history, the change log and the per-row triggers (session_replication_role =
 * replica) so that a million rows load in minutes; bench/team.ts measures the
 * product write path separately (writers, round trips). A bulk load: the
 * table's secondary indexes are dropped first and built once at the end, and
 * the next batch is embedded while the current one is inserted (20k rows: 545
 * and 524 rows/s against 438 before, same server, load average 18-24).
 */
import type pg from 'pg';
import type { UpsertParams } from '../daemon/src/protocol/types';
import { ftsDocument } from '../daemon/src/store/pg/backend';
import { contentColumns, mergeContent, summaryOf } from '../daemon/src/store/write-rules';
import { normalizedValueHash, sha256, uuidv7 } from '../daemon/src/text/hash';
import { vectorLiteral, embeddingText } from '../daemon/src/store/pg/backend';
import { memoryAt } from './corpus';

export interface FixtureEmbedder {
  readonly info: { model: string; dimension: number };
  embed(texts: string[]): Promise<Float32Array[]>;
}

export const toTeam = (m: UpsertParams): UpsertParams => ({ ...m, namespace: m.namespace.replace(/^(project|user)\b/, 'team.$1') });

const COLS = [
  ['id', 'text'],
  ['ns_id', 'text'],
  ['key', 'text'],
  ['value', 'text'],
  ['value_hash', 'text'],
  ['summary', 'text'],
  ['kind', 'text'],
  ['tags', 'text'],
  ['importance', 'float8'],
  ['confidence', 'float8'],
  ['source', 'text'],
  ['properties', 'text'],
  ['anchors', 'text'],
  ['valid_from', 'int8'],
  ['valid_to', 'int8'],
  ['expires_at', 'int8'],
  ['status', 'text'],
  ['fa', 'text'],
  ['fb', 'text'],
  ['fc', 'text'],
  ['fd', 'text'],
  ['embedding', 'text'],
  ['embed_hash', 'text'],
  ['at', 'int8'],
] as const;

/** Load memories [from, to) of the corpus. `progress` is called after each batch. */
export async function loadFixture(
  admin: pg.Pool,
  embedder: FixtureEmbedder,
  from: number,
  to: number,
  progress: (done: number) => void = () => {},
  batch = 2000,
): Promise<void> {
  const c = await admin.connect();
  // A bulk load: the table's secondary indexes (full text, recency, expiry, model; not those behind constraints) are
  // dropped first and built once at the end from the rows, which is faster than growing them row by row.
  const secondary = (
    await c.query<{ name: string; def: string }>(
      `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS def FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       WHERE x.indrelid = 'cairn.memories'::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.oid)`,
    )
  ).rows;
  try {
    for (const ix of secondary) await c.query(`DROP INDEX cairn.${ix.name}`);
    await c.query('SET session_replication_role = replica');
    const nsIds = new Map<string, string>();
    const t0 = Date.now() - to; // distinct, increasing times
    // One batch's columns (its vectors from the embedder); the next batch is prepared while this one is inserted.
    const prepare = async (start: number): Promise<{ cols: unknown[][]; n: number }> => {
      const ms = Array.from({ length: Math.min(batch, to - start) }, (_, k) => toTeam(memoryAt(start + k)));
      for (const m of ms)
        if (!nsIds.has(m.namespace)) {
          const id = uuidv7(Date.now());
          await c.query(`INSERT INTO cairn.namespaces(id, path, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
            id,
            m.namespace,
            Date.now(),
          ]);
          nsIds.set(m.namespace, (await c.query(`SELECT id FROM cairn.namespaces WHERE path = $1`, [m.namespace])).rows[0].id);
        }
      const rows = ms.map((p) => {
        const { next } = mergeContent(p, undefined, 'create', {});
        const summary = summaryOf(next.value);
        return { p, next, summary };
      });
      const texts = rows.map((r) => embeddingText({ key: r.p.key, value: r.next.value, tags: r.next.tags }));
      const vs = await embedder.embed(texts);
      const cols: unknown[][] = COLS.map(() => []);
      rows.forEach((r, i) => {
        const at = t0 + start + i;
        const vals = [
          uuidv7(at),
          nsIds.get(r.p.namespace),
          r.p.key,
          ...contentColumns(r.next, normalizedValueHash(r.p.value), r.summary),
          ...ftsDocument(r.p.key, r.next.value, r.summary, r.next.tags),
          vectorLiteral(vs[i]),
          sha256(embedder.info.model + '\u0000' + texts[i]),
          at,
        ];
        vals.forEach((v, j) => cols[j].push(v));
      });
      return { cols, n: ms.length };
    };
    let next: Promise<{ cols: unknown[][]; n: number }> | null = from < to ? prepare(from) : null;
    for (let start = from; next; start += batch) {
      const { cols, n } = await next;
      next = start + batch < to ? prepare(start + batch) : null;
      next?.catch(() => undefined); // awaited on the next turn
      await c.query(
        `INSERT INTO cairn.memories(id, ns_id, key, value, value_hash, summary, kind, tags, importance, confidence, source, properties,
           anchors, valid_from, valid_to, expires_at, status, fts, embedding, embed_model, embed_hash, created_at, updated_at, version)
         SELECT d.id, d.ns_id, d.key, d.value, d.value_hash, d.summary, d.kind, d.tags, d.importance, d.confidence, d.source, d.properties,
           d.anchors, d.valid_from, d.valid_to, d.expires_at, d.status,
           setweight(to_tsvector('english', d.fa), 'A') || setweight(to_tsvector('english', d.fb), 'B') ||
           setweight(to_tsvector('english', d.fc), 'C') || setweight(to_tsvector('english', d.fd), 'D'),
           d.embedding::vector, $${COLS.length + 1}, d.embed_hash, d.at, d.at, 1
         FROM unnest(${COLS.map(([, t], j) => `$${j + 1}::${t}[]`).join(', ')}) AS d(${COLS.map(([n]) => n).join(', ')})`,
        [...cols, embedder.info.model],
      );
      progress(start + n - from);
    }
  } finally {
    await c.query('RESET session_replication_role').catch(() => undefined);
    for (const ix of secondary) await c.query(ix.def);
    c.release();
  }
}
