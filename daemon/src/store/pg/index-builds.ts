/**
 * Long index builds of the team schema, done without blocking writes (schema.ts `migrate` runs them after its
 * transaction commits).
 *
 * A migration that needs an index built (or rebuilt with other options) on a table that may hold rows does not build
 * it in its transaction: a plain CREATE INDEX holds a SHARE lock on the table until the transaction ends, so every
 * write waits for the whole build (an HNSW build at 100k memories took 2.5 min on a quiet machine, 18 min under
 * load). It writes a marker instead, in cairn.meta: key `index_build:<index name>`, value the index's definition
 * (JSON, see IndexSpec). After the commit, `finishIndexBuilds` builds each marked index with
 * CREATE INDEX CONCURRENTLY under a temporary name (`<name>_next`), drops the index it replaces with
 * DROP INDEX CONCURRENTLY, renames the new one into place and deletes the marker; writes go on meanwhile (they wait
 * only for the moments the rename and the drop take their locks).
 *
 * Resumable: every step is decided from the catalog, so a build interrupted anywhere (the process killed, the
 * statement cancelled, the connection lost) is redone by the next `cairn team init`. An interrupted CREATE INDEX
 * CONCURRENTLY leaves an INVALID index behind (pg_index.indisvalid false): it is dropped and built again; an index
 * already valid with the wanted options is kept. Builds run one at a time per database (a session advisory lock),
 * and a table with no rows yet (a new team database) gets its indexes inside the migration's transaction, at once.
 */
import type pg from 'pg';
import { SCOPE_TEXT_INDEX, SCOPE_TEXT_LONG_INDEX, scopeTextIndexSql } from './text-matches';
import { hnswIndexName, hnswIndexSql, scopeVectorIndexName, scopeVectorIndexSql } from './vector-index';

/**
 * An index a migration asks for: the HNSW index or the scope-vector index of one dimension (vector-index.ts), or a
 * scope-text index (text-matches.ts).
 */
export type IndexSpec =
  | { kind: 'hnsw'; dim: number; efConstruction: number }
  | { kind: 'scope-vectors'; dim: number }
  | { kind: 'scope-text'; part: 'short' | 'long' };

export const MARKER_PREFIX = 'index_build:';

/** SQL (for a migration) that asks for `spec`'s index: the marker, replacing an earlier ask for the same index. */
export function indexBuildMarkerSql(spec: IndexSpec): string {
  const key = MARKER_PREFIX + nameOf(spec);
  return `INSERT INTO cairn.meta(key, value) VALUES ('${key}', '${JSON.stringify(spec)}')
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;`;
}

function nameOf(spec: IndexSpec): string {
  if (spec.kind === 'hnsw') return hnswIndexName(spec.dim);
  if (spec.kind === 'scope-vectors') return scopeVectorIndexName(spec.dim);
  return spec.part === 'short' ? SCOPE_TEXT_INDEX : SCOPE_TEXT_LONG_INDEX;
}

function createSql(spec: IndexSpec, name: string, concurrently: boolean): string {
  if (spec.kind === 'hnsw') return hnswIndexSql(spec.dim, spec.efConstruction, { name, concurrently });
  if (spec.kind === 'scope-vectors') return scopeVectorIndexSql(spec.dim, { name, concurrently });
  return scopeTextIndexSql(spec.part, { name, concurrently });
}

/** The reloptions the spec's index has (pg_class.reloptions), to tell an index built with other options. */
function relOptions(spec: IndexSpec): string[] {
  return spec.kind === 'hnsw' ? ['m=32', `ef_construction=${spec.efConstruction}`] : [];
}

interface Marker {
  key: string;
  name: string;
  spec: IndexSpec;
}

async function markers(c: pg.ClientBase): Promise<Marker[]> {
  const rows = (await c.query(`SELECT key, value FROM cairn.meta WHERE key LIKE 'index\\_build:%' ORDER BY key`)).rows as {
    key: string;
    value: string;
  }[];
  return rows.map((r) => ({ key: r.key, name: r.key.slice(MARKER_PREFIX.length), spec: JSON.parse(r.value) as IndexSpec }));
}

