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
