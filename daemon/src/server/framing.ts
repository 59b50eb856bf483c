/**
 * LSP base-protocol framing (Content-Length headers) with the guards a shared
 * daemon needs: a maximum message size, and error replies — instead of silent
 * drops — for bodies that are not JSON or not JSON-RPC. A frame whose headers
 * cannot be parsed gets an error reply and the connection is closed (the byte
 * stream cannot be re-synchronised); every other connection keeps being served.
 *
 * Memory and time per connection are bounded (docs/protocol.md#limits): a body is kept as its chunks and joined once
 * (at most Limits.messageBytes); a frame's header section must be complete within Limits.frameHeaderMs of its first
 * byte and the whole frame within Limits.frameTimeMs (a total deadline: a peer sending one byte now and then is
 * closed as surely as one that stopped); reading pauses while more than Limits.outputHighWaterBytes of replies wait
 * for the peer, and a peer that leaves more than Limits.outputMaxBytes unread is disconnected. Bodies that are not
 * valid UTF-8 are refused, never decoded with U+FFFD: with `InvalidParams` to the request's id when the id can be
 * read, else ParseError with id null. An empty body is a ParseError; a Content-Length over the size limit, however
 * many digits, is ValueTooLarge.
 */
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { AbstractMessageReader, type DataCallback, type Disposable, type Message } from 'vscode-jsonrpc/node';
export { FramedMessageWriter } from '../client/framed-writer';
import { ErrorCodes } from '../protocol/errors';
import type { FrameLimits } from './limits';
import { Limits } from '../protocol/types';
import { SLICED_PARSE_BYTES, decodeSliced, parseSliced } from './sliced-json';

const HEADER_END = Buffer.from('\r\n\r\n');
/** How long a socket ended after a typed reply goes on reading (and dropping) what its peer still sends. */
export const CLOSE_LINGER_MS = 2000;

/**
 * End a socket after its last reply (written before, or `last`): the peer reads the reply, then the end of the
 * stream. What the peer still sends is read and dropped until it closes or CLOSE_LINGER_MS pass. Destroying the
 * socket at once would make a peer that writes again before reading fail with EPIPE and lose the unread reply.
 */
export function endAfterReply(sock: Socket, last?: string): void {
  if (last === undefined) sock.end();
  else sock.end(last);
  sock.resume();
  setTimeout(() => sock.destroy(), CLOSE_LINGER_MS).unref();
}
const MAX_HEADER_BYTES = 8 * 1024;

export const JsonRpcErrors = { ParseError: -32700, InvalidRequest: -32600 } as const;

/** The time and output limits of one connection (Limits' values by default; the daemon's can come from settings). */
export type ReaderLimits = FrameLimits & { outputHighWaterBytes: number; outputMaxBytes: number };

const CONTENT_LENGTH = Buffer.from('Content-Length: ', 'latin1');

/** The length of a header section (bytes [0, end)) that is exactly `Content-Length: ` and 1–15 digits, else null. */
export function fastContentLength(buf: Buffer, end: number): number | null {
  const start = CONTENT_LENGTH.length;
  if (end <= start || end > start + 15 || buf.compare(CONTENT_LENGTH, 0, start, 0, start) !== 0) return null;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = buf[i] - 48;
    if (d < 0 || d > 9) return null;
    n = n * 10 + d;
  }
  return n;
}

