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
