/**
 * Finding and starting the daemon: which Node.js, which daemon script, which store and socket.
 *
 * Architecture invariant: the daemon (SQLite, ONNX: native modules) never loads in the extension host.
 * It always runs as its own Node.js process, started detached so every window on the machine can share it
 * and it outlives the window that started it.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { connectSocket, daemonAlive, pidAlive, probeSocket, readDaemonInfo as readInfo } from '../../daemon/src/client/daemon-info';
import { EnsureDaemonError, ensureDaemon as sharedEnsureDaemon } from '../../daemon/src/client/ensure-daemon';
import { defaultSocketPath, resolveDbPath } from '../../daemon/src/paths';

/** A daemon that listens on a socket (what a window can connect to). */
export interface DaemonInfo {
  pid: number;
  socket: string;
  version?: string;
  /** Which process the pid was (daemon-info.ts daemonAlive). */
  procStart?: string;
}

export interface Target {
  db: string;
  socket: string;
}

/** The store file and socket a window uses: `cairn.store.path`, else $CAIRN_DB, else the per-user default. */
export function resolveTarget(storeSetting: string, env: NodeJS.ProcessEnv = process.env): Target {
  const db = resolveDbPath(storeSetting || undefined, env);
  return { db, socket: defaultSocketPath(db, env) };
}

/** The info file of the daemon owning `db`, when that daemon listens on a socket (a stdio-only daemon cannot be shared). */
export function readDaemonInfo(db: string): DaemonInfo | null {
  const info = readInfo(db);
  return info && typeof info.socket === 'string' ? (info as DaemonInfo) : null;
}

export { connectSocket };
export const isAlive = pidAlive;
export const probe = probeSocket;

/** Where the daemon entry script may live, in the order tried. */
export function daemonCandidates(setting: string, extensionPath: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const c: string[] = [];
  if (setting) return [setting];
  if (env.CAIRN_DAEMON) return [env.CAIRN_DAEMON];
  c.push(path.join(extensionPath, 'daemon', 'bin', 'cairn.js')); // the copy packaged into the .vsix
  c.push(path.join(extensionPath, '..', 'daemon', 'bin', 'cairn.js')); // a source checkout (development host)
  return c;
}

export class BootstrapError extends Error {}

/** The daemon entry script, checked to exist and to be built. */
export function findDaemonScript(setting: string, extensionPath: string, env: NodeJS.ProcessEnv = process.env): string {
  const candidates = daemonCandidates(setting, extensionPath, env);
  for (const c of candidates) {
    if (!fs.existsSync(c)) continue;
    const bundle = path.join(path.dirname(c), '..', 'dist', 'cairn.js');
    if (path.basename(path.dirname(c)) === 'bin' && !fs.existsSync(bundle)) {
      throw new BootstrapError(`The Cairn daemon at ${c} is not built (missing ${bundle}). Run "npm run build" in the repository.`);
    }
    return path.resolve(c);
  }
  const where = setting ? 'cairn.daemon.path' : env.CAIRN_DAEMON ? 'CAIRN_DAEMON' : 'the extension folder';
  throw new BootstrapError(
    `Cairn daemon script not found (looked in ${where}: ${candidates.join(', ')}). Set "cairn.daemon.path" to daemon/bin/cairn.js.`,
  );
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  const exts = process.platform === 'win32' ? (env.PATHEXT || '.EXE;.CMD').split(';') : [''];
  for (const dir of (env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    for (const ext of exts) {
      const p = path.join(dir, name + ext);
      try {
        fs.accessSync(p, fs.constants.X_OK);
        if (fs.statSync(p).isFile()) return p;
      } catch {
        // not here
      }
    }
  }
  return null;
}

/**
 * The Node.js that runs the daemon: `cairn.daemon.nodePath`, else $CAIRN_NODE, else `node` on PATH.
 * Never the editor's own executable (Electron: a different native-module ABI).
 */
export async function findNode(setting: string, env: NodeJS.ProcessEnv = process.env): Promise<{ node: string; version: string }> {
  const explicit = setting || env.CAIRN_NODE;
  const node = explicit || onPath('node', env);
  if (!node) throw new BootstrapError('Node.js not found on PATH. Install Node.js 20 or newer, or set "cairn.daemon.nodePath".');
  const version = await new Promise<string>((resolve, reject) =>
    execFile(node, ['--version'], { timeout: 10_000, env }, (err, stdout) =>
      err ? reject(new BootstrapError(`Cannot run Node.js at ${node}: ${err.message}`)) : resolve(stdout.trim()),
    ),
  );
  const major = Number(/^v(\d+)/.exec(version)?.[1] ?? 0);
  if (major < 20) throw new BootstrapError(`Node.js ${version} at ${node} is too old for the Cairn daemon; it needs 20 or newer.`);
  return { node, version };
}

export interface Spawned {
  pid: number;
  log: string;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface EnsureOptions {
  target: Target;
  nodeSetting: string;
  daemonSetting: string;
  extensionPath: string;
  logFile: string;
  env: NodeJS.ProcessEnv;
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface Ensured {
  socket: string;
  /** Set when this call started the daemon. */
  spawned?: Spawned;
}

/**
 * Make sure a daemon serves the store, through the one client layer every Cairn client uses
 * (daemon/src/client/ensure-daemon.ts: same start-up race handling, same OS-lock rule for stale info, same
 * private log file). What only an editor adds: the daemon runs on a real Node.js found here (never the editor's
 * own Electron executable), from the script the extension ships. Throws a BootstrapError that says what went wrong.
 */
export async function ensureDaemon(o: EnsureOptions): Promise<Ensured> {
  const log = o.log ?? (() => undefined);
  // Already served: no need to look for Node.js or the daemon script.
  const info = readDaemonInfo(o.target.db);
  for (const s of [...new Set([...(info && daemonAlive(info) ? [info.socket] : []), o.target.socket])]) {
    if (await probe(s)) return { socket: s };
  }
  const { node, version } = await findNode(o.nodeSetting, o.env);
  const script = findDaemonScript(o.daemonSetting, o.extensionPath, o.env);
  log(`starting daemon: ${node} (${version}) ${script} for ${o.target.db}`);
  try {
    const r = await sharedEnsureDaemon({
      db: o.target.db,
      socket: o.target.socket,
      nodePath: node,
      script,
      env: o.env,
      logFile: o.logFile,
      timeoutMs: o.startTimeoutMs,
      log,
    });
    return { socket: r.socket, ...(r.started && r.pid ? { spawned: { pid: r.pid, log: r.logFile ?? o.logFile } } : {}) };
  } catch (e) {
    throw e instanceof EnsureDaemonError ? new BootstrapError(e.message) : e;
  }
}

/** Stop a daemon process: SIGTERM, then SIGKILL after `graceMs`. Resolves once it is gone. */
export async function stopProcess(pid: number, graceMs = 5000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return;
    await sleep(50);
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
  while (isAlive(pid) && Date.now() < deadline + 2000) await sleep(50);
}
