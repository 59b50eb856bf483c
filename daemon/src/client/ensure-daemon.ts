/**
 * Make sure a daemon serves a store, starting one when none does.
 *
 * Used by `cairn mcp` (so MCP clients share the editor's daemon and store) and
 * reusable by the VS Code extension. Pure Node, no native modules: it never
 * loads SQLite, it only reads `<db>.daemon.json`, probes sockets and spawns
 * `node <daemon/bin/cairn.js> daemon --db DB --socket SOCKET` detached, so the
 * daemon outlives the process that started it and every client shares it.
 *
 * Two callers starting a daemon for the same store at once is expected (two
 * editor windows, an editor and an MCP client): the daemon lock lets one win,
 * the other daemon exits with code 3 ("another Cairn daemon ... already serves
 * this store"), and both callers end up on the winner's socket.
 *
 * The OS lock, not the info file's pid, decides who owns a store: when the
 * owner named by the info file does not answer on its socket (it crashed and
 * its pid now belongs to another process, or it is still starting), a new
 * daemon is started anyway. If a live daemon holds the lock the newcomer exits
 * with code 3 and we wait for the owner's socket; otherwise it takes over.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { defaultSocketPath, resolveDbPath, runtimeDir } from '../paths';
import { processEnv, readEnv, type Env } from '../protocol/settings';
import { sleep } from '../wait';
import { ensurePrivateDir, tightenFile } from '../private-files';
import { probeSocket, runningDaemon, type DaemonInfo } from './daemon-info';

/**
 * Node options of a daemon process. A young generation of 2 MB semi-spaces (Node's default grows them to
 * 16 MB) keeps ~20 MB less garbage resident in a long-running daemon whose requests allocate short-lived
 * objects; scavenges just run more often (measured in bench/sidebyside.ts, see bench/README.md).
 */
export const DAEMON_NODE_FLAGS = ['--max-semi-space-size=2'];

/**
 * Environment of a daemon process, under the caller's own (a variable the caller sets wins), read by glibc's malloc:
 * - Two malloc arenas: glibc gives each thread that allocates (the event loop, the embedding and checkpoint
 *   workers, V8's helpers) an arena of its own, up to eight per core, and memory freed into one stays resident.
 *   After 100k single writes the daemon kept 9–12 MiB less with two (peak RSS under search 193.5–194.3 →
 *   181.9–184.3 MiB, bench/README.md); one arena cost a fifth of the write throughput.
 * - A fixed mmap threshold of 128 KiB: every block that large gets a mapping of its own, given back to the system
 *   when freed. glibc otherwise raises the threshold each time such a block is freed (up to 32 MiB), after which
 *   large blocks (the vector index's arrays, replaced when it grows; SQLite's and FTS5's buffers) come from the
 *   heap, where what is freed stays resident. At 1M memories with a write every 5 s the heap held 80 MiB against
 *   33, peak RSS 383 → 356 MiB; write, import and search speed within the runs' noise (bench/README.md).
 */
export const DAEMON_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

/** `env` with DAEMON_ENV under it: what a daemon is started with. */
export function daemonEnv(env: Env): NodeJS.ProcessEnv {
  return { ...DAEMON_ENV, ...env };
}

export interface EnsureDaemonOptions {
  /** Store file; default $CAIRN_DB, else the per-user default (see resolveDbPath). */
  db?: string;
  /** Socket to use. When it answers it is used as is; a daemon started here listens on it. Default: defaultSocketPath(db). */
  socket?: string;
  /** Node.js executable that runs the daemon. Default $CAIRN_NODE, else process.execPath (pass one from an Electron host). */
  nodePath?: string;
  /** Daemon entry script (bin/cairn.js). Default $CAIRN_DAEMON, else the bin/cairn.js of this package. */
  script?: string;
  /** Extra arguments after `daemon --db DB --socket SOCKET`, e.g. ['--no-embeddings']. */
  args?: string[];
  /** Environment of the started daemon (and for resolving paths). Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Give up waiting for a socket to answer after this long. Default 15 s. */
  timeoutMs?: number;
  /** Where the started daemon's output goes. Default <runtimeDir>/d-<hash>.log. */
  logFile?: string;
  /** Progress messages (never stdout). */
  log?: (msg: string) => void;
}