export class GuardedMessageReader extends AbstractMessageReader {
  /** Raw chunks received and not yet consumed (while reading is paused for backpressure). */
  private pending: Buffer[] = [];
  /** Header bytes of the frame being read (bounded by MAX_HEADER_BYTES). */
  private header: Buffer = Buffer.alloc(0);
  /** Body chunks of the frame being read: concatenated once, when complete (no quadratic copying). */
  private body: Buffer[] = [];
  private bodyGot = 0;
  private expected: number | null = null;
  private skipping = 0;
  private callback: DataCallback | null = null;
  /** Reading stopped until the peer has read the replies waiting for it. */
  private paused = false;
  /** A large frame is being decoded and parsed in slices: later frames of this connection wait for it (order). */
  private parsing = false;
  private closed = false;
  private frameTimer: NodeJS.Timeout | null = null;
  /** performance.now() when the first byte of the frame being read arrived (0: between frames). */
  private frameStart = 0;
  /** Requests (messages with a method and an id) handed on so far: the daemon compares it with the replies written. */
  requests = 0;
  /** When the last message was handed on (or the connection opened): the daemon closes the least recently active. */
  lastMessageAt = performance.now();
  private outputTimer: NodeJS.Timeout | null = null;
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly maxBytes: number = Limits.messageBytes,
    private readonly log: (msg: string) => void = () => {},
    private readonly limits: ReaderLimits = Limits,
  ) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    const onData = (chunk: Buffer) => {
      if (this.closed) return; // closed after a typed reply: what the peer still sends is dropped (endAfterReply)
      this.pending.push(chunk);
      this.pump();
    };
    const onError = (e: Error) => this.fireError(e);
    const onClose = () => this.shut();
    const onDrain = () => this.resume();
    this.input.on('data', onData);
    this.input.on('error', onError);
    this.input.on('close', onClose);
    this.input.on('end', onClose);
    this.output.on('drain', onDrain);
    // A client that never reads: its unsent replies and notifications are capped (checked once a second).
    this.outputTimer = setInterval(() => this.checkOutput(), 1000);
    this.outputTimer.unref?.();
    return {
      dispose: () => {
        this.input.off('data', onData);
        this.input.off('error', onError);
        this.input.off('close', onClose);
        this.input.off('end', onClose);
        this.output.off('drain', onDrain);
        this.clearTimers();
      },
    };
  }

  private clearTimers(): void {
    if (this.frameTimer) clearTimeout(this.frameTimer);
    if (this.outputTimer) clearInterval(this.outputTimer);
    this.frameTimer = this.outputTimer = null;
  }

  private shut(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = [];
    this.body = [];
    this.header = Buffer.alloc(0);
    this.clearTimers();
    this.fireClose();
  }

  /** A large frame of this connection is being decoded and parsed (its request is under way). */
  get busy(): boolean {
    return this.parsing;
  }

  /** Bytes written to this connection and not yet taken by the peer. */
  private unsent(): number {
    return (this.output as Writable & { writableLength?: number }).writableLength ?? 0;
  }

  /** Close a connection whose peer stopped reading once its unsent output passes the cap. Returns true when closed. */
  checkOutput(): boolean {
    if (this.closed) return true;
    const n = this.unsent();
    if (n <= this.limits.outputMaxBytes) return false;
    this.log(`closing a connection: ${n} bytes of replies unread (limit ${this.limits.outputMaxBytes})`);
    this.input.destroy();
    if (this.output !== (this.input as unknown)) this.output.destroy();
    this.shut();
    return true;
  }

  private resume(): void {
    if (!this.paused || this.closed || this.parsing) return;
    if (this.unsent() > this.limits.outputHighWaterBytes) return;
    this.paused = false;
    this.input.resume();
    this.pump();
  }

  /** Consume buffered chunks until done, paused (backpressure) or closed. */
  private pump(): void {
    while (!this.paused && !this.closed && this.pending.length > 0) {
      let chunk = this.pending.shift()!;
      while (chunk.length > 0 && !this.paused && !this.closed) chunk = this.consume(chunk);
      if (chunk.length > 0 && !this.closed) this.pending.unshift(chunk);
    }
    this.armDeadline();
  }

  /**
   * The deadline of the frame being read: its header section within frameHeaderMs of its first byte, all of it within
   * frameTimeMs. Bytes arriving meanwhile do not move it. Reading pauses only between frames, so a paused reader never
   * holds a partial frame.
   */
  private armDeadline(): void {
    if (this.frameTimer) clearTimeout(this.frameTimer);
    this.frameTimer = null;
    const inHeader = this.expected === null && this.skipping === 0;
    const partial = this.header.length > 0 || !inHeader;
    if (!partial || this.paused || this.closed) {
      if (!partial) this.frameStart = 0;
      return;
    }
    const limit = inHeader ? Math.min(this.limits.frameHeaderMs, this.limits.frameTimeMs) : this.limits.frameTimeMs;
    const what = inHeader ? 'header section' : 'frame';
    this.frameTimer = setTimeout(
      () => {
        this.log(`closing a connection: a ${what} was not complete within ${limit} ms`);
        this.reply(null, JsonRpcErrors.ParseError, `${what} not complete within ${limit} ms; closing the connection`, { limit });
        this.closeAfterReply();
      },
      Math.max(0, this.frameStart + limit - performance.now()),
    );
    this.frameTimer.unref?.();
  }

  /** Write a raw JSON-RPC error reply (used before vscode-jsonrpc ever sees the message). */
  private reply(id: string | number | null, code: number, message: string, data?: unknown): void {
    const body = JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } });
    try {
      if (!this.output.destroyed) this.output.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    } catch {
      /* peer gone */
    }
  }

  /** Consume the start of `chunk`; returns what is left of it. */
  private consume(chunk: Buffer): Buffer {
    if (this.skipping > 0) {
      const n = Math.min(this.skipping, chunk.length);
      this.skipping -= n;
      return chunk.subarray(n);
    }
    if (this.expected === null) {
      if (this.header.length === 0) this.frameStart = performance.now();
      const buf = this.header.length === 0 ? chunk : Buffer.concat([this.header, chunk]);
      const end = buf.indexOf(HEADER_END);
      if (end < 0) {
        if (buf.length > MAX_HEADER_BYTES) {
          this.malformed('header section too long or not terminated by CRLF CRLF');
          return Buffer.alloc(0);
        }
        this.header = Buffer.from(buf); // own copy: do not pin a large chunk
        return Buffer.alloc(0);
      }
      if (end > MAX_HEADER_BYTES) {
        this.malformed('header section too long');
        return Buffer.alloc(0);
      }
      this.header = Buffer.alloc(0);
      // The header section every client sends, `Content-Length: <digits>`, read from its bytes; any other goes through
      // the general parse below (which gives the same length for this one).
      let length = fastContentLength(buf, end);
      const headers = length === null ? buf.subarray(0, end).toString('latin1').split('\r\n') : [];
      for (const h of headers) {
        const i = h.indexOf(':');
        if (i <= 0) {
          this.malformed(`malformed header line ${JSON.stringify(h.slice(0, 80))}`);
          return Buffer.alloc(0);
        }
        if (h.slice(0, i).trim().toLowerCase() === 'content-length') {
          const v = h.slice(i + 1).trim();
          if (!/^\d+$/.test(v)) {
            this.malformed(`Content-Length is not a number: ${JSON.stringify(v.slice(0, 40))}`);
            return Buffer.alloc(0);
          }
          // More than 15 digits is past any limit (and past exact doubles): too large, not malformed.
          length = v.length > 15 ? Infinity : Number(v);
        }
      }
      if (length === null) {
        this.malformed('missing Content-Length header');
        return Buffer.alloc(0);
      }
      const rest = buf.subarray(end + HEADER_END.length);
      if (length > this.maxBytes) {
        const shown = Number.isFinite(length)
          ? `${length}`
          : `${buf
              .subarray(0, Math.min(end, 80))
              .toString('latin1')
              .replace(/^.*?:\s*/s, '')}`;
        this.log(`refused a ${shown}-byte message (limit ${this.maxBytes})`);
        this.reply(null, ErrorCodes.ValueTooLarge, `message of ${shown} bytes exceeds the ${this.maxBytes}-byte limit`, {
          name: 'ValueTooLarge',
          limit: this.maxBytes,
        });
        if (length > Number.MAX_SAFE_INTEGER) {
          // Bytes that could never all arrive cannot be skipped to the next frame: this connection ends here.
          this.log('closing a connection: its Content-Length is past any size that can be skipped');
          this.closeAfterReply();
          return Buffer.alloc(0);
        }
        this.skipping = length;
        return rest;
      }
      if (length === 0) {
        // No body to wait for: answered now (an empty body is not JSON), and the connection reads on.
        this.reply(null, JsonRpcErrors.ParseError, 'empty message body (Content-Length: 0)');
        return rest;
      }
      this.expected = length;
      this.body = [];
      this.bodyGot = 0;
      return rest;
    }
    const need = this.expected - this.bodyGot;
    const take = chunk.length <= need ? chunk : chunk.subarray(0, need);
    if (take.length > 0) this.body.push(take);
    this.bodyGot += take.length;
    if (this.bodyGot === this.expected) {
      const full = this.body.length === 1 ? this.body[0] : Buffer.concat(this.body, this.bodyGot);
      this.body = [];
      this.bodyGot = 0;
      this.expected = null;
      if (full.length >= SLICED_PARSE_BYTES) {
        // A large frame: decoded and parsed in slices that yield, so other connections are served meanwhile. This
        // connection's later frames wait (requests are handled in the order they were sent).
        this.paused = this.parsing = true;
        this.input.pause();
        void this.deliverSliced(full).finally(() => {
          this.parsing = false;
          this.paused = false;
          if (this.closed) return;
          if (this.unsent() > this.limits.outputHighWaterBytes) this.paused = true;
          else {
            this.input.resume();
            this.pump();
          }
        });
        return chunk.subarray(take.length);
      }
      this.deliver(full);
      // Backpressure: stop reading this connection while its replies wait to be read.
      if (!this.closed && this.unsent() > this.limits.outputHighWaterBytes) {
        this.paused = true;
        this.input.pause();
      }
    }
    return chunk.subarray(take.length);
  }

  private malformed(why: string): void {
    this.log(`closing a connection: ${why}`);
    this.reply(null, JsonRpcErrors.ParseError, `malformed frame: ${why}`);
    this.closeAfterReply();
  }

  /**
   * Close the connection after the typed reply just written. A socket is ended after the reply (endAfterReply), not
   * destroyed; on stdio (a client's own daemon) the input is closed, which stops the daemon.
   */
  private closeAfterReply(): void {
    this.shut();
    if (this.output === (this.input as unknown)) endAfterReply(this.input as unknown as Socket);
    else this.input.destroy();
  }

  private async deliverSliced(body: Buffer): Promise<void> {
    // Let other connections' frames that arrived meanwhile go first: a large frame never runs in the turn it completed.
    await new Promise<void>((resolve) => setImmediate(resolve));
    let text: string;
    try {
      text = await decodeSliced(body);
    } catch {
      this.notUtf8(await parseSliced(body.toString('utf8')).catch(() => undefined));
      return;
    }
    let msg: unknown;
    try {
      msg = await parseSliced(text);
    } catch (e) {
      this.reply(null, JsonRpcErrors.ParseError, `invalid JSON: ${(e as Error).message}`);
      return;
    }
    if (!this.closed) this.dispatch(msg);
  }

  private deliver(body: Buffer): void {
    let text: string;
    try {
      text = this.decoder.decode(body);
    } catch {
      let lossy: unknown;
      try {
        lossy = JSON.parse(body.toString('utf8'));
      } catch {
        /* not JSON either: no id to answer */
      }
      this.notUtf8(lossy);
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      this.reply(null, JsonRpcErrors.ParseError, `invalid JSON: ${(e as Error).message}`);
      return;
    }
    this.dispatch(msg);
  }

  /**
   * A body that is not valid UTF-8. It is never handled, but a request whose id can still be read (the bad bytes
   * sit inside a string, say) is answered under that id, so its caller is not left waiting: `InvalidParams`.
   * Anything else gets ParseError with id null. `lossy` is the body decoded with U+FFFD and parsed, if it parses.
   */
  private notUtf8(lossy: unknown): void {
    const m = lossy as { id?: unknown; method?: unknown } | null | undefined;
    let id: string | number | null = null;
    if (m && typeof m === 'object' && typeof m.method === 'string') {
      if (typeof m.id === 'string' || (typeof m.id === 'number' && Number.isFinite(m.id))) id = m.id;
    }
    if (id === null) {
      this.reply(null, JsonRpcErrors.ParseError, 'message body is not valid UTF-8');
      return;
    }
    this.lastMessageAt = performance.now();
    this.reply(id, ErrorCodes.InvalidParams, 'message body is not valid UTF-8; nothing was done', { name: 'InvalidParams' });
  }

  /** Check a parsed message's JSON-RPC shape and hand it on. */
  private dispatch(msg: unknown): void {
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
    if ('id' in m && m.id !== null && typeof m.id !== 'string' && !(typeof m.id === 'number' && Number.isFinite(m.id))) {
      this.reply(null, JsonRpcErrors.InvalidRequest, 'id must be a string, a number or null');
      return;
    }
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
    if (isRequest && m.id !== undefined && m.id !== null) this.requests++;
    this.lastMessageAt = performance.now();
    this.callback?.(m as unknown as Message);
  }
}
