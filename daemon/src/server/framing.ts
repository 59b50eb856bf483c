/**
 * LSP base-protocol framing (Content-Length headers) with the guards a shared
 * daemon needs: a maximum message size, and error replies — instead of silent
 * drops — for bodies that are not JSON or not JSON-RPC. A frame whose headers
 * cannot be parsed gets an error reply and the connection is closed (the byte
 * stream cannot be re-synchronised); every other connection keeps being served.
 */
import type { Readable, Writable } from 'node:stream';
import { AbstractMessageReader, type DataCallback, type Disposable, type Message } from 'vscode-jsonrpc/node';
export { FramedMessageWriter } from '../client/framed-writer';
import { ErrorCodes } from '../protocol/errors';
import { Limits } from '../protocol/types';

const HEADER_END = Buffer.from('\r\n\r\n');
const MAX_HEADER_BYTES = 8 * 1024;

export const JsonRpcErrors = { ParseError: -32700, InvalidRequest: -32600 } as const;

export class GuardedMessageReader extends AbstractMessageReader {
  private buffer: Buffer = Buffer.alloc(0);
  private expected: number | null = null;
  private skipping = 0;
  private callback: DataCallback | null = null;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly maxBytes: number = Limits.messageBytes,
    private readonly log: (msg: string) => void = () => {},
  ) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    const onData = (chunk: Buffer) => this.onData(chunk);
    const onError = (e: Error) => this.fireError(e);
    const onClose = () => this.fireClose();
    this.input.on('data', onData);
    this.input.on('error', onError);
    this.input.on('close', onClose);
    this.input.on('end', onClose);
    return {
      dispose: () => {
        this.input.off('data', onData);
        this.input.off('error', onError);
        this.input.off('close', onClose);
        this.input.off('end', onClose);
      },
    };
  }

  /** Write a raw JSON-RPC error reply (used before vscode-jsonrpc ever sees the message). */
  private reply(id: string | number | null, code: number, message: string, data?: unknown): void {
    const body = JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } });
    try {
      this.output.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    } catch {
      /* peer gone */
    }
  }

  private onData(chunk: Buffer): void {
    if (this.skipping > 0) {
      const n = Math.min(this.skipping, chunk.length);
      this.skipping -= n;
      chunk = chunk.subarray(n);
      if (chunk.length === 0) return;
    }
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      if (this.expected === null) {
        const end = this.buffer.indexOf(HEADER_END);
        if (end < 0) {
          if (this.buffer.length > MAX_HEADER_BYTES) return this.malformed('header section too long or not terminated by CRLF CRLF');
          return;
        }
        const headers = this.buffer.subarray(0, end).toString('ascii').split('\r\n');
        let length: number | null = null;
        for (const h of headers) {
          const i = h.indexOf(':');
          if (i <= 0) return this.malformed(`malformed header line ${JSON.stringify(h.slice(0, 80))}`);
          if (h.slice(0, i).trim().toLowerCase() === 'content-length') {
            const v = h.slice(i + 1).trim();
            if (!/^\d+$/.test(v)) return this.malformed(`Content-Length is not a number: ${JSON.stringify(v.slice(0, 40))}`);
            length = Number(v);
          }
        }
        if (length === null) return this.malformed('missing Content-Length header');
        this.buffer = this.buffer.subarray(end + HEADER_END.length);
        if (length > this.maxBytes) {
          this.log(`refused a ${length}-byte message (limit ${this.maxBytes})`);
          this.reply(null, ErrorCodes.ValueTooLarge, `message of ${length} bytes exceeds the ${this.maxBytes}-byte limit`, { name: 'ValueTooLarge', limit: this.maxBytes });
          const n = Math.min(length, this.buffer.length);
          this.buffer = this.buffer.subarray(n);
          this.skipping = length - n;
          if (this.skipping > 0) return;
          continue;
        }
        this.expected = length;
      }
      if (this.buffer.length < this.expected) return;
      const body = this.buffer.subarray(0, this.expected);
      this.buffer = this.buffer.subarray(this.expected);
      this.expected = null;
      this.deliver(body);
    }
  }

  private malformed(why: string): void {
    this.log(`closing a connection: ${why}`);
    this.reply(null, JsonRpcErrors.ParseError, `malformed frame: ${why}`);
    this.buffer = Buffer.alloc(0);
    this.input.destroy();
    this.fireClose();
  }

  private deliver(body: Buffer): void {
    let msg: unknown;
    try {
      msg = JSON.parse(body.toString('utf8'));
    } catch (e) {
      this.reply(null, JsonRpcErrors.ParseError, `invalid JSON: ${(e as Error).message}`);
      return;
    }
    if (Array.isArray(msg)) {
      this.reply(null, JsonRpcErrors.InvalidRequest, 'batch requests are not supported; send one message per frame');
      return;
    }
    if (typeof msg !== 'object' || msg === null) {
      this.reply(null, JsonRpcErrors.InvalidRequest, 'a JSON-RPC message must be an object');
      return;
    }
    const m = msg as Record<string, unknown>;
    const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null;
    if (m.jsonrpc !== '2.0') {
      this.reply(id, JsonRpcErrors.InvalidRequest, 'jsonrpc must be "2.0"');
      return;
    }
    const isRequest = 'method' in m;
    const isResponse = 'result' in m || 'error' in m;
    if (isRequest && typeof m.method !== 'string') {
      this.reply(id, JsonRpcErrors.InvalidRequest, 'method must be a string');
      return;
    }
    if (!isRequest && !isResponse) {
      this.reply(id, JsonRpcErrors.InvalidRequest, 'not a request, notification or response');
      return;
    }
    if ('params' in m && m.params !== null && typeof m.params !== 'object') {
      this.reply(id, JsonRpcErrors.InvalidRequest, 'params must be an object or array');
      return;
    }
    this.callback?.(m as unknown as Message);
  }
}

