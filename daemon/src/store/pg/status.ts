/** Counts and server facts of the team store (`store/status`, `cairn team status`). */
import type { PgBackend } from './backend';
import { query } from './db';
import { pendingIndexBuilds } from './index-builds';
import { checkSchema } from './schema';

export interface Counts {
  memories: number;
  active: number;
  proposed: number;
  superseded: number;
  deleted: number;
  namespaces: number;
  history: number;
  links: number;
  rejectedValues: number;
  vectors: number;
}

export interface Status {
  url: string;
  user: string;
  serverVersion: string;
  pgvectorVersion: string | null;
  schemaVersion: number;
  latencyMs: number;
  counts: Counts;
  grants: { root: string; role: string; level: number }[];
  historyCap: number | null;
  /** Indexes a migration asked for that are not built yet (an interrupted `cairn team init`: run it again). */
  indexBuildsPending: string[];
}

export async function counts(b: PgBackend): Promise<Counts> {
  const r = (
    await query(
      b.pool,
      `SELECT count(*)::int AS memories,
      count(*) FILTER (WHERE m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'active')::int AS active,
      count(*) FILTER (WHERE m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'proposed')::int AS proposed,
      count(*) FILTER (WHERE m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'superseded')::int AS superseded,
      count(*) FILTER (WHERE m.deleted_at IS NOT NULL OR n.deleted_at IS NOT NULL)::int AS deleted,
      count(m.embedding)::int AS vectors,
      (SELECT count(*)::int FROM namespaces WHERE deleted_at IS NULL) AS namespaces,
      (SELECT count(*)::int FROM history) AS history,
      (SELECT count(*)::int FROM links) AS links,
      (SELECT count(*)::int FROM rejected_values) AS "rejectedValues"
    FROM memories m JOIN namespaces n ON n.id = m.ns_id`,
    )
  )[0];
  return r;
}

/** Server facts for `cairn team status` (never the password). */
export async function status(b: PgBackend): Promise<Status> {
  const t0 = performance.now();
  await query(b.pool, 'SELECT 1');
  const latencyMs = Math.round((performance.now() - t0) * 100) / 100;
  const v = (
    await query(
      b.pool,
      `SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vec, session_user AS u`,
    )
  )[0];
  const grants = await query(b.pool, `SELECT root, role::text AS role, level FROM grants ORDER BY root, role`);
  const cap = (await query<{ value: string }>(b.pool, `SELECT value FROM meta WHERE key = 'history_cap'`))[0];
  return {
    url: b.url,
    user: v.u,
    serverVersion: v.server,
    pgvectorVersion: v.vec,
    schemaVersion: await checkSchema(b.pool),
    latencyMs,
    counts: await counts(b),
    grants,
    historyCap: cap ? Number(cap.value) : null,
    indexBuildsPending: await pendingIndexBuilds(b.pool),
  };
}
