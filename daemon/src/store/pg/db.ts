/**
 * Connections to the team database: a small pool, transactions that retry
 * serialization failures, deadlocks and racing creates, and one mapping from
 * PostgreSQL errors to Cairn's typed errors. An unreachable server becomes
 * `Unavailable` within the connect timeout (never a hang); the pool opens new
 * connections on the next request, so a daemon reconnects by itself.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { parse as parseConnectionString } from 'pg-connection-string';
import { CairnError } from '../../protocol/errors';
import { readEnv, processEnv, type Env } from '../../protocol/settings';
import { EF_SEARCH } from './vector-index';

export type Sql = pg.PoolClient | pg.Pool;

export interface PgOptions {
  /** postgres://user@host:port/db (a password in it is accepted but prefer PGPASSWORD or ~/.pgpass). */
  url: string;
  /** Give up connecting after this long (ms). */
  connectTimeoutMs?: number;
  /** Cancel any statement running longer (ms). */
  statementTimeoutMs?: number;
  poolSize?: number;
  /**
   * Scopes with fewer memories are searched exactly where a scope-vector index exists (vector-index.ts
   * EXACT_SCOPE_ROWS by default; tests set it low to exercise the HNSW pass on a small table).
   */
  exactScopeRows?: number;
}

const BIGINT = 20;
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === BIGINT ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * The password, as libpq finds it: PGPASSWORD, else the first matching line
 * of PGPASSFILE or ~/.pgpass (host:port:database:user:password, `*` matches
 * anything, `\:` is a colon); the file is ignored unless only its owner can
 * read it. Undefined when none applies.
 */
