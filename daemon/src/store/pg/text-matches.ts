/**
 * Migration 9 of the team schema: the full-text arm's candidates through the GIN index, under the same read rules.
 *
 * Under row-level security PostgreSQL never evaluates a member's `fts @@ query` from the GIN index: the policy's
 * condition is a security barrier and `@@` is not leakproof, so the planner runs the policy first and tests `@@` per
 * row (a walk of the whole scope; a sequential scan of the table for a whole-team search). Marking `@@` LEAKPROOF
 * needs a superuser, which a team's schema owner is not. Instead `cairn.text_matches(query, paths, roots, deleted)`,
 * a SECURITY DEFINER function of the schema owner (search_path pinned), reads the index itself and applies the
 * caller's read rules explicitly, exactly as the SELECT policies do: a memory's namespace must be in
 * `cairn.ns_ids(1)` (the set every policy asks, computed from the login role, session_user) and not deleted, and in
 * the scope given (exact paths, or subtrees by whole segments, as sql.ts scopeSql); deleted memories only when asked.
 * It returns the matching rows' ranking and filtering columns (TEXT_MATCH_COLUMNS), no text and no vector. The arm
 * ranks them with visibility, scope and filter in its own statement and reads its hits' full rows by row id as the
 * member (row-level security again). The plan inside is made per call
 * with the query's values (EXECUTE ... USING): the GIN index (alone or intersected with the scope's rows) unless the
 * planner expects more than 4 index matches per row of the scope, when the scope's rows are tested one by one (as
 * before); either way each matching row is read from the heap once.
 */
import { USER_ROOT } from '../../protocol/namespace';
import type { Scope } from '../../protocol/types';
import { effectiveIncludeUser } from '../scope';

/**
 * The columns the function returns: everything the arm's predicates (visibility, scope, filter) and its ranking read,
 * the namespace's path included, so a matching row is read from the heap once; not the text, summary or vector (the hits'
 * full rows are read afterwards by row id, as the member, through row-level security).
 */
export const TEXT_MATCH_COLUMNS = `rowid bigint, id text, ns_id text, ns_path text, key text, kind text, tags text, importance double precision,
  confidence double precision, source text, properties text, anchors text, created_at bigint, updated_at bigint, valid_from bigint,
  valid_to bigint, expires_at bigint, last_accessed_at bigint, status text, deleted_at bigint, fts tsvector`;

export const TEXT_MATCHES_MIGRATION = `
  CREATE FUNCTION cairn.text_matches(p_query tsquery, p_paths text[], p_roots text[], p_deleted boolean)
    RETURNS TABLE (${TEXT_MATCH_COLUMNS}) LANGUAGE plpgsql VOLATILE SECURITY DEFINER ROWS 500
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE ids text[]; paths text[]; plan json; matches float8; scoped float8; walk boolean := false;
    BEGIN
      IF p_query IS NULL OR numnode(p_query) = 0 THEN RETURN; END IF;
      -- The namespaces the caller may read (the policies' set, from session_user), live, in the scope (no paths and
      -- no roots: all of them). (EXECUTE: no name here is taken for one of the output columns.)
      EXECUTE 'SELECT array_agg(n.id), array_agg(n.path) FROM cairn.namespaces n
        WHERE n.id IN (SELECT cairn.ns_ids(1)) AND n.deleted_at IS NULL
          AND (($1 IS NULL AND $2 IS NULL) OR n.path = ANY($1)
               OR EXISTS (SELECT 1 FROM unnest($2) r WHERE n.path = r OR left(n.path, length(r) + 1) = r || ''.''))'
        INTO ids, paths USING p_paths, p_roots;
      IF ids IS NULL THEN RETURN; END IF;
      -- A scope: its own rows tested one by one (ts_match_vq, which no index answers) when the index would list more
      -- than 4 matches per row of the scope (a common term), else the index (the planner may also intersect it with
      -- the scope's rows). The planner's own choice between the two is wrong for common terms: it prices the index's
      -- long posting lists far below what they cost. Both counts are its estimates.
      IF p_paths IS NOT NULL OR p_roots IS NOT NULL THEN
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM cairn.memories m WHERE m.fts @@ $1' INTO plan USING p_query;
        matches := (plan->0->'Plan'->>'Plan Rows')::float8;
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM cairn.memories m WHERE m.ns_id = ANY($1)' INTO plan USING ids;
        scoped := (plan->0->'Plan'->>'Plan Rows')::float8;
        walk := matches > 4 * scoped;
      END IF;
      -- Planned per call with the values; the matches are found first (OFFSET 0: whatever the join), then given their
      -- namespace's path.
      RETURN QUERY EXECUTE 'SELECT m.rowid, m.id, m.ns_id, p.path, m.key, m.kind, m.tags, m.importance, m.confidence, m.source,
          m.properties, m.anchors, m.created_at, m.updated_at, m.valid_from, m.valid_to, m.expires_at, m.last_accessed_at, m.status,
          m.deleted_at, m.fts
        FROM (SELECT * FROM cairn.memories m WHERE m.ns_id = ANY($2) AND ($3 OR m.deleted_at IS NULL) AND '
          || CASE WHEN walk THEN 'ts_match_vq(m.fts, $1)' ELSE 'm.fts @@ $1' END || ' OFFSET 0) m
        JOIN unnest($2, $4) p(id, path) ON p.id = m.ns_id'
        USING p_query, ids, coalesce(p_deleted, false), paths;
    END $$;
`;

