/**
 * The daemon: one Store, served as JSON-RPC 2.0 with LSP framing to any number
 * of clients over a Unix socket (mode 0600) and/or stdio. Every write is
 * broadcast to every client as memory/didChange. A failing request gets an
 * error reply; nothing a client sends can stop the daemon serving the others.
 */
import { stderrLog } from './stderr-log';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { createMessageConnection, ResponseError, type MessageConnection } from 'vscode-jsonrpc/node';
import { CairnError, ErrorCodes, toWireError } from '../protocol/errors';
import { Notifications, PROTOCOL_VERSION, Requests } from '../protocol/methods';
import { Limits, type DidChangeParams, type InitializeResult } from '../protocol/types';
import { canonicalPath, defaultSocketPath } from '../paths';
import { ensurePrivateDir, privateSocket } from '../private-files';
import { Store } from '../store/store';
import { enforceRetentionPaced } from '../store/retention';
import { VERSION } from '../version';
import { Core } from './core';
import { FramedMessageWriter, GuardedMessageReader, endAfterReply } from './framing';
import { frameLimits, type FrameLimits } from './limits';
import { acquireDaemonLock } from './lock';
import { LspDocuments } from './lsp';

export type Logger = (msg: string) => void;

/**
 * A notification written with no reply to carry it waits this long for one (client/framed-writer.ts): the
 * indexer's memory/possibleDuplicates then usually leaves with the next reply, one system call and one wake-up of
 * the client instead of two. Replies themselves are never delayed.
 */
export const NOTIFICATION_DELAY_MS = 2;

export interface DaemonOptions {
  db: string;
  /** Unix socket path; null: no socket. Default: defaultSocketPath(db). */
  socket?: string | null;
  log?: Logger;
  /** Run the TTL/namespace sweep this often (ms); 0 disables. Default 60 s. */
  sweepEveryMs?: number;
  /** Look for writes other processes made to the store (CLI --direct) this often (ms); 0 disables. Default 250 ms. */
  watchEveryMs?: number;
  /** Hook for adding the embedding index once the store is open. */
  setup?: (d: Daemon) => Promise<void> | void;
  /** Frame time limits of every connection. Default: Limits', or CAIRN_FRAME_HEADER_MS / CAIRN_FRAME_TIME_MS. */
  frameLimits?: FrameLimits;
}

export interface Client {
  id: number;
  kind: 'socket' | 'stdio';
  connection: MessageConnection;
  lsp: LspDocuments;
  initialized: boolean;
  reader: GuardedMessageReader;
  writer: FramedMessageWriter;
}

/** A client with a request under way: its reply is not written yet, or its large frame is still being parsed. */
function working(c: Client): boolean {
  return c.reader.busy || c.reader.requests > c.writer.replies;
}

export class Daemon {
  readonly store: Store;
  readonly core: Core;
  readonly log: Logger;
  readonly clients = new Set<Client>();
  socketPath: string | null = null;
  private server: net.Server | null = null;
  private releaseLock: (() => void) | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private nextClientId = 1;
  private readonly startedAt = Date.now();
  private stopping = false;
  private stopPromise: Promise<void> | null = null;
  /** Socket connections, oldest first. */
  private readonly sockets = new Map<net.Socket, Client>();
  private frame: FrameLimits = { frameHeaderMs: Limits.frameHeaderMs, frameTimeMs: Limits.frameTimeMs };
  /** Idle connections closed to make room since the last log line about it, and when that line was written. */
  private evicted = 0;
  private evictedLoggedAt = 0;
  readonly extraStop: (() => Promise<void> | void)[] = [];

  private constructor(store: Store, log: Logger) {
    this.store = store;
    this.log = log;
    this.core = new Core(store, {
      daemonInfo: () => ({
        pid: process.pid,
        version: VERSION,
        socket: this.socketPath,
        clients: this.clients.size,
        uptimeMs: Date.now() - this.startedAt,
      }),
      progress: (p) => this.notifyAll(Notifications.progress.method, p),
    });
    store.onChange((c) => this.broadcast(c));
    this.core.tasks.onChange((ev) => this.notifyAll(Notifications.tasksDidChange.method, ev));
  }

