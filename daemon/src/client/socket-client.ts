/**
 * A small typed client for the daemon's socket (or any pair of streams),
 * used by the CLI, the MCP bridge and tests. Pure Node + vscode-jsonrpc: no
 * native modules, so any process may load it.
 */
import type { Readable, Writable } from 'node:stream';
import { createMessageConnection, ResponseError, StreamMessageReader, type MessageConnection } from 'vscode-jsonrpc/node';
import { connectSocket } from './daemon-info';
import { FramedMessageWriter } from './framed-writer';
import type { z } from 'zod';
import { CairnError, errorCodeNames, type ErrorCodeName } from '../protocol/errors';
import { Notifications, Requests, type NotificationDef, type RequestDef } from '../protocol/methods';
import type { DidChangeParams, InitializeResult } from '../protocol/types';

export interface CairnClient {
  call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>>;
  close(): Promise<void>;
  readonly mode: 'daemon' | 'direct';
}

/** Turn a JSON-RPC error reply back into the CairnError the daemon threw. */
export function fromResponseError(e: unknown): unknown {
  if (e instanceof ResponseError) {
    const name = (e.data as { name?: ErrorCodeName } | undefined)?.name ?? errorCodeNames[e.code];
    if (name) {
      const { name: _n, ...extra } = (e.data ?? {}) as Record<string, unknown>;
      return new CairnError(name, e.message, extra);
    }
  }
  return e;
}

export class StreamClient implements CairnClient {
  readonly mode = 'daemon' as const;
  readonly connection: MessageConnection;
  private closed = false;

  constructor(input: Readable, output: Writable, private readonly onClose?: () => void) {
    this.connection = createMessageConnection(new StreamMessageReader(input), new FramedMessageWriter(output));
    this.connection.onClose(() => {
      this.closed = true;
    });
    this.connection.listen();
  }

  static async connect(socketPath: string, timeoutMs = 3000): Promise<StreamClient> {
    const sock = await connectSocket(socketPath, timeoutMs);
    return new StreamClient(sock, sock, () => sock.destroy());
  }

  async initialize(clientName = 'cairn-client'): Promise<InitializeResult> {
    const r = await this.call(Requests.initialize, { processId: process.pid, clientInfo: { name: clientName }, capabilities: {} });
    await this.connection.sendNotification(Notifications.initialized.method, {});
    return r;
  }

  async call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>> {
    if (this.closed) throw new CairnError('Internal', 'the connection to the daemon is closed');
    try {
      return (await this.connection.sendRequest(def.method, params)) as z.infer<R>;
    } catch (e) {
      throw fromResponseError(e);
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
