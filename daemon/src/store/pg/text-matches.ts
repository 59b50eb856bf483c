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

/**
 * The function's choice for a scope (v9 and v12): its own rows tested one by one (ts_match_vq, which no index
 * answers) when the index would list more than 4 matches per row of the scope (a common term), else the index.
 */
const WALK_DECISION = `      IF p_paths IS NOT NULL OR p_roots IS NOT NULL THEN
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM cairn.memories m WHERE m.fts @@ $1' INTO plan USING p_query;
        matches := (plan->0->'Plan'->>'Plan Rows')::float8;
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM cairn.memories m WHERE m.ns_id = ANY($1)' INTO plan USING ids;
        scoped := (plan->0->'Plan'->>'Plan Rows')::float8;
        walk := matches > 4 * scoped;
      END IF;
`;

/** Every match of the scope, unranked (deleted ones when asked), `rank` appended to the columns (v12: NULL). */
function everyMatchSql(rank: string): string {
  return `      RETURN QUERY EXECUTE 'SELECT m.rowid, m.id, m.ns_id, p.path, m.key, m.kind, m.tags, m.importance, m.confidence, m.source,
          m.properties, m.anchors, m.created_at, m.updated_at, m.valid_from, m.valid_to, m.expires_at, m.last_accessed_at, m.status,
          m.deleted_at, m.fts${rank}
        FROM (SELECT * FROM cairn.memories m WHERE m.ns_id = ANY($2) AND ($3 OR m.deleted_at IS NULL) AND '
          || CASE WHEN walk THEN 'ts_match_vq(m.fts, $1)' ELSE 'm.fts @@ $1' END || ' OFFSET 0) m
        JOIN unnest($2, $4) p(id, path) ON p.id = m.ns_id'
        USING p_query, ids, coalesce(p_deleted, false), paths;
`;
}

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
${WALK_DECISION}      -- Planned per call with the values; the matches are found first (OFFSET 0: whatever the join), then given their
      -- namespace's path.