/**
 * Inside the migration's transaction: when cairn.memories has no rows, build the marked indexes right there (nothing
 * waits for an empty table's build) and drop their markers. Otherwise leave them for finishIndexBuilds.
 */
export async function buildIndexesOnEmptyTable(c: pg.ClientBase): Promise<void> {
  if ((await c.query(`SELECT EXISTS (SELECT 1 FROM cairn.memories) AS rows`)).rows[0].rows) return;
  for (const m of await markers(c)) {
    const state = await indexState(c, m.name);
    if (state && (!state.valid || !sameOptions(state.options, relOptions(m.spec)))) await c.query(`DROP INDEX cairn.${m.name}`);
    if (!state || !state.valid || !sameOptions(state.options, relOptions(m.spec))) await c.query(createSql(m.spec, m.name, false));
    await c.query(`DELETE FROM cairn.meta WHERE key = $1`, [m.key]);
  }
}

interface IndexState {
  valid: boolean;
  options: string[];
}

async function indexState(c: pg.ClientBase, name: string): Promise<IndexState | null> {
  const r = (
    await c.query(
      `SELECT i.indisvalid AS valid, coalesce(x.reloptions, '{}') AS options FROM pg_class x
       JOIN pg_namespace s ON s.oid = x.relnamespace JOIN pg_index i ON i.indexrelid = x.oid
       WHERE s.nspname = 'cairn' AND x.relname = $1`,
      [name],
    )
  ).rows[0] as IndexState | undefined;
  return r ?? null;
}

const sameOptions = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The builds still asked for (markers left by a migration, or by a build that was interrupted). */
export async function pendingIndexBuilds(c: pg.ClientBase | pg.Pool): Promise<string[]> {
  return (await c.query(`SELECT key FROM cairn.meta WHERE key LIKE 'index\\_build:%' ORDER BY key`)).rows.map((r: { key: string }) =>
    r.key.slice(MARKER_PREFIX.length),
  );
}

/**
 * Build every marked index without blocking writes (outside any transaction: CREATE INDEX CONCURRENTLY refuses to run
 * in one), one database at a time. Returns the names built.
 */
export async function finishIndexBuilds(pool: pg.Pool): Promise<string[]> {
  const c = await pool.connect();
  let broken = false;
  try {
    await c.query(`SELECT pg_advisory_lock(hashtext('cairn.index_build'))`);
    const built: string[] = [];
    for (const m of await markers(c)) {
      await buildOne(c, m);
      built.push(m.name);
    }
    await c.query(`SELECT pg_advisory_unlock(hashtext('cairn.index_build'))`);
    return built;
  } catch (e) {
    broken = true; // the session (and its advisory lock) goes with the connection
    throw e;
  } finally {
    c.release(broken);
  }
}

async function buildOne(c: pg.ClientBase, m: Marker): Promise<void> {
  const want = relOptions(m.spec);
  const next = `${m.name}_next`;
  const target = await indexState(c, m.name);
  if (!(target?.valid && sameOptions(target.options, want))) {
    const built = await indexState(c, next);
    // An INVALID index is what an interrupted CREATE INDEX CONCURRENTLY leaves: drop it and build again.
    if (built && !(built.valid && sameOptions(built.options, want))) await c.query(`DROP INDEX CONCURRENTLY IF EXISTS cairn.${next}`);
    if (!(built?.valid && sameOptions(built.options, want))) await c.query(createSql(m.spec, next, true));
    if (target) await c.query(`DROP INDEX CONCURRENTLY IF EXISTS cairn.${m.name}`);
    await c.query(`ALTER INDEX cairn.${next} RENAME TO ${m.name}`);
  } else {
    await c.query(`DROP INDEX CONCURRENTLY IF EXISTS cairn.${next}`); // a leftover of an earlier try
  }
  await c.query(`DELETE FROM cairn.meta WHERE key = $1`, [m.key]);
}
