/**
 * LSP-framed message reader for the clients (pure Node, no native modules): what vscode-jsonrpc's
 * StreamMessageReader reads, parsed in the `data` callback and handed on at once. The stock reader hands every
 * message through an async semaphore (a setImmediate and a few promises per message, for pluggable async content
 * decoders this client never uses) and copies its buffer on every header read: about a tenth of a client's CPU per
 * call. Messages arrive in order, as before; a body is kept as its chunks and joined once (no quadratic copying of a
 * large reply). Errors are reported as the stock reader does (an Error through onError): a header section without
 * a numeric Content-Length, or a body that is not JSON. Like the stock reader, bytes that are not UTF-8 are decoded
 * with U+FFFD (the daemon only ever sends UTF-8).
 */
import type { Readable } from 'node:stream';
import { AbstractMessageReader, type DataCallback, type Disposable, type Message } from 'vscode-jsonrpc/node';

const HEADER_END = Buffer.from('\r\n\r\n', 'ascii');
const EMPTY = Buffer.alloc(0);

export class FramedMessageReader extends AbstractMessageReader {
  /** Bytes received and not yet consumed, as chunks (the first may be a view into a larger chunk). */
  private chunks: Buffer[] = [];
  private have = 0;
  /** Body length of the frame being read, once its headers were read; -1 while reading headers. */
  private expected = -1;
  private callback: DataCallback | null = null;
  /** Sees every message first; a message it returns true for is consumed and not handed to the connection. */
  intercept: ((message: Message) => boolean) | null = null;

  constructor(private readonly readable: Readable) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    this.expected = -1;
    this.callback = callback;
    const onData = (chunk: Buffer) => this.onData(chunk);
    const onError = (e: Error) => this.fireError(e);
    const onClose = () => this.fireClose();
    this.readable.on('data', onData);
    this.readable.on('error', onError);
    this.readable.on('close', onClose);
    return {
      dispose: () => {
        this.readable.off('data', onData);
        this.readable.off('error', onError);
        this.readable.off('close', onClose);
      },
    };
  }

  private onData(chunk: Buffer | string): void {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (data.length === 0) return;
    this.chunks.push(data);
    this.have += data.length;
    try {
      for (;;) {
        if (this.expected < 0) {
          const length = this.readHeaders();
          if (length === null) return;
          this.expected = length;
        }
        if (this.have < this.expected) return;
        const body = this.take(this.expected);
        this.expected = -1;
        let message: Message;
        try {
          message = JSON.parse(body.toString('utf8')) as Message;
        } catch (e) {
          this.fireError(e);
          continue;
        }
        if (this.intercept?.(message)) continue;
        this.callback?.(message);
      }
    } catch (e) {
      this.fireError(e);
    }
  }

  /** The first `n` bytes received (consumed), as one buffer. */
  private take(n: number): Buffer {
    if (n === 0) return EMPTY;
    let out: Buffer;
    const first = this.chunks[0];
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let at = 0;
      while (at < n) {
        const c = this.chunks[0];
        const k = Math.min(c.length, n - at);
        c.copy(out, at, 0, k);
        at += k;
        if (k === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(k);
      }
    }
    this.have -= n;
    return out;
  }

  /**
   * Consume a complete header section and return its Content-Length, or null while it is incomplete. Throws (as
   * the stock reader does) when a header line has no ':' or Content-Length is missing or not a number; the frame
   * is then dropped and reading goes on with the bytes after it.
   */
  private readHeaders(): number | null {
    if (this.have === 0) return null;
    if (this.chunks.length > 1) {
      // Headers split across chunks (rare): join what is buffered once to look for their end.
      const all = Buffer.concat(this.chunks, this.have);
      this.chunks = [all];
    }
    const buf = this.chunks[0];
    const end = buf.indexOf(HEADER_END);
    if (end < 0) return null;
    const text = buf.toString('ascii', 0, end);
    this.take(end + 4);
    let contentLength: string | undefined;
    const headers = new Map<string, string>();
    for (const line of text.split('\r\n')) {
      const i = line.indexOf(':');
      if (i === -1) throw new Error(`Message header must separate key and value using ':'\n${line}`);
      const key = line.substring(0, i).trim().toLowerCase();
      const value = line.substring(i + 1).trim();
      headers.set(key, value);
      if (key === 'content-length') contentLength = value;
    }
    if (!contentLength) throw new Error(`Header must provide a Content-Length property.\n${JSON.stringify(Object.fromEntries(headers))}`);
    const length = parseInt(contentLength);
    if (isNaN(length)) throw new Error(`Content-Length value must be a number. Got ${contentLength}`);
    return length;
  }
}
