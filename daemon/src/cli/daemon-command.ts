/** `cairn daemon`: serve the store on a socket (default) and/or stdio until stopped. */
import { stderrLog } from '../server/stderr-log';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import { DAEMON_ENV, DAEMON_NODE_FLAGS } from '../client/ensure-daemon';
import { canonicalPath, dataDir, resolveDbPath } from '../paths';
import { processEnv, readEnv, type Env } from '../protocol/settings';
import { ensurePrivateDir, UnsafePathError } from '../private-files';
import { Daemon } from '../server/daemon';
import { StoreLockedError } from '../server/lock';

export interface DaemonCommandOptions {
  db?: string;
  socket?: string;
  stdio: boolean;
  model?: string;
  modelPath?: string;
  embeddings: boolean;
  teamUrl?: string;
  teamRoots?: string;
}

/**
 * V8 lets a heap's old generation grow this many percent past what its last full collection kept, instead of the
 * factor (up to 4x) it picks by itself. Set when `cairn daemon` starts, however it was started: V8 reads it at
 * every collection, and its flags are per process, so the embedding and checkpoint workers' heaps follow it too.
 * At 100k memories the daemon's peak RSS under search was 226-293 MiB in seven runs without it and 197-204 MiB in
 * six with 10-30%, at the same CPU per upsert (bench/sidebyside.ts; bench/README.md).
 */
export const HEAP_GROWING_PERCENT = 20;

const log = stderrLog;

/** What this process lacks of the daemon's settings: DAEMON_ENV variables not set at all, DAEMON_NODE_FLAGS not given. */
export function missingDaemonSettings(
  env: Env = processEnv(),
  execArgv: readonly string[] = process.execArgv,
): { env: Record<string, string>; flags: string[] } {
  const missingEnv: Record<string, string> = {};
  // A variable the caller set (to any value) wins, as it does for a spawned daemon (daemonEnv).
  for (const [k, v] of Object.entries(DAEMON_ENV)) if (env[k] === undefined) missingEnv[k] = v;
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)];
  const flags = DAEMON_NODE_FLAGS.filter((f) => {
    const name = f.split('=')[0];
    return !given.some((g) => g === f || g.startsWith(`${name}=`));
  });
  return { env: missingEnv, flags };
}

/**
 * A daemon started by hand (`cairn daemon`) gets the memory settings a spawned one gets (DAEMON_ENV, read by glibc
 * only at process start, and DAEMON_NODE_FLAGS, read by V8 only at start): when any is missing it runs itself once
 * more with them, once (CAIRN_DAEMON_REEXEC marks the copy, which never starts another), with the same stdio (so
 * `--stdio` is served by the copy), passing SIGINT, SIGTERM and SIGHUP on and ending as it ends (its exit code, or
 * the same signal). Resolves to the exit code, or null when this process already has the settings and serves.
 */
export async function reexecWithDaemonSettings(log: (m: string) => void): Promise<number | null> {
  if (readEnv('CAIRN_DAEMON_REEXEC') !== undefined) return null;
  const missing = missingDaemonSettings();
  if (Object.keys(missing.env).length === 0 && missing.flags.length === 0) return null;
  const args = [...process.execArgv, ...missing.flags, ...process.argv.slice(1)];
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(process.execPath, args, {
      stdio: 'inherit',
      env: { ...missing.env, ...processEnv(), CAIRN_DAEMON_REEXEC: '1' },
    });
  } catch (e) {
    log(`could not restart with the daemon's memory settings (${(e as Error).message}); serving without them`);
    return null;
  }
  const forward = (sig: NodeJS.Signals) => () => {
    try {
      child.kill(sig);
    } catch {
      /* already gone */
    }
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const handlers = signals.map((sig) => [sig, forward(sig)] as const);
  for (const [sig, h] of handlers) process.on(sig, h);
  return new Promise<number>((resolve) => {
    child.once('error', (e) => {
      log(`could not restart with the daemon's memory settings: ${e.message}`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      for (const [sig, h] of handlers) process.off(sig, h);
      if (signal) {
        // End the way the daemon ended: by the same signal (its default action, now that our handler is gone).
        process.kill(process.pid, signal);
        return;
      }
      resolve(code ?? 1);
    });
  });
}

/**
 * Whether the process that started this one still runs: on Linux, whether it is still our parent (a killed starter
 * leaves us to init even while it waits, a zombie, for its own parent to reap it); elsewhere, whether its pid exists.
 */
function starterAlive(starter: number): boolean {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === starter;
  } catch {
    try {
      process.kill(starter, 0);
      return true;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
}

export async function runDaemon(o: DaemonCommandOptions): Promise<number> {
  const reexec = await reexecWithDaemonSettings(log);
  if (reexec !== null) return reexec;
  // The copy's starter, read now: it can be killed while the store opens (process.ppid then names init).
  const starter = process.ppid;
  // Everything the daemon creates (store files, logs, keys, sockets) is private to the user.
  process.umask(0o077);
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  const db = resolveDbPath(o.db);
  let d: Daemon;
  try {
    // A fresh machine has no data folder yet: create it (0700). Cairn's own default folder is also tightened
    // when an older version left it readable by others; a folder the user chose with --db is left as it is.
    if (path.dirname(db) === canonicalPath(dataDir())) ensurePrivateDir(path.dirname(db), { tighten: true, log, what: 'the data folder' });
    else fs.mkdirSync(path.dirname(db), { recursive: true, mode: 0o700 });
    d = await Daemon.start({
      db,
      log,
      // --stdio alone serves only stdio; --socket adds a socket; neither: the default socket.
      socket: o.socket ?? (o.stdio ? null : undefined),
      setup: async (daemon) => {
        if (o.embeddings) {
          const { attachEmbeddings } = await import('../index/attach');
          await attachEmbeddings(daemon, { model: o.model, modelPath: o.modelPath });
        }
        // Team memory (daemon/src/team/): opened in the background; an unreachable database never stops the daemon.
        const { attachTeam, teamConfig } = await import('../team/attach');
        const team = teamConfig({ url: o.teamUrl, roots: o.teamRoots });
        if (team) {
          const t = attachTeam(daemon.core, { ...team, log: daemon.log }, (c) => daemon.broadcast(c));
          daemon.extraStop.push(() => t.close());
        }
      },
    });
  } catch (e) {
    if (e instanceof StoreLockedError) {
      process.stderr.write(`cairn daemon: ${e.message}\n`);
      return 3;
    }
    if (e instanceof UnsafePathError) {
      process.stderr.write(`cairn daemon: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  if (o.stdio) d.serve(process.stdin, process.stdout, 'stdio');
  const stop = (sig: string) => {
    d.log(`${sig}: stopping`);
    void d.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  if (readEnv('CAIRN_DAEMON_REEXEC') !== undefined) {
    // The copy run with the daemon settings: its starter passes signals on, except SIGKILL. When the starter is gone
    // (killed), the copy stops too, as the daemon it stands for did.
    const watch = setInterval(() => {
      if (starterAlive(starter)) return;
      clearInterval(watch);
      stop('the process that started this daemon ended');
    }, 1000);
    watch.unref();
  }
  process.on('uncaughtException', (e) => d.log(`uncaught exception (still serving): ${e.stack ?? e}`));
  process.on('unhandledRejection', (e) => d.log(`unhandled rejection (still serving): ${(e as Error)?.stack ?? e}`));
  return new Promise<number>(() => {}); // runs until a signal or (stdio) the client leaves
}