${everyMatchSql('')}    END $$;
`;

/** The function's scope arguments for a (validated) scope: exact paths and subtree roots; both null for the whole store. */
export function scopeArgs(scope: Scope | undefined): { paths: string[] | null; roots: string[] | null } {
  if (!scope || (scope.namespaces === undefined && scope.root === undefined)) return { paths: null, roots: null };
  const roots: string[] = [];
  if (scope.root !== undefined) roots.push(scope.root);
  if (effectiveIncludeUser(scope)) roots.push(USER_ROOT);
  return { paths: scope.namespaces ?? [], roots };
}

/** ts_rank weights {D, C, B, A}: summary, value+identifiers, tags, key (the FTS5 arm's 0.5 : 1 : 2 : 4). */
export const RANK_WEIGHTS = '{0.125, 0.25, 0.5, 1.0}';

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
 * tsvector and the columns the ranked walk reads (visibility, order, row id), so walking a scope's memories for a common
 * term is an index-only scan of its namespaces' entries (at 1M, a 20k-memory project: ~1,300 pages instead of
 * 20,000 table pages spread over the whole table); `long`, the few memories whose tsvector is too long for it.
 */
export function scopeTextIndexSql(part: 'short' | 'long', o: { name?: string; concurrently?: boolean } = {}): string {
  const name = o.name ?? (part === 'short' ? SCOPE_TEXT_INDEX : SCOPE_TEXT_LONG_INDEX);
  const head = `CREATE INDEX ${o.concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${name} ON cairn.memories`;
  return part === 'short'
    ? `${head} (ns_id) INCLUDE (fts, rowid, id, updated_at, expires_at, valid_from, valid_to)
       WHERE ${LIVE_CURRENT} AND octet_length(fts::text) <= ${SCOPE_TEXT_MAX}`
    : `${head} (ns_id) WHERE ${LIVE_CURRENT} AND octet_length(fts::text) > ${SCOPE_TEXT_MAX}`;
}

/** What the v12 function returns: migration 9's columns and the match's rank. */
export const RANKED_MATCH_COLUMNS = `${TEXT_MATCH_COLUMNS}, rank double precision`;

/**
 * Migration 12: cairn.text_matches ranks the matches itself, and, asked for the arm's first `p_top`, returns only
 * those that can be in them.
 *
 * The rank (given `p_terms`, the query's terms one by one, the weights and the time) is BM25's shape over
 * PostgreSQL's own per-term scores: the sum over the terms of idf(term) x ts_rank(weights, fts, term, 0) (ts_rank of
 * one term: its weighted occurrences, saturating), idf = ln(1 + (n - df + 0.5) / (df + 0.5)), where n is the number
 * of matches of the memory's tier (with every term `p_every`, or not) that the search could show (live, current,
 * visible at `p_now`, in the scope, the caller's to read) and df those with the term: a rare term outweighs a common
 * one, as in the SQLite store's BM25, and no count ever includes a memory the caller cannot read. Per tier, so the
 * every-term tier's ranks do not depend on the any-term matches: the arm's every-term statement alone (search.ts, a
 * large scope) ranks its rows exactly as the two-tier statement does. Until v12 the arm ranked with ts_rank_cd
 * (normalization 1), with no term weighting at all: on LoCoMo the team store's full text found 0.470 / 0.460 of the
 * evidence turns in its top 5 (conversations 0-2 / 3-4) where the SQLite store's found 0.560 / 0.564; this rank finds
 * 0.560-0.575 / 0.538-0.545 (bench/README.md, "The team store's full text on LoCoMo").
 *
 * With `p_top` (and no deleted memories asked for), only live, current memories visible at `p_now` are candidates,
 * and the first `p_top` of them in the arm's own order come back: every-term match `p_every` first, rank, the scope's
 * own namespaces before the user tree's (`p_user`, the user root when the scope takes it in: search.ts
 * ownScopeRank), newer first, id. The arm's ORDER BY and LIMIT over them give the same answer as over every match.
 * A scope's walk then reads the scope-text indexes (index-only: no table page per memory) and the winners' rows are
 * read once at the end; a whole-store search no longer hands all its matches (400k rows with their tsvectors at 1M,
 * spilled to disk) to the arm's statement. The added arguments have defaults:
 * a call with the first four (an older daemon during an upgrade) gets every match, unranked (rank NULL), as before.
 */
export const TEXT_MATCHES_RANKED_MIGRATION = `
  DROP FUNCTION cairn.text_matches(tsquery, text[], text[], boolean);
  CREATE FUNCTION cairn.text_matches(p_query tsquery, p_paths text[], p_roots text[], p_deleted boolean,
      p_terms tsquery[] DEFAULT NULL, p_every tsquery DEFAULT NULL, p_weights float4[] DEFAULT NULL,
      p_top integer DEFAULT NULL, p_now bigint DEFAULT NULL, p_user text DEFAULT NULL)
    RETURNS TABLE (${RANKED_MATCH_COLUMNS}) LANGUAGE plpgsql VOLATILE SECURITY DEFINER ROWS 500
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE ids text[]; paths text[]; owns integer[]; plan json; matches float8; scoped float8; walk boolean := false; top boolean;
      visible text; src text; cand text; per_term text := ''; dfs text := ''; score text := '0'; k integer;
    BEGIN
      IF p_query IS NULL OR numnode(p_query) = 0 THEN RETURN; END IF;
      -- With each namespace, its place on ties (the arm's ownScopeRank): 1 under p_user (the user tree, when the
      -- scope takes it in) unless also in the scope's own paths or roots, else 0.
      EXECUTE 'SELECT array_agg(n.id), array_agg(n.path), array_agg(CASE WHEN $3 IS NOT NULL
            AND (n.path = $3 OR left(n.path, length($3) + 1) = $3 || ''.'') AND NOT (n.path = ANY(coalesce($1, ''{}''))
            OR EXISTS (SELECT 1 FROM unnest($2) r WHERE r <> $3 AND (n.path = r OR left(n.path, length(r) + 1) = r || ''.'')))
          THEN 1 ELSE 0 END) FROM cairn.namespaces n
        WHERE n.id IN (SELECT cairn.ns_ids(1)) AND n.deleted_at IS NULL
          AND (($1 IS NULL AND $2 IS NULL) OR n.path = ANY($1)
               OR EXISTS (SELECT 1 FROM unnest($2) r WHERE n.path = r OR left(n.path, length(r) + 1) = r || ''.''))'
        INTO ids, paths, owns USING p_paths, p_roots, p_user;
      IF ids IS NULL THEN RETURN; END IF;