/** The function's scope arguments for a (validated) scope: exact paths and subtree roots; both null for the whole store. */
export function scopeArgs(scope: Scope | undefined): { paths: string[] | null; roots: string[] | null } {
  if (!scope || (scope.namespaces === undefined && scope.root === undefined)) return { paths: null, roots: null };
  const roots: string[] = [];
  if (scope.root !== undefined) roots.push(scope.root);
  if (effectiveIncludeUser(scope)) roots.push(USER_ROOT);
  return { paths: scope.namespaces ?? [], roots };
}

/**
 * A tsvector whose text form is at most this long (about 100 distinct words) has an entry in the scope-text index;
 * the bound keeps every entry well under a btree row's limit (2,704 bytes), whatever the memory, so no write can fail
 * for its index entry. Longer ones are listed by the small scope-text-long index instead.
 */
export const SCOPE_TEXT_MAX = 1200;
export const SCOPE_TEXT_INDEX = 'memories_scope_text';
export const SCOPE_TEXT_LONG_INDEX = 'memories_scope_text_long';

const LIVE_CURRENT = `deleted_at IS NULL AND status <> 'superseded' AND status <> 'proposed'`;

/**
 * The scope-text indexes (schema v12): `short`, a covering btree of each live current memory's namespace with its
 * tsvector and the columns the ranked walk reads (visibility, row id), so walking a scope's memories for a common
 * term is an index-only scan of its namespaces' entries (at 1M, a 20k-memory project: ~1,300 pages instead of
 * 20,000 table pages spread over the whole table); `long`, the few memories whose tsvector is too long for it.
 */
export function scopeTextIndexSql(part: 'short' | 'long', o: { name?: string; concurrently?: boolean } = {}): string {
  const name = o.name ?? (part === 'short' ? SCOPE_TEXT_INDEX : SCOPE_TEXT_LONG_INDEX);
  const head = `CREATE INDEX ${o.concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${name} ON cairn.memories`;
  return part === 'short'
    ? `${head} (ns_id) INCLUDE (fts, rowid, expires_at, valid_from, valid_to)
       WHERE ${LIVE_CURRENT} AND octet_length(fts::text) <= ${SCOPE_TEXT_MAX}`
    : `${head} (ns_id) WHERE ${LIVE_CURRENT} AND octet_length(fts::text) > ${SCOPE_TEXT_MAX}`;
}

/**
 * Migration 12: cairn.text_matches ranks inside when asked. With `p_top` (and the arm's `p_now`, ranking weights and,
 * for a two-tier pass, its every-term query `p_every`), only live, current memories visible at `p_now` are considered
 * and only those that can still be in the arm's first `p_top` come back: every row whose (every-term match, rank) is
 * at least the `p_top`-th best one's, ties included, so the arm's own ORDER BY (which breaks ties by scope, time and
 * id) and LIMIT over them give the same answer as over all matches. The rank is the arm's expression, computed with
 * the same function on the same values. A scope's walk then reads the scope-text indexes only (index-only: no table
 * page per memory), and the winners' rows are read once at the end; a whole-store search no longer hands all its
 * matches (400k rows with their tsvectors at 1M, spilled to disk) to the arm's statement. Without `p_top` (a filter,
 * an include flag), everything as in migration 9. The added arguments have defaults: a call with the first four
 * (an older daemon during an upgrade) is answered as before.
 */
