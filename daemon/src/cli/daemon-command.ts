/** `cairn daemon`: serve the store on a socket (default) and/or stdio until stopped. */
import { resolveDbPath } from '../paths';
import { Daemon } from '../server/daemon';
import { StoreLockedError } from '../server/lock';

export interface DaemonCommandOptions {
  db?: string;
  socket?: string;
  stdio: boolean;
  model?: string;
  modelPath?: string;
  embeddings: boolean;
}

export async function runDaemon(o: DaemonCommandOptions): Promise<number> {
  const db = resolveDbPath(o.db);
  let d: Daemon;
  try {
    d = await Daemon.start({
      db,
      // --stdio alone serves only stdio; --socket adds a socket; neither: the default socket.
      socket: o.socket ?? (o.stdio ? null : undefined),
      setup: o.embeddings ? async (daemon) => {
        const { attachEmbeddings } = await import('../index/attach');
        await attachEmbeddings(daemon, { model: o.model, modelPath: o.modelPath });
      } : undefined,
    });
  } catch (e) {
    if (e instanceof StoreLockedError) {
      process.stderr.write(`cairn daemon: ${e.message}\n`);
      return 3;
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
