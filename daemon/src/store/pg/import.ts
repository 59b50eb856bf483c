/**
 * Import into a team root (`store/import`, `store/importPreview`, `cairn import` of records whose namespaces are team
 * namespaces): the local import's JSON Lines records and rules (store/portable.ts, store/import-preview.ts), written
 * as the login role under row-level security through the team store's write path.
 *
 * - It needs `write` on every namespace the records name (the level memory/upsert needs: an import does nothing a
 *   writer could not do one request at a time), checked before anything is read or written; else `Forbidden` naming
 *   the grant. The preview needs the same, so that it answers for rows the import would see.
 * - A memory whose id or (namespace, key) exists (deleted or not) is skipped, never overwritten, and so is a live
 *   memory whose value was forgotten (rejected) in its namespace: deleted stays deleted, forgotten stays forgotten.
 * - What is written is new versions by the importing role: each memory is created at version 1 with the exported
 *   id, content and creation time, and its `create` history row is written by the database (`cairn.record_write`),
 *   so the actor is the database user (a claimed actor is kept as detail.onBehalfOf) and `detail.imported` keeps the
 *   exported version and update time; a memory exported deleted is then deleted (a second version) with its reason.
 *   History records are not copied (members never write history); links and rejected values are written with the
 *   importing role as actor, when the role may write their namespace.
 */
import { CairnError } from '../../protocol/errors';
import {
  type ExportRecord,
  type ImportOutcome,
  type ImportParams,
  type ImportPreviewParams,
  type ImportPreviewResult,
  type ImportResult,
  type Memory,
} from '../../protocol/types';
import { normalizedValueHash } from '../../text/hash';
import { parseExportRecords } from '../import-preview';
import { outOfScope } from '../portable';
import { fromIso, toMemory } from '../rows';
import { pathInScope } from '../scope';
import { contentColumns } from '../write-rules';
import { missingGrant } from './access';
import type { PgBackend } from './backend';
import { mapError, type pg } from './db';
import { embedRows } from './embedding';
import { refetch } from './lookup';
import { ensureNamespace } from './namespaces';
import { record, recordChange, requireUser, tx } from './recording';
import { ftsDocument } from './write-plan';

type C = pg.PoolClient;
type MemoryRecord = Extract<ExportRecord, { type: 'memory' }>;

/** Records written per transaction. */
const CHUNK = 256;

/** Parse and check the records: the scope as the local import checks it, then `write` on every namespace they name. */
async function checked(b: PgBackend, raw: unknown[], scope: ImportParams['scope']): Promise<ExportRecord[]> {
  const records = parseExportRecords(raw);
  records.forEach((r, i) => {
    const refused = outOfScope(r, i, scope);
    if (refused) throw refused;
    if (r.type === 'header' && r.format !== 'cairn-export')
      throw new CairnError('InvalidParams', 'not a Cairn export', { field: 'records' });
  });
  const paths = [...new Set(records.flatMap((r) => (r.type === 'namespace' ? [r.path] : r.type === 'memory' ? [r.memory.namespace] : [])))];
  requireUser(b);
  if (paths.length === 0) return records;
  const r = await b.pool
    .query(`SELECT t, cairn.allowed(t, 2) AS ok FROM unnest($1::text[]) WITH ORDINALITY AS u(t, ord) ORDER BY ord`, [paths])
    .catch((e: unknown) => {
      throw mapError(e);
    });
  const lacking = (r.rows as { t: string; ok: boolean }[]).find((x) => !x.ok);
  if (lacking) throw missingGrant({ user: b.user, level: 'write', verb: 'import into', namespace: lacking.t, member: true });
  return records;
}

/**
 * The live namespace at `path`, created with the exported id and time when there is none (so records of a later
 * store/import call of the same file find it by that id); a fresh id when the exported one is taken.
 */
