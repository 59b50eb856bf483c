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
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import { connectSocket } from './daemon-info';
import { FramedMessageReader } from './framed-reader';
import { FramedMessageWriter } from './framed-writer';
import type { z } from 'zod';
import { CairnError, toCairnError } from '../protocol/errors';
import { Notifications, Requests, type NotificationDef, type RequestDef } from '../protocol/methods';
import type { DidChangeParams, InitializeResult } from '../protocol/types';

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

export class StreamClient implements CairnClient {
  readonly mode = 'daemon' as const;
  readonly connection: MessageConnection;
  private closed = false;
  /** Requests written and not yet answered: failed with Unavailable when the connection ends. */
  private readonly pending = new Set<(e: CairnError) => void>();

  constructor(
    input: Readable,
    output: Writable,
    private readonly onClose?: () => void,
  ) {
    this.connection = createMessageConnection(new FramedMessageReader(input), new FramedMessageWriter(output));
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

  async call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>> {
    if (this.closed) throw unavailable('the connection to the daemon is closed', false);
    // Settled by the reply, or failed by `ended` when the connection closes first (one promise per call).
    let fail!: (e: CairnError) => void;
    try {
      return await new Promise<z.infer<R>>((resolve, reject) => {
        fail = reject;
        this.pending.add(fail);
        this.connection.sendRequest<z.infer<R>>(def.method, params).then(resolve, reject);
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
    }
  }

  onNotification<P extends z.ZodType>(def: NotificationDef<P>, fn: (p: z.infer<P>) => void): void {
    this.connection.onNotification(def.method, fn as (p: unknown) => void);
  }

  onDidChange(fn: (c: DidChangeParams) => void): void {
    this.onNotification(Notifications.didChange, fn);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.connection.dispose();
    this.onClose?.();
  }
}