${WALK_DECISION}      IF p_terms IS NULL OR cardinality(p_terms) = 0 OR p_weights IS NULL OR p_now IS NULL THEN
${everyMatchSql(', NULL::float8')}        RETURN;
      END IF;
      top := p_top IS NOT NULL AND p_top > 0 AND NOT coalesce(p_deleted, false);
      -- Each term's score and match, unrolled (one expression per term: no per-row subquery).
      FOR k IN 1 .. cardinality(p_terms) LOOP
        per_term := per_term || format(', ts_rank($6, m.fts, $7[%s], 0) AS r%s, coalesce(ts_match_vq(m.fts, $7[%s]), false) AS h%s', k, k, k, k);
        -- idf once per tier, in float8 (numeric ln per row and term cost 190 ms for 12k matches of six terms at 1M).
        dfs := dfs || format(', ln(1 + (count(*) FILTER (WHERE c.v) - count(*) FILTER (WHERE c.v AND c.h%s) + 0.5)::float8
          / (count(*) FILTER (WHERE c.v AND c.h%s) + 0.5)::float8) AS idf%s', k, k, k);
        score := score || format(' + d.idf%s * c.r%s', k, k);
      END LOOP;
      visible := 'm.deleted_at IS NULL AND m.status <> ''superseded'' AND m.status <> ''proposed''
        AND (m.expires_at IS NULL OR m.expires_at > $5) AND (m.valid_from IS NULL OR m.valid_from <= $5)
        AND (m.valid_to IS NULL OR m.valid_to > $5)';
      IF top THEN
        -- Visible matches only; a walk reads the scope-text indexes (their predicates spelled as theirs), else the GIN index.
        src := 'SELECT m.rowid, m.id, m.updated_at, o.own, coalesce(ts_match_vq(m.fts, $3), false) AS e, true AS v' || per_term
          || ' FROM cairn.memories m JOIN unnest($2, $9) o(nid, own) ON o.nid = m.ns_id WHERE m.ns_id = ANY($2) AND '
          || visible || ' AND ';
        cand := CASE WHEN walk
          THEN src || 'octet_length(m.fts::text) <= ${SCOPE_TEXT_MAX} AND ts_match_vq(m.fts, $1) UNION ALL '
            || src || 'octet_length(m.fts::text) > ${SCOPE_TEXT_MAX} AND ts_match_vq(m.fts, $1)'
          ELSE src || 'm.fts @@ $1' END;
        RETURN QUERY EXECUTE 'WITH c AS MATERIALIZED (' || cand || '),
            d AS (SELECT c.e' || dfs || ' FROM c GROUP BY c.e),
            s AS (SELECT c.rowid, (' || score || ')::float8 AS rank FROM c JOIN d ON d.e = c.e
              ORDER BY c.e DESC, rank DESC, c.own ASC, c.updated_at DESC, c.id ASC LIMIT $8)
          SELECT m.rowid, m.id, m.ns_id, p.path, m.key, m.kind, m.tags, m.importance, m.confidence, m.source,
            m.properties, m.anchors, m.created_at, m.updated_at, m.valid_from, m.valid_to, m.expires_at, m.last_accessed_at, m.status,
            m.deleted_at, m.fts, s.rank
          FROM s JOIN cairn.memories m ON m.rowid = s.rowid JOIN unnest($2, $4) p(id, path) ON p.id = m.ns_id'
          USING p_query, ids, p_every, paths, p_now, p_weights, p_terms, p_top, owns;
      ELSE
        -- Every match of the scope (deleted ones when asked), ranked with the statistics of the visible ones.
        RETURN QUERY EXECUTE 'WITH c AS MATERIALIZED (SELECT m.*, coalesce(ts_match_vq(m.fts, $3), false) AS e, (' || visible || ') AS v'
              || per_term || ' FROM cairn.memories m WHERE m.ns_id = ANY($2) AND ($9 OR m.deleted_at IS NULL) AND '
              || CASE WHEN walk THEN 'ts_match_vq(m.fts, $1)' ELSE 'm.fts @@ $1' END || '),
            d AS (SELECT c.e' || dfs || ' FROM c GROUP BY c.e)
          SELECT c.rowid, c.id, c.ns_id, p.path, c.key, c.kind, c.tags, c.importance, c.confidence, c.source,
            c.properties, c.anchors, c.created_at, c.updated_at, c.valid_from, c.valid_to, c.expires_at, c.last_accessed_at, c.status,
            c.deleted_at, c.fts, (' || score || ')::float8
          FROM c JOIN d ON d.e = c.e JOIN unnest($2, $4) p(id, path) ON p.id = c.ns_id'
          USING p_query, ids, p_every, paths, p_now, p_weights, p_terms, p_top, coalesce(p_deleted, false);
      END IF;
    END $$;
`;