async function namespaceFor(b: PgBackend, c: C, id: string, path: string, createdAt: number): Promise<string> {
  await c.query(`INSERT INTO namespaces(id, path, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [id, path, createdAt]);
  const r = await c.query(`SELECT id FROM namespaces WHERE path = $1 AND deleted_at IS NULL`, [path]);
  return (r.rows[0]?.id as string | undefined) ?? ensureNamespace(b, c, path);
}

/** The live namespace a rejected-value record belongs to here, with whether this role may write it. */
async function rejectedNamespace(
  c: C,
  rec: Extract<ExportRecord, { type: 'rejected' }>,
  path: string | undefined,
): Promise<{ id: string; path: string; writable: boolean } | undefined> {
  // Its forgotten memory's namespace (imported with its id), else the namespace at its exported path, else by its exported id.
  const r = await c.query(
    `SELECT n.id, n.path, cairn.allowed(n.path, 2) AS writable FROM namespaces n WHERE n.deleted_at IS NULL AND n.id = COALESCE(
       (SELECT m.ns_id FROM memories m WHERE m.id = $1), (SELECT x.id FROM namespaces x WHERE x.path = $2 AND x.deleted_at IS NULL), $3)`,
    [rec.memoryId, path ?? null, rec.namespaceId],
  );
  return r.rows[0] as { id: string; path: string; writable: boolean } | undefined;
}

/** Import records into the team store (see the file comment). */
export async function teamImport(b: PgBackend, p: ImportParams): Promise<ImportResult> {
  const records = await checked(b, p.records, p.scope);
  // The exported namespace ids, by path: rejected-value records name their namespace by id.
  const nsPath = new Map<string, string>();
  const deletedNs = new Set<string>();
  for (const r of records) {
    if (r.type === 'namespace') {
      nsPath.set(r.id, r.path);
      if (r.deletedAt !== null) deletedNs.add(r.id);
    } else if (r.type === 'memory' && !nsPath.has(r.namespaceId)) nsPath.set(r.namespaceId, r.memory.namespace);
  }
  const counts = { memories: 0, history: 0, links: 0, skipped: 0 };
  let position = 0;
  for (let at = 0; at < records.length; at += CHUNK) {
    // Counted per attempt: a transaction that is retried (db.ts) starts again from nothing.
    const chunk = await tx(b, async (c) => {
      const counts = { memories: 0, history: 0, links: 0, skipped: 0 };
      const written: Memory[] = [];
      let pos = 0;
      for (const rec of records.slice(at, at + CHUNK)) {
        switch (rec.type) {
          case 'namespace':
            if (rec.deletedAt === null) await namespaceFor(b, c, rec.id, rec.path, fromIso(rec.createdAt)!);
            break;
          case 'memory': {
            if (deletedNs.has(rec.namespaceId)) {
              counts.skipped++; // a memory of a namespace deleted in the export stays out, as its namespace does
              break;
            }
            const w = await importMemory(b, c, rec, p.actor);
            if (!w) {
              counts.skipped++;
              break;
            }
            pos = w.position;
            counts.memories++;
            if (w.memory.deletedAt === null) written.push(w.memory);
            break;
          }
          case 'link': {
            const l = rec.link;
            const ends = await c.query(
              `SELECT m.id, m.ns_id, n.path, cairn.allowed(n.path, 2) AS w FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = ANY($1::text[])`,
              [[l.from, l.to]],
            );
            const src = (ends.rows as { id: string; ns_id: string; path: string; w: boolean }[]).find((x) => x.id === l.from);
            const dst = (ends.rows as { id: string; path: string }[]).find((x) => x.id === l.to);
            if (!src || !dst || !src.w || (p.scope && (!pathInScope(src.path, p.scope) || !pathInScope(dst.path, p.scope)))) {
              counts.skipped++;
              break;
            }
            const n = await c.query(
              `INSERT INTO links(src, dst, type, ns_id, created_at, actor) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
              [l.from, l.to, l.type, src.ns_id, fromIso(l.createdAt), b.user],
            );
            if ((n.rowCount ?? 0) > 0) {
              counts.links++;
              pos = await recordChange(c, 'link', l.from);
            }
            break;
          }
          case 'rejected': {
            const ns = await rejectedNamespace(c, rec, nsPath.get(rec.namespaceId));
            if (!ns?.writable || (p.scope && !pathInScope(ns.path, p.scope))) {
              counts.skipped++;
              break;
            }
            const nsId = ns.id;
            // The hash of the value as this store computes it, when the forgotten memory came along.
            const owner =
              rec.memoryId === null
                ? undefined
                : ((await c.query(`SELECT id, value_hash FROM memories WHERE id = $1 AND ns_id = $2`, [rec.memoryId, nsId])).rows[0] as
                    { id: string; value_hash: string } | undefined);
            await c.query(
              `INSERT INTO rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (ns_id, value_hash) DO NOTHING`,
              [nsId, owner?.value_hash ?? rec.valueHash, owner?.id ?? null, b.user, fromIso(rec.at)],
            );
            break;
          }
          case 'history': // written by the database, never copied (see the file comment)
          case 'header':
            break;
        }
      }
      return { counts, written, pos };
    });
    for (const k of ['memories', 'links', 'skipped'] as const) counts[k] += chunk.counts[k];
    position = chunk.pos || position;
    await embedRows(b, chunk.written);
  }
  return { ...counts, position: position || (await b.position()) };
}

