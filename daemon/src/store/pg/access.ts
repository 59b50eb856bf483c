/**
 * What a database role is missing, said in Cairn's terms. PostgreSQL answers a
 * role without any grant with "permission denied for schema cairn" or, through
 * the search path, "relation memories does not exist", and a role without the
 * level a write needs with a row-level-security refusal; members and their
 * admins need the grant that is missing and the `cairn team grant` command that
 * gives it. Nothing here widens what a role may do: it only reads
 * `cairn.allowed()` (the function the policies use) and the role's own name.
 */
import { CairnError } from '../../protocol/errors';
import { MEMBER_ROLE, type Level } from './schema';
import { isConnectionError, mapError, type Sql } from './db';

export interface Access {
  user: string;
  /** The Cairn schema exists in this database. */
  schema: boolean;
  /** The role may use it (it is a member of cairn_member, i.e. somebody ran `cairn team grant` for it). */
  member: boolean;
}

export async function probeAccess(db: Sql): Promise<Access> {
  try {
    const r = (
      await db.query(`SELECT session_user::text AS user,
        to_regnamespace('cairn') IS NOT NULL AS schema,
        CASE WHEN to_regnamespace('cairn') IS NULL THEN false ELSE has_schema_privilege('cairn', 'USAGE') END AS member`)
    ).rows[0] as Access;
    return r;
  } catch (e) {
    throw mapError(e);
  }
}

/** The role has no grant at all: not a member of cairn_member, so it cannot even see the schema. */
export function noGrant(user: string): CairnError {
  return new CairnError(
    'Forbidden',
    `the database role ${user} has no grant on the team database (it is not a member of ${MEMBER_ROLE}): an admin runs \`cairn team grant ${user} ROOT read|write|admin\``,
    { store: 'team', role: user },
  );
}

/**
 * After open() failed: a role that cannot use an existing Cairn schema gets `Forbidden` naming the missing grant
 * (instead of "not set up" or "permission denied for schema cairn"); any other failure is returned as it was.
 */
export async function explainOpenFailure(db: Sql, e: unknown): Promise<unknown> {
  if (isConnectionError(e) || (e instanceof CairnError && !['Forbidden', 'Unavailable'].includes(e.codeName))) return e;
  if (e instanceof CairnError && e.codeName === 'Unavailable' && !/not set up|no Cairn schema/.test(e.message)) return e;
  try {
    const a = await probeAccess(db);
    if (a.schema && !a.member) return noGrant(a.user);
  } catch {
    /* the first failure says more */
  }
  return e;
}

/** Does the session's role hold `level` on `namespace` (by the policies' own function)? Null when unknown. */
export async function holds(db: Sql, namespace: string, level: Level): Promise<boolean | null> {
  try {
    const r = await db.query(`SELECT cairn.allowed($1, $2) AS ok`, [namespace, { read: 1, write: 2, admin: 3 }[level]]);
    return r.rows[0]?.ok === true;
  } catch {
    return null;
  }
}

/** The namespace of a memory this role can read (for naming what a by-id request lacked), or null. */
export async function namespaceOf(db: Sql, id: string): Promise<string | null> {
  try {
    const r = await db.query(`SELECT n.path FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = $1`, [id]);
    return (r.rows[0]?.path as string | undefined) ?? null;
  } catch {
    return null;
  }
}

/**
 * `Forbidden` that names the grant a request lacks: the role, the level, the namespace (a grant on it or on any
 * root above it serves) and the command an admin runs. `cause` (PostgreSQL's or the store's refusal) is kept last.
 */
export function missingGrant(o: {
  user: string;
  level: Level;
  namespace: string;
  /** What the request does to the namespace: "write", "read", "purge in"... */
  verb: string;
  member: boolean;
  cause?: string;
}): CairnError {
  const head = o.member
    ? `the database role ${o.user} may not ${o.verb} ${o.namespace}: it needs ${o.level} on ${o.namespace} (or on a root above it)`
    : `the database role ${o.user} has no grant on the team database: to ${o.verb} ${o.namespace} it needs ${o.level} on ${o.namespace} (or on a root above it)`;
  return new CairnError(
    'Forbidden',
    `${head}; an admin runs \`cairn team grant ${o.user} ${o.namespace} ${o.level}\`${o.cause ? ` (${o.cause})` : ''}`,
    { store: 'team', role: o.user, namespace: o.namespace, level: o.level },
  );
}
