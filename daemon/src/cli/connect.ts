/**
 * How the CLI reaches a store: through the running daemon's socket when one
 * serves the store, otherwise by opening the store directly in-process (same
 * Core, same validation, same errors).
 */
import type { z } from 'zod';
import type { RequestDef } from '../protocol/methods';
import { resolveDbPath } from '../paths';
import { StreamClient, type CairnClient } from '../client/socket-client';
import { runningDaemon } from '../server/lock';

export interface ConnectOptions {
  db?: string;
  socket?: string;
  /** Never use a daemon; open the store directly. */
  direct?: boolean;
}

class DirectClient implements CairnClient {
  readonly mode = 'direct' as const;
  constructor(private readonly core: import('../server/core').Core) {}
  call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>> {
    return this.core.call(def, params);
  }
  async close(): Promise<void> {
    this.core.store.close();
  }
}

export async function connect(opts: ConnectOptions): Promise<CairnClient> {
  const db = resolveDbPath(opts.db);
  if (opts.socket) return StreamClient.connect(opts.socket);
  if (!opts.direct) {
    const owner = runningDaemon(db);
    if (owner?.socket) {
      try {
        return await StreamClient.connect(owner.socket);
      } catch (e) {
        throw new Error(`the daemon (pid ${owner.pid}) owns ${db} but its socket ${owner.socket} does not answer: ${(e as Error).message}`);
      }
    }
  }
  // Loaded lazily so commands that talk to a daemon never load SQLite.
  const { Store } = await import('../store/store');
  const { Core } = await import('../server/core');
  return new DirectClient(new Core(new Store(db)));
}
