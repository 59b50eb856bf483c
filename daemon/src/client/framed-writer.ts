/** LSP-framed message writer shared by the daemon and its clients (pure Node, no native modules). */
import type { Writable } from 'node:stream';
import { AbstractMessageWriter, type Message, type MessageWriter } from 'vscode-jsonrpc/node';

/** A result array at least this long is serialized in slices (writeSliced). */
const BIG_ARRAY = 1024;
const SLICE_MS = 8;

function bigResult(msg: Message): boolean {
  const r = (msg as { result?: unknown }).result;
  if (r === null || typeof r !== 'object' || Array.isArray(r)) return false;
  for (const v of Object.values(r)) if (Array.isArray(v) && v.length >= BIG_ARRAY) return true;
  return false;
}

/**
 * Writes each message as one buffer (header + body) and coalesces the messages written together into one system
 * call (cork, then one uncork). The stock writer awaits the header write before writing the body, two event-loop
 * round trips per message; with a reply and a memory/didChange per upsert that halved write throughput.
 *
 * When the corked frames go out:
 * - a request or a reply (a message with an id): at the end of the current tick (process.nextTick, after the
 *   microtasks that wrote it), with every notification written before it. Waiting for setImmediate instead let
 *   other I/O callbacks of the same event-loop turn (the indexer's embedding results, a few tenths of a ms) run
 *   before the reply left, while the peer waited for it;
 * - notifications alone: after `notificationDelayMs` (0: setImmediate), unless a reply goes first and takes them
 *   along. The daemon uses a short delay, so the indexer's memory/possibleDuplicates of one write usually leaves
 *   with the next reply, in one system call and one wake-up of the client instead of two. A reply sent on any
 *   connection of the process first sends the notifications waiting on every other one, so a notification written
 *   before a reply never arrives after it, on whichever connection (store/progress of an import, then its reply).
 */
/** Writers holding notifications only, in the order they started waiting. */
const waiting = new Set<FramedMessageWriter>();

export class FramedMessageWriter extends AbstractMessageWriter implements MessageWriter {
  private corked = false;
  /** How the corked frames are flushed: at the end of this tick (a reply is in), or later (notifications only). */
  private flushAt: 'none' | 'tick' | 'later' = 'none';
  private laterTimer: NodeJS.Timeout | null = null;
  private laterImmediate: NodeJS.Immediate | null = null;
  private errors = 0;
  /** Replies (messages with an id and no method) written so far. */
  replies = 0;
  private readonly flushNow = () => this.flush();

  constructor(
    private readonly output: Writable,
    private readonly opts: { notificationDelayMs?: number } = {},
  ) {
    super();
    output.on('error', (e) => this.fireError(e));
    output.on('close', () => this.fireClose());
  }

  async write(msg: Message): Promise<void> {
    if ((msg as { id?: unknown }).id !== undefined && (msg as { method?: unknown }).method === undefined) this.replies++;
    if (bigResult(msg)) return this.writeSliced(msg as Message & { result: Record<string, unknown> });
    const json = JSON.stringify(msg);
    const bytes = Buffer.byteLength(json, 'utf8');
    // An ASCII frame (most are: JSON.stringify escapes nothing else, but values may hold any text) is written as one
    // string, header and body, which the stream encodes once into the system call's buffer, instead of a Buffer for
    // the body, one for the header and a third joining them. Only ASCII: the stream counts a string's unsent length
    // in characters, and the output limits (server/framing.ts) count bytes. A large body (an export page) is written
    // after its header rather than copied next to it: one copy less of a few MB (the cork still sends both at once).
    const frame =
      bytes > 64 * 1024
        ? null
        : bytes === json.length
          ? `Content-Length: ${bytes}\r\n\r\n${json}`
          : Buffer.concat([Buffer.from(`Content-Length: ${bytes}\r\n\r\n`, 'ascii'), Buffer.from(json, 'utf8')]);
    if (this.output.destroyed || this.output.writableEnded) throw new Error('connection closed');
    if (!this.corked) {
      this.corked = true;
      this.output.cork();
    }
    if ((msg as { id?: unknown }).id !== undefined) {
      if (this.flushAt !== 'tick') {
        this.cancelLater();
        waiting.delete(this);
        this.flushAt = 'tick';
        process.nextTick(this.flushNow);
      }
    } else if (this.flushAt === 'none') {
      this.flushAt = 'later';
      waiting.add(this);
      const delay = this.opts.notificationDelayMs ?? 0;
      if (delay > 0) this.laterTimer = setTimeout(this.flushNow, delay);
      else this.laterImmediate = setImmediate(this.flushNow);
    }
    const done = (err: Error | null | undefined) => {
      if (err) this.fireError(err, msg, ++this.errors);
    };
    if (frame !== null) this.output.write(frame, 'latin1', done);
    else {
      this.output.write(`Content-Length: ${bytes}\r\n\r\n`, 'ascii');
      this.output.write(Buffer.from(json, 'utf8'), done);
    }
  }