/**
 * One exported memory written as a new memory (null: skipped, as the local import skips it): its id or (namespace,
 * key) exists, or it is live and its value was forgotten in the namespace.
 */
async function importMemory(
  b: PgBackend,
  c: C,
  rec: MemoryRecord,
  claimed: string | undefined,
): Promise<{ memory: Memory; position: number } | null> {
  const m = rec.memory;
  const nsId = await namespaceFor(b, c, rec.namespaceId, m.namespace, b.now());
  const hash = normalizedValueHash(m.value);
  const seen = (
    await c.query(
      `SELECT EXISTS (SELECT 1 FROM memories WHERE id = $1 OR (ns_id = $2 AND key = $3)) AS clash,
         EXISTS (SELECT 1 FROM rejected_values WHERE ns_id = $2 AND value_hash = $4) AS rejected`,
      [m.id, nsId, m.key, hash],
    )
  ).rows[0] as { clash: boolean; rejected: boolean };
  if (seen.clash || (m.deletedAt === null && seen.rejected)) return null;
  const now = b.now();
  const next = {
    value: m.value,
    kind: m.kind,
    tags: m.tags,
    importance: m.importance,
    confidence: m.confidence,
    source: m.source,
    properties: m.properties,
    anchors: m.anchors,
    validFrom: fromIso(m.validFrom),
    validTo: fromIso(m.validTo),
    expiresAt: fromIso(m.expiresAt),
    status: m.status,
  };
  const FTS = `setweight(to_tsvector('english', $15), 'A') || setweight(to_tsvector('english', $16), 'B') || setweight(to_tsvector('english', $17), 'C') || setweight(to_tsvector('english', $18), 'D')`;
  // ON CONFLICT: the id may be taken by a memory this role cannot read.
  const ins = await c.query(
    `INSERT INTO memories(value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status,
       fts, created_at, updated_at, version, id, ns_id, key, superseded_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, ${FTS}, $19, $20, 1, $21, $22, $23, $24)
     ON CONFLICT DO NOTHING RETURNING rowid`,
    [
      ...contentColumns(next, hash, m.summary),
      ...ftsDocument(m.key, m.value, m.summary, m.tags),
      fromIso(m.createdAt),
      now,
      m.id,
      nsId,
      m.key,
      m.supersededBy,
    ],
  );
  const rowid = ins.rows[0]?.rowid as number | undefined;
  if (rowid === undefined) return null;
  const detail = { imported: { version: m.version, updatedAt: m.updatedAt } };
  let position = await record(b, c, m.id, 'create', claimed, 'import', null, detail);
  if (m.deletedAt !== null) {
    const before = toMemory(await refetch(c, rowid));
    await c.query(
      `UPDATE memories SET deleted_at = $1, deleted_by = $2, delete_reason = $3, version = 2, updated_at = $1 WHERE rowid = $4`,
      [now, b.user, rec.deleteReason, rowid],
    );
    position = await record(b, c, m.id, 'delete', claimed, rec.deleteReason ?? 'deleted in the export', before, {
      imported: { deletedAt: m.deletedAt, deletedBy: m.deletedBy },
    });
  }
  return { memory: toMemory(await refetch(c, rowid)), position };
}

