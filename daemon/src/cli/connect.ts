/**
 * How the CLI reaches a store: through the daemon that serves it, started when none runs (the same
 * ensureDaemon as `cairn mcp` and the extension), so the CLI gives the same answers as every other client.
 * The store is opened directly in-process (same Core, same validation, same errors, but no embeddings) only on
 * request (`--direct`) or when no daemon can be started; then results say that search was full-text only.
 * A daemon that serves stdio only, or one that holds the store but does not answer, is `Unavailable`: the CLI
 * never opens the file behind a daemon's back unasked.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { CairnError } from '../protocol/errors';
import { Requests, type RequestDef } from '../protocol/methods';
import type { SearchResult, UpsertResult } from '../protocol/types';
import { resolveDbPath } from '../paths';
import { processEnv } from '../protocol/settings';
import { EnsureDaemonError, ensureDaemon } from '../client/ensure-daemon';
import { StreamClient, unavailable, type CairnClient } from '../client/socket-client';
import { runningDaemon } from '../client/daemon-info';

export interface ConnectOptions {
  db?: string;
  socket?: string;
  /** Never use a daemon; open the store directly. */
  direct?: boolean;
  /** Use a running daemon, but never start one: without one, open the store directly (for `cairn status`). */
  noStart?: boolean;
  /** Extra arguments for a daemon started here (e.g. ['--no-embeddings']). */
  daemonArgs?: string[];
  /** Progress and notes (stderr). */
  log?: (msg: string) => void;
  env?: NodeJS.ProcessEnv;
}

/** The store opened in this process. `why` says why no daemon is used; results that miss embeddings say so. */
export class DirectClient implements CairnClient {
  readonly mode = 'direct' as const;
  constructor(
    private readonly core: import('../server/core').Core,
    readonly why: string,
  ) {}
  async call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>> {
    const r = await this.core.call(def, params);
    if ((def as unknown) === Requests.search) {
      const s = r as SearchResult;
      if (s.degraded) return { ...s, degraded: `the store was opened directly (${this.why}), without embeddings` } as z.infer<R>;
    }
    if ((def as unknown) === Requests.upsert) {
      const u = r as UpsertResult;
      if (u.changed)
        return {
          ...u,
          duplicatesSkipped: `the store was opened directly (${this.why}): no embeddings, so no duplicate check`,
        } as z.infer<R>;
    }
    return r;
  }
  async close(): Promise<void> {
    this.core.store.close();
  }
}

async function openDirect(db: string, why: string): Promise<DirectClient> {
  // Loaded lazily so commands that talk to a daemon never load SQLite.
  const { Store } = await import('../store/store');
  const { Core } = await import('../server/core');
  return new DirectClient(new Core(new Store(db)), why);
}

export async function connect(opts: ConnectOptions): Promise<CairnClient> {
  const env = opts.env ?? processEnv();
  const db = resolveDbPath(opts.db, env);
  const log = opts.log ?? (() => undefined);
  if (opts.direct) return openDirect(db, '--direct');
  if (opts.socket) return StreamClient.connect(opts.socket);
  if (opts.noStart && !runningDaemon(db)) return openDirect(db, 'no daemon is running');
  let socket: string;
  try {
    const ensured = await ensureDaemon({ db, env, args: opts.daemonArgs, log: () => undefined });
    if (ensured.started)
      log(`started the Cairn daemon (pid ${ensured.pid}) for ${ensured.db}; it keeps running for other clients (log ${ensured.logFile})`);
    socket = ensured.socket;
  } catch (e) {
    if (e instanceof EnsureDaemonError && e.kind === 'not-started') {
      log(`no Cairn daemon could be started (${e.message.split('\n')[0]}); using the store directly: search is full-text only`);
      return openDirect(db, 'no daemon could be started');
    }
    throw unavailable(`cannot reach the Cairn daemon of ${db}: ${(e as Error).message}`, false);
  }
  return StreamClient.connect(socket);
}

/**
 * Send a write with a fresh idempotency key, and once more with the same key when the daemon could not be reached
 * or the connection closed before the reply (`Unavailable`; `data.sent: true` means it may have been applied). The
 * daemon applies a keyed write at most once and answers the retry with the first result (`replayed: true`), so the
 * retry is safe either way (docs/protocol.md#idempotency).
 */
export async function callWriteOnce<P extends z.ZodType, R extends z.ZodType>(
  c: CairnClient,
  reconnect: () => Promise<CairnClient>,
  def: RequestDef<P, R>,
  params: z.input<P>,
  log: (msg: string) => void = () => undefined,
): Promise<z.infer<R>> {
  const keyed = { ...(params as object), idempotencyKey: randomUUID() } as z.input<P>;
  try {
    return await c.call(def, keyed);
  } catch (e) {
    if (!(e instanceof CairnError) || e.codeName !== 'Unavailable') throw e;
    log(`${e.message}; sending it again with the same idempotency key (it is applied at most once)`);
    const again = await reconnect();
    try {
      return await again.call(def, keyed);
    } finally {
      await again.close();
    }
  }
}