  private flush(): void {
    const reply = this.flushAt === 'tick';
    this.cancelLater();
    waiting.delete(this);
    this.flushAt = 'none';
    if (reply) for (const w of [...waiting]) w.flush(); // notifications written before this reply, on other connections
    if (!this.corked) return;
    this.corked = false;
    this.output.uncork();
  }

  private cancelLater(): void {
    if (this.laterTimer) clearTimeout(this.laterTimer);
    if (this.laterImmediate) clearImmediate(this.laterImmediate);
    this.laterTimer = null;
    this.laterImmediate = null;
  }

  /**
   * A reply whose result holds a long array (a one-reply `store/export`): serialized element by element in slices
   * of about 8 ms that yield to the event loop, so the daemon serves other connections meanwhile, then written as
   * one frame (frames never interleave).
   */
  private async writeSliced(msg: Message & { result: Record<string, unknown> }): Promise<void> {
    const { result, ...envelope } = msg;
    const head = JSON.stringify(envelope);
    const parts: Buffer[] = [Buffer.from(`${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"result":{`, 'utf8')];
    let until = performance.now() + SLICE_MS;
    let first = true;
    for (const [k, v] of Object.entries(result)) {
      if (v === undefined) continue;
      const key = `${first ? '' : ','}${JSON.stringify(k)}:`;
      first = false;
      if (!Array.isArray(v) || v.length < BIG_ARRAY) {
        parts.push(Buffer.from(key + JSON.stringify(v), 'utf8'));
        continue;
      }
      let text = key + '[';
      for (let i = 0; i < v.length; i++) {
        text += (i > 0 ? ',' : '') + (v[i] === undefined ? 'null' : JSON.stringify(v[i]));
        if ((i & 63) === 63 && performance.now() > until) {
          parts.push(Buffer.from(text, 'utf8'));
          text = '';
          await new Promise<void>((resolve) => setImmediate(resolve));
          until = performance.now() + SLICE_MS;
        }
      }
      parts.push(Buffer.from(text + ']', 'utf8'));
    }
    parts.push(Buffer.from('}}', 'utf8'));
    const length = parts.reduce((a, b) => a + b.byteLength, 0);
    if (this.output.destroyed || this.output.writableEnded) throw new Error('connection closed');
    this.output.cork();
    this.output.write(Buffer.from(`Content-Length: ${length}\r\n\r\n`, 'ascii'));
    for (let i = 0; i < parts.length; i++) {
      const last = i === parts.length - 1;
      this.output.write(parts[i], last ? (err) => err && this.fireError(err, msg, ++this.errors) : undefined);
    }
    this.output.uncork();
    this.flush(); // and any notification corked before it
  }

  end(): void {
    this.flush();
    this.output.end();
  }
}