export interface EnsuredDaemon {
  /** Socket of the daemon serving the store: connect here. */
  socket: string;
  /** True when this call started the daemon. */
  started: boolean;
  /** Pid of the serving daemon, when known. */
  pid: number | null;
  /** The resolved store path. */
  db: string;
  /** Log file of the daemon started by this call. */
  logFile?: string;
}

/**
 * Why no daemon could be used: `stdio-only` — one owns the store but serves only stdio (no other client may
 * share it); `not-started` — none could be started (no daemon script, it exited at once, Node failed to run);
 * `timeout` — one was started or owns the store but did not answer in time.
 */
export type EnsureDaemonFailure = 'stdio-only' | 'not-started' | 'timeout';

export class EnsureDaemonError extends Error {
  /** Pid of the daemon process this call started, when it started one (it may still be running after a timeout). */
  constructor(
    message: string,
    readonly pid: number | null = null,
    readonly kind: EnsureDaemonFailure = 'not-started',
  ) {
    super(message);
    this.name = 'EnsureDaemonError';
  }
}

type Owner = Pick<DaemonInfo, 'pid' | 'socket'>;

/** The live daemon that owns `db` (per its info file), if any. */
function liveOwner(db: string): Owner | null {
  return runningDaemon(db);
}

export { probeSocket };

/**
 * Where the daemon entry script is: $CAIRN_DAEMON, else `bin/cairn.js` of this
 * package found from this module's location — `dist/` when bundled, `src/client/`
 * when run from sources (tsx). Checks that the bundle it loads is built.
 */