export function lookupPassword(
  p: { host?: string; port?: number | string; database?: string; user?: string },
  env: Env = processEnv(),
): string | undefined {
  const password = readEnv('PGPASSWORD', env);
  if (password) return password;
  const file = readEnv('PGPASSFILE', env) ?? path.join(os.homedir(), '.pgpass');
  let text: string;
  try {
    const st = fs.statSync(file);
    if (!st.isFile() || (st.mode & 0o077) !== 0) return undefined;
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const want = [p.host ?? 'localhost', String(p.port ?? 5432), p.database ?? p.user ?? '', p.user ?? ''];
  for (const line of text.split(/\r?\n/)) {
    if (!line || line.startsWith('#')) continue;
    const fields: string[] = [];
    let cur = '';
    for (let i = 0; i < line.length; i++) {
      if (line[i] === '\\' && i + 1 < line.length) cur += line[++i];
      else if (line[i] === ':' && fields.length < 4) {
        fields.push(cur);
        cur = '';
      } else cur += line[i];
    }
    fields.push(cur);
    if (fields.length !== 5) continue;
    const hostOk = fields[0] === '*' || fields[0] === want[0] || (fields[0] === 'localhost' && want[0].startsWith('/'));
    if (hostOk && [1, 2, 3].every((i) => fields[i] === '*' || fields[i] === want[i])) return fields[4];
  }
  return undefined;
}

/**
 * A connection's settings from its URL. The URL is parsed here (by pg's own parser) rather than handed to pg as
 * `connectionString`: pg lets a connection string's fields override the config, an absent password included, and then
 * falls back to its deprecated built-in pgpass lookup (which prints a DeprecationWarning on every run). Without a
 * password in the URL, `password` is our function: PGPASSWORD, else the pgpass file (lookupPassword), asked per
 * connection. Also what tests' plain SQL sessions connect with (test/team/pg-server.ts sessionConfig).
 */
export function urlConfig(url: string): pg.ClientConfig {
  let fromUrl: Record<string, unknown>;
  try {
    fromUrl = { ...parseConnectionString(url) };
  } catch {
    fromUrl = { connectionString: url }; // pg reports the bad URL when it connects
  }
  for (const k of Object.keys(fromUrl)) if (fromUrl[k] === null || fromUrl[k] === undefined || fromUrl[k] === '') delete fromUrl[k];
  return {
    ...(fromUrl as pg.ClientConfig),
    ...(typeof fromUrl.password === 'string'
      ? {}
      : {
          // pg calls this with the connection parameters; undefined means "no password" (its types say otherwise).
          password: (async (cp: { host?: string; port?: number; database?: string; user?: string }) =>
            lookupPassword(cp)) as unknown as () => Promise<string>,
        }),
  };
}

/** The pool's settings: Cairn's defaults, then what the URL says (urlConfig), which wins as with pg's connectionString. */
export function poolConfig(o: PgOptions): pg.PoolConfig {
  return {
    max: o.poolSize ?? 8,
    connectionTimeoutMillis: o.connectTimeoutMs ?? 3000,
    statement_timeout: o.statementTimeoutMs ?? 15000,
    query_timeout: (o.statementTimeoutMs ?? 15000) + 2000,
    idleTimeoutMillis: 30000,
    // hnsw.ef_search: the HNSW index's candidate list (store/pg/vector-index.ts).
    options: `-c search_path=cairn,public -c hnsw.ef_search=${EF_SEARCH}`,
    application_name: 'cairn',
    types,
    ...urlConfig(o.url),
  };
}

/** The URL without its password, for logs and status. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const k of [...u.searchParams.keys()]) if (/pass/i.test(k)) u.searchParams.set(k, '***');
    return u.toString();
  } catch {
    return '(unparseable team database URL)';
  }
}

const RETRYABLE = new Set(['40001', '40P01']); // serialization failure, deadlock
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'ENOENT',
]);

export function isConnectionError(e: unknown): boolean {
  const err = e as { code?: string; message?: string };
  if (err?.code && CONNECTION_CODES.has(err.code)) return true;
  if (err?.code && /^(08|57P0[1-3])/.test(err.code)) return true; // connection exception, admin shutdown, cannot connect now
  const m = err?.message ?? '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connect ECONN|Query read timeout|Connection ended/i.test(
    m,
  );
}

/** Map any failure of a PostgreSQL call to a CairnError (CairnErrors pass through). */
export function mapError(e: unknown): Error {
  if (e instanceof CairnError) return e;
  const err = e as { code?: string; message?: string; table?: string };
  if (isConnectionError(e))
    return new CairnError('Unavailable', `the team database cannot be reached: ${scrub(err.message ?? String(e))}`, { store: 'team' });
  if (err.code === '42501')
    return new CairnError('Forbidden', `the team database refused this for your database role: ${scrub(err.message ?? '')}`, {
      store: 'team',
    });
  if (err.code === '57014')
    return new CairnError('Unavailable', 'the team database did not answer in time (statement timeout)', { store: 'team' });
  if (err.code === '28P01' || err.code === '28000')
    return new CairnError('Unavailable', `the team database refused the login: ${scrub(err.message ?? '')}`, { store: 'team' });
  if (err.code === '3D000' || err.code === '3F000' || err.code === '42P01')
    return new CairnError('Unavailable', `the team database is not set up (run \`cairn team init\`): ${scrub(err.message ?? '')}`, {
      store: 'team',
    });
  return e instanceof Error ? e : new Error(String(e));
}

/** Never let a password reach a message. */
function scrub(s: string): string {
  return s.replace(/(postgres(?:ql)?:\/\/[^:/@\s]*:)[^@\s]*@/gi, '$1***@').replace(/password=\S+/gi, 'password=***');
}

export interface TxOptions {
  attempts?: number;
}

/**
 * Run `fn` in one transaction (READ COMMITTED; writers lock the rows they
 * change). Serialization failures, deadlocks and unique violations from two
 * writers creating the same row at once are retried with jittered back-off;
 * everything else is mapped and thrown. Nothing is acknowledged before COMMIT.
 */
export async function transaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>, o: TxOptions = {}): Promise<T> {
  const attempts = o.attempts ?? 8;
  for (let i = 0; ; i++) {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (e) {
      throw mapError(e);
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      const r = await fn(client);
      await client.query('COMMIT');
      return r;
    } catch (e) {
      broken = isConnectionError(e);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      const code = (e as { code?: string }).code;
      const retry =
        code !== undefined &&
        (RETRYABLE.has(code) || (code === '23505' && (e as { constraint?: string }).constraint?.startsWith('cairn_race_')));
      if (retry && i + 1 < attempts) {
        await new Promise((r) => setTimeout(r, Math.random() * 10 * (i + 1)));
        continue;
      }
      throw mapError(e);
    } finally {
      client.release(broken ? true : undefined);
    }
  }
}

/** One statement outside a transaction, errors mapped. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rows are typed by each caller (R); untyped callers read a few named columns
export async function query<R extends pg.QueryResultRow = any>(db: Sql, text: string, values: unknown[] = []): Promise<R[]> {
  try {
    return (await db.query<R>(text, values)).rows;
  } catch (e) {
    throw mapError(e);
  }
}

export { pg };
