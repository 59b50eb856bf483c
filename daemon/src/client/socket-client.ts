/**
 * A small typed client for the daemon's socket (or any pair of streams),
 * used by the CLI, the MCP bridge and tests. Pure Node + vscode-jsonrpc: no
 * native modules, so any process may load it.
 */
import type { Readable, Writable } from 'node:stream';
import {
  ConnectionError,
  createMessageConnection,
  ErrorCodes as RpcErrorCodes,
  ResponseError,
  type Message,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import { connectSocket } from './daemon-info';
import { FramedMessageReader } from './framed-reader';
import { FramedMessageWriter } from './framed-writer';
import type { z } from 'zod';
import { CairnError, toCairnError } from '../protocol/errors';
import { Notifications, Requests, type NotificationDef, type RequestDef } from '../protocol/methods';
import type { DidChangeParams, InitializeResult } from '../protocol/types';
import { checkParamsShape } from '../protocol/shape';

/** An error reply's `error` member, as it arrives on the wire. */
interface ResponseErrorLiteral {
  code: number;
  message: string;
  data?: unknown;
}

export interface CairnClient {
  call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>>;
  close(): Promise<void>;
  readonly mode: 'daemon' | 'direct';
}

/** Turn a JSON-RPC error reply back into the CairnError the daemon threw (see protocol/errors.ts). */
export function fromResponseError(e: unknown): unknown {
  return e instanceof ResponseError ? toCairnError(e) : e;
}

/** The daemon cannot be reached, or went away before answering. `sent`: whether the request was written. */
export function unavailable(message: string, sent: boolean, extra: Record<string, unknown> = {}): CairnError {
  return new CairnError('Unavailable', message, { sent, ...extra });
}

/**
 * A client of the daemon over a pair of streams. Its requests and the replies to them, and the notifications it has
 * handlers for (onNotification), go between the frame reader/writer and the caller directly, in the order they
 * arrive, as vscode-jsonrpc's MessageConnection would deliver them, without its message queue (a setImmediate per
 * message received), its request bookkeeping (cancellation, tracing) and its parsing of notifications nobody
 * listens to (a memory/didChange per write): about a fifth of a client's CPU per call. `connection` is still there
 * for sending notifications and for its close event; a notification without a handler here is dropped, as the
 * connection dropped it.
 */
export class StreamClient implements CairnClient {
  readonly mode = 'daemon' as const;
  readonly connection: MessageConnection;
  private closed = false;
  /** Requests written and not yet answered: failed with Unavailable when the connection ends. */
  private readonly pending = new Set<(e: CairnError) => void>();
  private readonly writer: FramedMessageWriter;
  /** Requests waiting for their reply, by id (ids count from 0, as the connection's did). */
  private readonly replies = new Map<number, { resolve: (r: unknown) => void; reject: (e: unknown) => void }>();
  private nextId = 0;
  private readonly handlers = new Map<string, (...params: unknown[]) => void>();

  constructor(
    input: Readable,
    output: Writable,
    private readonly onClose?: () => void,
  ) {
    const reader = new FramedMessageReader(input);
    reader.intercept = (m) => this.receive(m);
    this.writer = new FramedMessageWriter(output);
    this.connection = createMessageConnection(reader, this.writer);
    const ended = () => {
      this.closed = true;
      const waiting = [...this.pending];
      this.pending.clear();
      for (const fail of waiting)
        fail(unavailable('the connection to the daemon closed before it answered; the request may or may not have been applied', true));
    };
    this.connection.onClose(ended);
    input.once('close', ended);
    input.once('end', ended);
    this.connection.listen();
  }

  /** Connect to a daemon's socket. Throws Unavailable (`sent: false`) when nothing (trustworthy) answers there. */
  static async connect(socketPath: string, timeoutMs = 3000): Promise<StreamClient> {
    let sock: import('node:net').Socket;
    try {
      sock = await connectSocket(socketPath, timeoutMs);
    } catch (e) {
      throw unavailable(`cannot connect to the Cairn daemon on ${socketPath}: ${(e as Error).message}`, false, { socket: socketPath });
    }
    return new StreamClient(sock, sock, () => sock.destroy());
  }

  async initialize(clientName = 'cairn-client'): Promise<InitializeResult> {
    const r = await this.call(Requests.initialize, { processId: process.pid, clientInfo: { name: clientName }, capabilities: {} });
    await this.connection.sendNotification(Notifications.initialized.method, {});
    return r;
  }

  /**
   * A message from the daemon: a reply to one of our requests, or a notification we have a handler for, is handled
   * here (true); anything else goes to the connection.
   */
  private receive(m: Message): boolean {
    const msg = m as { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: ResponseErrorLiteral };
    if (typeof msg.method === 'string') {
      if (msg.id !== undefined) return false; // a request (the daemon sends none): the connection answers it
      if (this.closed) return true;
      const handler = this.handlers.get(msg.method);
      if (!handler) return true; // as the connection: a notification nobody handles is dropped
      try {
        if (msg.params === undefined) handler();
        else if (Array.isArray(msg.params)) handler(...(msg.params as unknown[]));
        else handler(msg.params);
      } catch {
        /* a handler's failure is not the connection's (the connection only logged it) */
      }
      return true;
    }
    if (typeof msg.id !== 'number') return false;
    const waiting = this.replies.get(msg.id);
    if (!waiting) return false;
    if (this.closed) return true;
    this.replies.delete(msg.id);
    if (msg.error) waiting.reject(new ResponseError(msg.error.code, msg.error.message, msg.error.data));
    else if (msg.result !== undefined) waiting.resolve(msg.result);
    // else: a reply with neither (never sent by the daemon): the connection left the request unsettled too
    return true;
  }

  async call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>> {
    if (this.closed) throw unavailable('the connection to the daemon is closed', false);
    // The daemon's shape limits, checked iteratively before JSON.stringify (recursive) writes the params: a filter
    // nested thousands deep gets InvalidFilter here, as it would from the daemon, instead of a stack overflow.
    checkParamsShape(params);
    const id = this.nextId++;
    // The params as the connection sent one argument: an object as it is, anything else as a one-element array.
    const p = params as unknown;
    const message = {
      jsonrpc: '2.0',
      id,
      method: def.method,
      params: p !== null && p !== undefined && typeof p === 'object' && !Array.isArray(p) ? p : [p === undefined ? null : p],
    };
    // Settled by the reply, or failed by `ended` when the connection closes first (one promise per call).
    let fail!: (e: CairnError) => void;
    try {
      return await new Promise<z.infer<R>>((resolve, reject) => {
        fail = reject;
        this.pending.add(fail);
        this.replies.set(id, { resolve: resolve as (r: unknown) => void, reject });
        this.writer.write(message as Message).catch((e: Error) => {
          this.replies.delete(id);
          reject(new ResponseError(RpcErrorCodes.MessageWriteError, e?.message ? e.message : 'Unknown reason'));
        });
      });
    } catch (e) {
      if (e instanceof CairnError) throw e;
      // vscode-jsonrpc refuses to write on a closed connection (not sent), and rejects pending requests when disposed.
      if (e instanceof ConnectionError) throw unavailable(`the connection to the daemon is closed: ${e.message}`, false);
      if (e instanceof ResponseError && e.code === RpcErrorCodes.PendingResponseRejected)
        throw unavailable(`the connection to the daemon closed before it answered: ${e.message}`, true);
      throw toCairnError(e);
    } finally {
      this.pending.delete(fail);
      this.replies.delete(id);
    }
  }

  onNotification<P extends z.ZodType>(def: NotificationDef<P>, fn: (p: z.infer<P>) => void): void {
    this.handlers.set(def.method, fn as (...params: unknown[]) => void);
  }

  onDidChange(fn: (c: DidChangeParams) => void): void {
    this.onNotification(Notifications.didChange, fn);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Requests still waiting fail as the connection's dispose failed them.
    const waiting = [...this.replies.values()];
    this.replies.clear();
    for (const w of waiting)
      w.reject(new ResponseError(RpcErrorCodes.PendingResponseRejected, 'Pending response rejected since connection got disposed'));
    this.connection.dispose();
    this.onClose?.();
  }
}