export const TEXT_MATCHES_RANKED_MIGRATION = `
  DROP FUNCTION cairn.text_matches(tsquery, text[], text[], boolean);
  CREATE FUNCTION cairn.text_matches(p_query tsquery, p_paths text[], p_roots text[], p_deleted boolean,
      p_every tsquery DEFAULT NULL, p_weights float4[] DEFAULT NULL, p_top integer DEFAULT NULL, p_now bigint DEFAULT NULL)
    RETURNS TABLE (${TEXT_MATCH_COLUMNS}) LANGUAGE plpgsql VOLATILE SECURITY DEFINER ROWS 500
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE ids text[]; paths text[]; plan json; matches float8; scoped float8; walk boolean := false; src text; cand text;
    BEGIN
      IF p_query IS NULL OR numnode(p_query) = 0 THEN RETURN; END IF;
      EXECUTE 'SELECT array_agg(n.id), array_agg(n.path) FROM cairn.namespaces n
        WHERE n.id IN (SELECT cairn.ns_ids(1)) AND n.deleted_at IS NULL
          AND (($1 IS NULL AND $2 IS NULL) OR n.path = ANY($1)
               OR EXISTS (SELECT 1 FROM unnest($2) r WHERE n.path = r OR left(n.path, length(r) + 1) = r || ''.''))'
        INTO ids, paths USING p_paths, p_roots;
      IF ids IS NULL THEN RETURN; END IF;
      IF p_paths IS NOT NULL OR p_roots IS NOT NULL THEN
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM cairn.memories m WHERE m.fts @@ $1' INTO plan USING p_query;
        matches := (plan->0->'Plan'->>'Plan Rows')::float8;
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM cairn.memories m WHERE m.ns_id = ANY($1)' INTO plan USING ids;
        scoped := (plan->0->'Plan'->>'Plan Rows')::float8;
        walk := matches > 4 * scoped;
      END IF;
      IF p_top IS NULL OR p_top < 1 OR p_now IS NULL OR p_weights IS NULL OR coalesce(p_deleted, false) THEN
        RETURN QUERY EXECUTE 'SELECT m.rowid, m.id, m.ns_id, p.path, m.key, m.kind, m.tags, m.importance, m.confidence, m.source,
            m.properties, m.anchors, m.created_at, m.updated_at, m.valid_from, m.valid_to, m.expires_at, m.last_accessed_at, m.status,
            m.deleted_at, m.fts
          FROM (SELECT * FROM cairn.memories m WHERE m.ns_id = ANY($2) AND ($3 OR m.deleted_at IS NULL) AND '
            || CASE WHEN walk THEN 'ts_match_vq(m.fts, $1)' ELSE 'm.fts @@ $1' END || ' OFFSET 0) m
          JOIN unnest($2, $4) p(id, path) ON p.id = m.ns_id'
          USING p_query, ids, coalesce(p_deleted, false), paths;
        RETURN;
      END IF;
      -- Ranked: the arm's tier (every term, for a two-tier pass) and rank of each live, current, visible match.
      src := 'SELECT m.rowid, coalesce(ts_match_vq(m.fts, $3), false) AS e,
          CASE WHEN coalesce(ts_match_vq(m.fts, $3), false) THEN ts_rank_cd($7, m.fts, $3, 1) ELSE ts_rank_cd($7, m.fts, $1, 1) END AS s
        FROM cairn.memories m WHERE m.ns_id = ANY($2) AND m.deleted_at IS NULL
          AND m.status <> ''superseded'' AND m.status <> ''proposed''
          AND (m.expires_at IS NULL OR m.expires_at > $5) AND (m.valid_from IS NULL OR m.valid_from <= $5)
          AND (m.valid_to IS NULL OR m.valid_to > $5) AND ';
      -- A walk reads the scope-text indexes (their predicates spelled as theirs); else the GIN index.
      cand := CASE WHEN walk
        THEN src || 'octet_length(m.fts::text) <= ${SCOPE_TEXT_MAX} AND ts_match_vq(m.fts, $1) UNION ALL '
          || src || 'octet_length(m.fts::text) > ${SCOPE_TEXT_MAX} AND ts_match_vq(m.fts, $1)'
        ELSE src || 'm.fts @@ $1' END;
      RETURN QUERY EXECUTE 'WITH c AS MATERIALIZED (' || cand || '),
          b AS (SELECT e, s FROM c ORDER BY e DESC, s DESC OFFSET $6 - 1 LIMIT 1)
        SELECT m.rowid, m.id, m.ns_id, p.path, m.key, m.kind, m.tags, m.importance, m.confidence, m.source,
          m.properties, m.anchors, m.created_at, m.updated_at, m.valid_from, m.valid_to, m.expires_at, m.last_accessed_at, m.status,
          m.deleted_at, m.fts
        FROM c JOIN cairn.memories m ON m.rowid = c.rowid JOIN unnest($2, $4) p(id, path) ON p.id = m.ns_id
        WHERE NOT EXISTS (SELECT 1 FROM b) OR EXISTS (SELECT 1 FROM b WHERE (c.e, c.s) >= (b.e, b.s))'
        USING p_query, ids, p_every, paths, p_now, p_top, p_weights;
    END $$;
`;