  static async start(opts: DaemonOptions): Promise<Daemon> {
    const log = opts.log ?? stderrLog;
    const db = canonicalPath(opts.db);
    const socket = opts.socket === undefined ? defaultSocketPath(db) : opts.socket;
    // Refuse a socket folder another user controls before taking the store (nothing is created there yet).
    if (socket && process.platform !== 'win32') ensurePrivateDir(path.dirname(socket), { what: 'the socket folder' });
    const release = acquireDaemonLock(db, { socket, version: VERSION, startedAt: new Date().toISOString(), db });
    let d: Daemon;
    try {
      d = new Daemon(new Store(db, { log }), log);
    } catch (e) {
      release();
      throw e;
    }
    d.releaseLock = release;
    d.frame = opts.frameLimits ?? frameLimits(undefined, log);
    // WAL checkpoints from a worker thread's own connection: never a stall inside a client's commit (store/checkpointer.ts).
    d.store.checkpointInBackground();
    try {
      if (opts.setup) await opts.setup(d);
      if (socket) await d.listen(socket);
    } catch (e) {
      await d.stop();
      throw e;
    }
    // Every write reaches the clients and the index, including those another process made (CLI --direct).
    d.store.noticeExternalChanges();
    const watch = opts.watchEveryMs ?? 250;
    if (watch > 0) {
      d.watchTimer = setInterval(() => d.noticeExternalWrites(), watch);
      d.watchTimer.unref();
    }
    const every = opts.sweepEveryMs ?? 60_000;
    if (every > 0) {
      d.sweepTimer = setInterval(() => void d.sweepOnce(), every);
      d.sweepTimer.unref();
      setImmediate(() => void d.sweepOnce());
    }
    log(`serving ${db}${socket ? ` on ${socket}` : ''} (pid ${process.pid}, schema v${d.store.schemaVersion})`);
    if (d.store.rankingError) log(`full-text ranking uses FTS5's bm25() (same order, slower): ${d.store.rankingError}`);
    return d;
  }

  private watchTimer: NodeJS.Timeout | null = null;

  /** Broadcast (and so index) writes another process committed to the store. */
  noticeExternalWrites(): number {
    try {
      const n = this.store.noticeExternalChanges();
      if (n > 0) this.log(`noticed ${n} change(s) written by another process`);
      return n;
    } catch (e) {
      this.log(`watching for other writers failed: ${(e as Error).message}`);
      return 0;
    }
  }

  private sweeping = false;

  private async sweepOnce(): Promise<void> {
    if (this.sweeping || this.stopping) return;
    this.sweeping = true;
    this.noticeExternalWrites();
    try {
      const r = this.store.sweep();
      // In small steps that yield between them: a sweep with much to do never holds the clients' requests.
      const kept = await enforceRetentionPaced(this.store);
      if (this.stopping) return;
      this.store.checkpoint();
      if (r.expired || r.purged) this.log(`sweep: expired ${r.expired}, purged ${r.purged}`);
      if (kept.removedVersions || kept.purged || kept.ttlCapped || kept.removedEvents)
        this.log(
          `retention: removed ${kept.removedVersions} past versions, purged ${kept.purged} long-deleted memories, capped the lifetime of ${kept.ttlCapped}, removed ${kept.removedEvents ?? 0} events`,
        );
    } catch (e) {
      this.log(`sweep failed: ${(e as Error).message}`);
    } finally {
      this.sweeping = false;
    }
  }

