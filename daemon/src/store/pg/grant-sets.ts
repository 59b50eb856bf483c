/**
 * Migration 7 of the team schema: the namespaces a role may use, computed as one set-based query.
 *
 * Every row-level-security policy of the memory tables asks `ns_id IN (SELECT cairn.ns_ids(level))`, a hashed set
 * evaluated once per statement and policy (a write statement evaluates it four or five times: the UPDATE's USING and
 * WITH CHECK, the SELECT policy RETURNING needs, ...). Up to v6 `cairn.ns_ids` called `cairn.allowed(path, level)`
 * for every namespace of the team, a SECURITY DEFINER function with its own search_path, so each call saved and
 * restored settings: with 50 namespaces that was 250 function calls per write statement, a fifth of the server's
 * CPU per team write (bench/README.md, "Team memory"). Now the role's grants are joined to the namespaces in one query
 * of the same predicate (a grant at a root covers the root and every path under it, a member of the granted role
 * holds it), so who may do what is exactly as before; test/team/rls-matrix.test.ts checks it unchanged.
 */
export const GRANT_SETS_MIGRATION = `
  CREATE OR REPLACE FUNCTION cairn.ns_ids(lvl int) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
      SELECT n.id FROM cairn.namespaces n
      WHERE EXISTS (SELECT 1 FROM cairn.grants g
        WHERE g.level >= lvl AND (n.path = g.root OR left(n.path, length(g.root) + 1) = g.root || '.')
          AND pg_has_role(session_user, g.role, 'MEMBER'))
    $$;
`;

/**
 * Migration 10: the same two grant checks (`ns_ids` above and `allowed(path, level)`, the namespaces' policies' and
 * the server-side functions' check) in plpgsql instead of SQL. Both are SECURITY DEFINER with their own search_path,
 * so PostgreSQL never inlines them, and a non-inlined SQL function parses and plans its body again in every query
 * (and, called from plpgsql, in every transaction) that calls it: a team write called them three to five times
 * (the INSERT's WITH CHECK, the SELECT policy RETURNING needs, the namespace's read policy, record_write's write check),
 * and the parser and planner were what a write without a vector spent most of its server time in (bench/README.md,
 * "Where a team write's time goes", second pass). A plpgsql function keeps its plan for the session. Same predicates,
 * same results: test/team/rls-matrix.test.ts checks who may do what, unchanged.
 */
export const GRANT_CHECKS_PLPGSQL_MIGRATION = `
  CREATE OR REPLACE FUNCTION cairn.ns_ids(lvl int) RETURNS SETOF text LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    BEGIN
      RETURN QUERY SELECT n.id FROM cairn.namespaces n
      WHERE EXISTS (SELECT 1 FROM cairn.grants g
        WHERE g.level >= lvl AND (n.path = g.root OR left(n.path, length(g.root) + 1) = g.root || '.')
          AND pg_has_role(session_user, g.role, 'MEMBER'));
    END $$;
  CREATE OR REPLACE FUNCTION cairn.allowed(p text, lvl int) RETURNS boolean LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    BEGIN
      RETURN EXISTS (SELECT 1 FROM cairn.grants g
        WHERE g.level >= lvl AND (p = g.root OR left(p, length(g.root) + 1) = g.root || '.')
          AND pg_has_role(session_user, g.role, 'MEMBER'));
    END $$;
`;