export function findDaemonScript(env?: Env, from: string = __dirname): string {
  const named = readEnv('CAIRN_DAEMON', env);
  if (named) {
    if (!fs.existsSync(named)) throw new EnsureDaemonError(`CAIRN_DAEMON names ${named}, which does not exist`);
    return path.resolve(named);
  }
  const tried: string[] = [];
  let dir = path.resolve(from);
  for (let up = 0; up < 4; up++) {
    const candidate = path.join(dir, 'bin', 'cairn.js');
    tried.push(candidate);
    if (fs.existsSync(candidate) && fs.existsSync(path.join(dir, 'package.json'))) {
      const bundle = path.join(dir, 'dist', 'cairn.js');
      if (!fs.existsSync(bundle))
        throw new EnsureDaemonError(`the Cairn daemon at ${candidate} is not built (missing ${bundle}); run "npm run build"`);
      return candidate;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new EnsureDaemonError(`cannot find the Cairn daemon script (tried ${tried.join(', ')}); set CAIRN_DAEMON to daemon/bin/cairn.js`);
}

function defaultLogFile(db: string, env?: Env): string {
  const h = createHash('sha256').update(path.resolve(db)).digest('hex').slice(0, 12);
  return path.join(runtimeDir(env), `d-${h}.log`);
}

function tail(file: string, lines = 12): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

function stdioOnly(owner: Owner, db: string): EnsureDaemonError {
  return new EnsureDaemonError(
    `a Cairn daemon (pid ${owner.pid}) serves ${db} over stdio only, so no other client can share it; stop it or start it with a socket`,
    null,
    'stdio-only',
  );
}

/**
 * Find or start the daemon that serves a store, and return its socket once it
 * answers. Throws EnsureDaemonError (with the tail of the daemon's log when it
 * failed to start) after `timeoutMs`.
 */
export async function ensureDaemon(o: EnsureDaemonOptions = {}): Promise<EnsuredDaemon> {
  const env = o.env ?? processEnv();
  const log = o.log ?? (() => undefined);
  const db = resolveDbPath(o.db, env);
  const timeoutMs = o.timeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;

  // 1. An explicit socket that answers is used as is.
  if (o.socket && (await probeSocket(o.socket))) return { socket: o.socket, started: false, pid: liveOwner(db)?.pid ?? null, db };

  // 2. A live daemon owns the store and answers: use its socket. A stdio-only owner is only trusted once the
  //    lock confirms it (below): its info file may name a dead daemon whose pid was reused.
  const stated = liveOwner(db);
  if (stated?.socket && (await probeSocket(stated.socket, 500))) return { socket: stated.socket, started: false, pid: stated.pid, db };

  // 3. Start one. If another daemon holds the store lock (starting, or serving stdio only) it exits with code 3.
  const socket = o.socket ?? defaultSocketPath(db, env);
  const node = o.nodePath ?? readEnv('CAIRN_NODE', env) ?? process.execPath;
  const script = o.script ?? findDaemonScript(env);
  const logFile = o.logFile ?? defaultLogFile(db, env);
  try {
    fs.mkdirSync(path.dirname(db), { recursive: true, mode: 0o700 });
    ensurePrivateDir(path.dirname(logFile), { what: 'the log folder' });
    if (process.platform !== 'win32') ensurePrivateDir(path.dirname(socket), { what: 'the socket folder' });
  } catch (e) {
    throw new EnsureDaemonError((e as Error).message, null, 'not-started');
  }
  const args = [...DAEMON_NODE_FLAGS, script, 'daemon', '--db', db, '--socket', socket, ...(o.args ?? [])];
  log(`starting the Cairn daemon: ${node} ${args.join(' ')} (log ${logFile})`);
  const fd = fs.openSync(logFile, 'a', 0o600);
  let exitCode: number | null | undefined;
  let spawnError: Error | undefined;
  let pid: number | null;
  try {
    fs.writeSync(fd, `\n--- ${new Date().toISOString()} starting ${node} ${args.join(' ')}\n`);
    const child = spawn(node, args, {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: daemonEnv(env),
      cwd: path.dirname(db),
      windowsHide: true,
    });
    pid = child.pid ?? null;
    child.once('exit', (code, signal) => (exitCode = code ?? (signal ? -1 : null)));
    child.once('error', (e) => {
      spawnError = e;
      exitCode = -1;
    });
    child.unref();
  } finally {
    fs.closeSync(fd);
  }
  tightenFile(logFile);

  let lostRace = false;
  for (;;) {
    const owner = liveOwner(db);
    if (owner?.socket && (await probeSocket(owner.socket, 500))) {
      const started = owner.pid === pid;
      if (!started) log(`another daemon owns the store (pid ${owner.pid}); using it`);
      return { socket: owner.socket, started, pid: owner.pid, db, ...(started ? { logFile } : {}) };
    }
    if (exitCode !== undefined && !lostRace) {
      if (spawnError) throw new EnsureDaemonError(`cannot start the Cairn daemon with ${node}: ${spawnError.message}`, pid, 'not-started');
      if (exitCode !== 3)
        throw new EnsureDaemonError(
          `the Cairn daemon exited with code ${exitCode} while starting (log ${logFile}):\n${tail(logFile)}`,
          pid,
          'not-started',
        );
      // The store lock is held by a live daemon: wait for it to answer (or learn it serves stdio only).
      lostRace = true;
    }
    if (lostRace && owner && owner.socket === null) throw stdioOnly(owner, db);
    if (Date.now() > deadline) {
      throw new EnsureDaemonError(
        lostRace
          ? `the Cairn daemon${owner ? ` (pid ${owner.pid})` : ''} that holds ${db} did not answer${owner?.socket ? ` on ${owner.socket}` : ''} within ${Math.round(timeoutMs / 1000)} s`
          : `the Cairn daemon (pid ${pid}) did not answer on ${socket} within ${Math.round(timeoutMs / 1000)} s (log ${logFile}):\n${tail(logFile)}`,
        pid,
        'timeout',
      );
    }
    await sleep(50);
  }
}