  private async listen(socket: string): Promise<void> {
    if (process.platform !== 'win32') ensurePrivateDir(path.dirname(socket), { what: 'the socket folder' });
    if (process.platform !== 'win32') fs.rmSync(socket, { force: true }); // we hold the store lock: any socket file here is stale
    const server = net.createServer((sock) => {
      if (this.sockets.size >= Limits.connections && !this.makeRoom()) {
        // Over the connection limit with a request under way on every one: one typed reply, then close
        // (docs/protocol.md#limits).
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: ErrorCodes.Overloaded,
            message: `the daemon serves at most ${Limits.connections} connections`,
            data: { name: 'Overloaded', limit: Limits.connections },
          },
        });
        sock.on('error', () => {});
        endAfterReply(sock, `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        this.log(`refused a connection: ${this.sockets.size} open (limit ${Limits.connections})`);
        return;
      }
      sock.on('error', () => {});
      const client = this.serve(sock, sock, 'socket');
      this.sockets.set(sock, client);
      sock.on('close', () => this.sockets.delete(sock));
    });
    const oldMask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socket, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } finally {
      process.umask(oldMask);
    }
    // Ours from here on: whatever fails later in start() closes it, so a daemon that could not start never lingers
    // with a listening socket and a closed store.
    this.server = server;
    this.socketPath = socket;
    server.on('error', (e) => this.log(`socket error: ${e.message}`));
    // Clients connect as soon as the socket is bound, before this line runs; one may already have moved or removed
    // the path (the inode it names was bound under umask 0177, so it is 0600 already).
    if (process.platform !== 'win32') privateSocket(socket, this.log);
  }

  /**
   * At the connection limit: close the least recently active connection with no request under way (idle, or holding
   * only part of a frame), so that a new client is always served. False when every connection is working.
   */
  private makeRoom(): boolean {
    let oldest: [net.Socket, Client] | null = null;
    for (const entry of this.sockets) {
      if (working(entry[1])) continue;
      if (!oldest || entry[1].reader.lastMessageAt < oldest[1].reader.lastMessageAt) oldest = entry;
    }
    if (!oldest) return false;
    const [sock, client] = oldest;
    this.sockets.delete(sock);
    // Nothing of it is under way: its unread notifications are all it loses (a client reconnects on its next call).
    sock.destroy();
    this.clients.delete(client);
    this.evicted++;
    const now = Date.now();
    if (now - this.evictedLoggedAt >= 1000) {
      this.log(`closed ${this.evicted} idle connection(s) to serve new ones (limit ${Limits.connections} connections)`);
      this.evicted = 0;
      this.evictedLoggedAt = now;
    }
    return true;
  }

  /** Serve one client on a pair of streams. */
  serve(input: Readable, output: Writable, kind: Client['kind']): Client {
    const reader = new GuardedMessageReader(input, output, undefined, (m) => this.log(m), { ...Limits, ...this.frame });
    const writer = new FramedMessageWriter(output, { notificationDelayMs: NOTIFICATION_DELAY_MS });
    const connection = createMessageConnection(reader, writer, {
      error: (m) => this.log(m),
      warn: () => {},
      info: () => {},
      log: () => {},
    });
    const client: Client = {
      id: this.nextClientId++,
      kind,
      connection,
      lsp: new LspDocuments(this.store),
      initialized: false,
      reader,
      writer,
    };
    client.lsp.teamAnchors = (paths, scope) => this.core.team?.anchoredAt(paths, scope) ?? Promise.resolve([]);
    client.lsp.gitHidden = (dir, scope) => this.core.git.hiddenIn(dir, scope);

    connection.onRequest(Requests.initialize.method, (params: unknown) => {
      client.lsp.initialize(params);
      client.initialized = true;
      const result: InitializeResult = {
        serverInfo: { name: 'cairn', version: VERSION },
        protocolVersion: PROTOCOL_VERSION,
        capabilities: {
          hoverProvider: true,
          textDocumentSync: 2,
          cairn: { methods: this.core.methods(), searchModes: ['hybrid', 'fts', 'vector'], vectors: !!this.core.hooks.vectors },
        },
      };
      return result;
    });
    let shutdownRequested = false;
    connection.onRequest(Requests.shutdown.method, () => {
      shutdownRequested = true;
      return null;
    });
    connection.onNotification(Notifications.initialized.method, () => {});
    // LSP's exit: a stdio daemon belongs to its one client and stops, with status 0 after a shutdown request and 1
    // without one (as the LSP specification asks); a socket client only leaves, and its connection closes.
    connection.onNotification(Notifications.exit.method, () => {
      if (kind === 'stdio') {
        if (!this.stopping) void this.stop().then(() => process.exit(shutdownRequested ? 0 : 1));
        return;
      }
      this.clients.delete(client);
      connection.dispose();
      output.end();
    });
    client.lsp.register(connection);

    for (const method of this.core.methods()) {
      // vscode-jsonrpc calls handler(params, token), or handler(token) alone when a request has no params:
      // a lone argument is the cancellation token, not params.
      connection.onRequest(method, async (...args: unknown[]) => {
        const params = args.length >= 2 ? args[0] : undefined;
        try {
          return await this.core.request(method, params);
        } catch (e) {
          throw this.toResponseError(e, method);
        }
      });
    }
    connection.onError(([e]) => this.log(`client ${client.id}: ${e.message}`));
    connection.onClose(() => {
      this.clients.delete(client);
      if (kind === 'stdio' && !this.stopping) void this.stop().then(() => process.exit(0));
    });
    this.clients.add(client);
    connection.listen();
    return client;
  }

  private toResponseError(e: unknown, method: string): ResponseError<unknown> {
    // SQLite's own busy error (by its error code) is the documented StoreBusy, not a bug.
    const sqliteCode = (e as { code?: unknown })?.code;
    if (!(e instanceof CairnError) && typeof sqliteCode === 'string' && sqliteCode.startsWith('SQLITE_BUSY')) {
      e = new CairnError('StoreBusy', 'the store is locked by another process; try again');
    }
    const w = toWireError(e, method);
    if (w.unexpected) this.log(`internal error in ${method}: ${(e as Error)?.stack ?? String(e)}`);
    return new ResponseError(w.code, w.message, w.data);
  }

  broadcast(change: DidChangeParams): void {
    for (const c of this.clients) {
      c.connection.sendNotification(Notifications.didChange.method, change).catch(() => {});
    }
  }

  notifyAll(method: string, params: unknown): void {
    for (const c of this.clients) c.connection.sendNotification(method, params).catch(() => {});
  }

  /** Stop serving and release the store. Repeated calls (a second signal) wait for the same stop. */
  stop(): Promise<void> {
    if (!this.stopPromise) this.stopPromise = this.doStop();
    return this.stopPromise;
  }

  private async doStop(): Promise<void> {
    this.stopping = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.watchTimer) clearInterval(this.watchTimer);
    for (const fn of this.extraStop) await fn();
    for (const c of this.clients) c.connection.dispose();
    this.clients.clear();
    for (const s of this.sockets.keys()) s.destroy();
    if (this.server) {
      await new Promise<void>((r) => this.server!.close(() => r()));
      if (this.socketPath && process.platform !== 'win32') fs.rmSync(this.socketPath, { force: true });
    }
    this.store.close();
    this.releaseLock?.();
    this.log('stopped');
  }
}
