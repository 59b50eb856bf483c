/** `cairn daemon`: serve the store on a socket (default) and/or stdio until stopped. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import { canonicalPath, dataDir, resolveDbPath } from '../paths';
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

const log = (m: string) => process.stderr.write(`[cairn ${new Date().toISOString()}] ${m}\n`);

export async function runDaemon(o: DaemonCommandOptions): Promise<number> {
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
  process.on('uncaughtException', (e) => d.log(`uncaught exception (still serving): ${e.stack ?? e}`));
  process.on('unhandledRejection', (e) => d.log(`unhandled rejection (still serving): ${(e as Error)?.stack ?? e}`));
  return new Promise<number>(() => {}); // runs until a signal or (stdio) the client leaves
}
