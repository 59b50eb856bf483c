/**
 * A real PostgreSQL + pgvector server for tests, started by the test itself
 * (scripts/pg/server.sh: the `pgserver` wheel's binaries, installed with pip on
 * first use) on 127.0.0.1 and a Unix socket in a temporary folder, and stopped
 * with the test. Nothing is mocked.
 *
 * Roles: `postgres` is the superuser (trusted on loopback, runs migrations);
 * member roles log in with passwords found through a private PGPASSFILE.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { urlConfig } from '../../daemon/src/store/pg/db';
import { migrate, grant, type Level, quoteIdent } from '../../daemon/src/store/pg/schema';
import { ROOT } from '../helpers';

const SERVER = path.join(ROOT, 'scripts', 'pg', 'server.sh');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface PgServer {
  port: number;
  dir: string;
  /** Superuser URL of a database. */
  adminUrl(db: string): string;
  /** URL a member role uses (no password in it: it comes from the PGPASSFILE). */
  url(role: string, db: string): string;
  /** A fresh database with the Cairn schema migrated in; with `name`, that database (created if missing, else migrated). */
  createDatabase(prefix?: string, name?: string): Promise<string>;
  /** A login role with a password written to the PGPASSFILE. */
  createRole(name: string): Promise<string>;
  grant(db: string, role: string, root: string, level: Level): Promise<void>;
  admin(db: string): pg.Pool;
  /** Stop the server but keep its data (see start()). */
  halt(): void;
  /** Start it again on the same port and data. */
  start(): void;
  stop(): Promise<void>;
}

let seq = 0;

/**
 * `keep`: the server's folder, created if missing and NOT removed by stop() (benchmarks reuse a large fixture across
 * runs: bench/team.ts --keep); its port is kept beside the data. Without it, a fresh temporary folder.
 */
export async function startPg(o: { keep?: string } = {}): Promise<PgServer> {
  // Directly under the system temp folder: when tests run as root the server runs as `nobody`, which must reach it.
  const dir = o.keep ? path.resolve(o.keep) : fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-pg-'));
  if (o.keep) {
    fs.mkdirSync(dir, { recursive: true });
    // A server an interrupted run left running there: stopped first, so this one starts with this run's settings.
    execFileSync('bash', [SERVER, 'stop', dir], { stdio: 'ignore', timeout: 60_000 });
  }
  const portFile = path.join(dir, 'port');
  let port = 0;
  for (let attempt = 0; ; attempt++) {
    port = o.keep && attempt === 0 && fs.existsSync(portFile) ? Number(fs.readFileSync(portFile, 'utf8')) : await freePort();
    try {
      execFileSync('bash', [SERVER, 'start', dir, String(port)], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
      break;
    } catch (e) {
      if (attempt >= 2)
        throw new Error(`could not start PostgreSQL: ${(e as { stderr?: Buffer }).stderr?.toString() ?? (e as Error).message}`);
    }
  }
  if (o.keep) fs.writeFileSync(portFile, String(port));
  const passfile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-pgpass-')), 'pgpass');
  fs.writeFileSync(passfile, '', { mode: 0o600 });
  process.env.PGPASSFILE = passfile;
  delete process.env.PGPASSWORD;
  const pools = new Map<string, pg.Pool>();
  const adminUrl = (db: string) => `postgres://postgres@127.0.0.1:${port}/${db}`;
  const admin = (db: string) => {
    let p = pools.get(db);
    if (!p) {
      p = new pg.Pool({ connectionString: adminUrl(db), max: 3, options: '-c search_path=cairn,public' });
      p.on('error', () => undefined);
      pools.set(db, p);
    }
    return p;
  };
  return {
    port,
    dir,
    adminUrl,
    url: (role, db) => `postgres://${role}@127.0.0.1:${port}/${db}`,
    admin,
    async createDatabase(prefix = 'cairn', fixed?: string) {
      const name = fixed ?? `${prefix}_${process.pid}_${++seq}`;
      const exists = (await admin('postgres').query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount;
      if (!exists) await admin('postgres').query(`CREATE DATABASE ${quoteIdent(name)}`);
      await migrate(admin(name));
      return name;
    },
    async createRole(name) {
      const password = `pw-${Math.random().toString(36).slice(2)}-${name}`;
      await admin('postgres').query(
        `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${name}') THEN CREATE ROLE ${quoteIdent(name)} LOGIN; END IF; END $$`,
      );
      await admin('postgres').query(`ALTER ROLE ${quoteIdent(name)} PASSWORD '${password}'`);
      fs.appendFileSync(passfile, `127.0.0.1:${port}:*:${name}:${password}\n`);
      return password;
    },
    async grant(db, role, root, level) {
      await grant(admin(db), role, root, level);
    },
    halt() {
      execFileSync('bash', [SERVER, 'stop', dir], { stdio: 'ignore', timeout: 60_000 });
    },
    start() {
      execFileSync('bash', [SERVER, 'start', dir, String(port)], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
    },
    async stop() {
      // A test that failed while holding a pool's client never releases it, and pool.end() waits for every client:
      // bounded, so the failure is reported instead of the run hanging (the server stop below ends the sessions).
      for (const p of pools.values()) await Promise.race([p.end().catch(() => undefined), new Promise((r) => setTimeout(r, 5000).unref())]);
      try {
        execFileSync('bash', [SERVER, 'stop', dir], { stdio: 'ignore', timeout: 60_000 });
      } finally {
        if (!o.keep) fs.rmSync(dir, { recursive: true, force: true });
        fs.rmSync(path.dirname(passfile), { recursive: true, force: true });
      }
    },
  };
}

/**
 * Settings for a plain session at `url` (psql's view: no Cairn code): the URL's fields and a password looked up per
 * connection, as the daemon's pool gets them (store/pg/db.ts urlConfig). Handed only a `connectionString` with no
 * password in it, node-pg falls back to its own pgpass lookup, which is deprecated and prints a warning into the
 * test output.
 */
export function sessionConfig(url: string, extra: pg.ClientConfig = {}): pg.ClientConfig {
  return { ...urlConfig(url), ...extra };
}

/**
 * `run` on one of the owner's connections with triggers off (session_replication_role = replica): a fixture's rows
 * written straight into the tables, not through Cairn's write path (no history, no change rows, no checks).
 */
export async function ownerFixture(owner: pg.Pool, run: (c: pg.PoolClient) => Promise<unknown>): Promise<void> {
  const c = await owner.connect();
  try {
    await c.query('SET session_replication_role = replica');
    await run(c);
  } finally {
    await c.query('RESET session_replication_role');
    c.release();
  }
}