/** A dry run of teamImport: what each memory record would do, by store/importPreview's outcomes; writes nothing. */
export async function teamImportPreview(b: PgBackend, p: ImportPreviewParams): Promise<ImportPreviewResult> {
  const records = await checked(b, p.records, p.scope);
  const sample = p.sample ?? 200;
  const counts: ImportPreviewResult['counts'] = {
    new: 0,
    unchanged: 0,
    changed: 0,
    conflicting: 0,
    refusedDeleted: 0,
    refusedForgotten: 0,
  };
  const other = { namespaces: 0, history: 0, links: 0, rejected: 0 };
  const mems: MemoryRecord[] = [];
  for (const r of records) {
    if (r.type === 'memory') mems.push(r);
    else if (r.type === 'namespace') other.namespaces++;
    else if (r.type === 'history') other.history++;
    else if (r.type === 'link') other.links++;
    else if (r.type === 'rejected') other.rejected++;
  }
  const items: ImportPreviewResult['items'] = [];
  try {
    for (let at = 0; at < mems.length; at += 1000) {
      const part = mems.slice(at, at + 1000).map((r) => r.memory);
      // Per record: the stored memory with its id, else the one at its (namespace, key); and whether its value is rejected there.
      const rows = (
        await b.pool.query(
          `SELECT u.ord, e.id, e.version, e.value, e.deleted,
             EXISTS (SELECT 1 FROM rejected_values r JOIN namespaces n ON n.id = r.ns_id WHERE n.path = u.ns AND n.deleted_at IS NULL AND r.value_hash = u.h) AS rejected
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(id, ns, key, h, ord)
           LEFT JOIN LATERAL (
             SELECT m.id, m.version, m.value, (m.deleted_at IS NOT NULL OR n.deleted_at IS NOT NULL) AS deleted
             FROM memories m JOIN namespaces n ON n.id = m.ns_id
             WHERE m.id = u.id OR (n.path = u.ns AND n.deleted_at IS NULL AND m.key = u.key)
             ORDER BY (m.id = u.id) DESC LIMIT 1) e ON true
           ORDER BY u.ord`,
          [part.map((m) => m.id), part.map((m) => m.namespace), part.map((m) => m.key), part.map((m) => normalizedValueHash(m.value))],
        )
      ).rows as { id: string | null; version: number | null; value: string | null; deleted: boolean | null; rejected: boolean }[];
      rows.forEach((e, k) => {
        const m = part[k];
        let outcome: ImportOutcome;
        if (e.id === null) outcome = m.deletedAt === null && e.rejected ? 'refusedForgotten' : 'new';
        else if (e.deleted && m.deletedAt === null) outcome = 'refusedDeleted';
        else if (e.id === m.id && e.version === m.version && e.value === m.value) outcome = 'unchanged';
        else if (e.id === m.id && m.version > e.version!) outcome = 'changed';
        else outcome = 'conflicting';
        counts[outcome]++;
        if (items.length < sample)
          items.push({ id: m.id, namespace: m.namespace, key: m.key, outcome, fileVersion: m.version, storeVersion: e.version });
      });
    }
  } catch (e) {
    throw mapError(e);
  }
  return { counts, records: other, items, truncated: mems.length > items.length };
}
