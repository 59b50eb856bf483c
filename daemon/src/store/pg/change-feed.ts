/**
 * Live changes of the team store: LISTEN cairn_changes on a connection of its own, reconnecting by itself, each
 * notified change read through row-level security before it is announced.
 */
import { EventEmitter } from 'node:events';
import type { DidChangeParams } from '../../protocol/types';
import { pg, poolConfig, type PgOptions } from './db';

export class ChangeFeed {
  private events = new EventEmitter();
  private listener: pg.Client | null = null;
  private listenTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly opts: PgOptions,
    private readonly pool: pg.Pool,
    private readonly log: (m: string) => void,
  ) {}

  async close(): Promise<void> {
    this.closed = true;
    if (this.listenTimer) clearTimeout(this.listenTimer);
    const l = this.listener;
    this.listener = null;
    await l?.end().catch(() => undefined);
  }

  onChange(fn: (c: DidChangeParams) => void): () => void {
    this.events.on('change', fn);
    if (!this.listener && !this.listenTimer) void this.listen();
    return () => this.events.off('change', fn);
  }

  /** Resolves once LISTEN is active (tests wait on it). */
  listening(): Promise<void> {
    if (this.listener) return Promise.resolve();
    return new Promise((r) => this.events.once('listening', r));
  }

  private async listen(delay = 0): Promise<void> {
    if (this.closed) return;
    this.listenTimer = null;
    const client = new pg.Client(poolConfig(this.opts));
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('LISTEN cairn_changes');
    } catch (e) {
      await client.end().catch(() => undefined);
      if (!this.closed) this.listenTimer = setTimeout(() => void this.listen(Math.min(5000, delay * 2 + 200)), delay);
      return;
    }
    if (this.closed) return void client.end().catch(() => undefined);
    this.listener = client;
    client.on('notification', (n) => {
      const position = Number(n.payload);
      if (Number.isSafeInteger(position)) void this.announce(position);
    });
    client.on('end', () => {
      if (this.listener === client) this.listener = null;
      if (!this.closed) {
        this.log('team change feed disconnected; reconnecting');
        this.listenTimer = setTimeout(() => void this.listen(200), 200);
      }
    });
    this.events.emit('listening');
  }

  /** Read a notified change through row-level security; changes in roots this role can't read stay unheard. */
  private async announce(position: number): Promise<void> {
    try {
      const r = (await this.pool.query(`SELECT position, memory_id, ns_path, key, op FROM changes WHERE position = $1`, [position]))
        .rows[0];
      if (r)
        this.events.emit('change', {
          position: r.position,
          id: r.memory_id,
          namespace: r.ns_path,
          key: r.key,
          op: r.op,
        } satisfies DidChangeParams);
    } catch {
      /* the database went away between the notification and the read: the change is in the log */
    }
  }
}
