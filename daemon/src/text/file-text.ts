/**
 * A file prepared once for locating any number of anchors in it (anchor-locate.ts): its lines, a 24-bit hash of each
 * with whitespace removed, the content hash of a run of lines, a run's context, and the lines holding a word. Pure.
 */

export const NO_CONTEXT = '....';
export const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

// ---------------------------------------------------------------------------
// hashing
// ---------------------------------------------------------------------------
export function enc24(h: number): string {
  return B64[(h >>> 18) & 63] + B64[(h >>> 12) & 63] + B64[(h >>> 6) & 63] + B64[h & 63];
}

function hex8(h: number): string {
  return h.toString(16).padStart(8, '0');
}

const SEED2 = 0x9747b28c;

/** JavaScript's whitespace (what /\s/ matches), by character code. */
function isSpace(c: number): boolean {
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    (c > 127 &&
      (c === 0xa0 ||
        c === 0x1680 ||
        (c >= 0x2000 && c <= 0x200a) ||
        c === 0x2028 ||
        c === 0x2029 ||
        c === 0x202f ||
        c === 0x205f ||
        c === 0x3000 ||
        c === 0xfeff))
  );
}

export const strip = (line: string): string => line.replace(/\s+/g, '');
/** Lines too common to tell one place from another ("}", "end", blank): at most this many characters besides spaces. */
const TRIVIAL_CHARS = 3;

// ---------------------------------------------------------------------------
// a file, prepared once for any number of anchors
// ---------------------------------------------------------------------------
export class FileText {
  readonly lines: string[];
  /** 24-bit hash of each line, its whitespace removed. */
  readonly h: Int32Array;
  /** How many characters besides whitespace each line has. */
  private readonly len: Int32Array;
  private readonly strippedLines: (string | undefined)[];
  private byHash: Map<number, number[]> | null = null;
  private readonly byToken = new Map<string, { lines: number[]; complete: boolean }>();
  private readonly text: string;
  /** Offset of each line's first character in `text`. */
  private readonly starts: Int32Array;

  constructor(text: string) {
    this.text = text;
    this.lines = text.split('\n');
    if (this.lines.length > 1 && this.lines[this.lines.length - 1] === '') this.lines.pop();
    const n = this.lines.length;
    this.starts = new Int32Array(n);
    this.h = new Int32Array(n);
    this.len = new Int32Array(n);
    this.strippedLines = new Array<string | undefined>(n);
    for (let i = 0; i < n; i++) {
      const line = this.lines[i];
      if (i > 0) this.starts[i] = this.starts[i - 1] + this.lines[i - 1].length + 1;
      // FNV-1a over the characters that are not whitespace, without making the stripped string
      let h = 0x811c9dc5;
      let k = 0;
      for (let j = 0; j < line.length; j++) {
        const c = line.charCodeAt(j);
        if (isSpace(c)) continue;
        h = Math.imul(h ^ c, 0x01000193);
        k++;
      }
      this.h[i] = (h >>> 0) & 0xffffff;
      this.len[i] = k;
    }
  }

  /** Line i with its whitespace removed. */
  stripped(i: number): string {
    return (this.strippedLines[i] ??= strip(this.lines[i]));
  }

  /** Whether line i is too common to tell one place from another. */
  trivial(i: number): boolean {
    return this.len[i] <= TRIVIAL_CHARS;
  }

  /** The content hash of lines [s, s+m): 16 hex digits over their characters besides whitespace. */
  hashOf(s: number, m: number): string {
    let a = 0x811c9dc5;
    let b = SEED2;
    for (let i = s; i < s + m && i < this.lines.length; i++) {
      const line = this.lines[i];
      for (let j = 0; j < line.length; j++) {
        const c = line.charCodeAt(j);
        if (isSpace(c)) continue;
        a = Math.imul(a ^ c, 0x01000193);
        b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
      }
    }
    return hex8(a >>> 0) + hex8(b >>> 0);
  }

  get lineCount(): number {
    return this.lines.length;
  }

  /** 0-based positions of lines with this 24-bit hash. */
  at(h: number): number[] {
    if (!this.byHash) {
      const m = new Map<number, number[]>();
      for (let i = 0; i < this.h.length; i++) {
        const l = m.get(this.h[i]);
        if (l) l.push(i);
        else m.set(this.h[i], [i]);
      }
      this.byHash = m;
    }
    return this.byHash.get(h) ?? [];
  }

  /** 0-based positions of lines holding this word. */
  withToken(t: string): number[] {
    return this.linesWith(t, Infinity) ?? [];
  }

  /** 0-based positions of lines holding this word, or null when more than `max` lines do (a word too common to tell). */
  linesWith(t: string, max: number): number[] | null {
    const cached = this.byToken.get(t);
    if (cached && (cached.complete || cached.lines.length > max)) return cached.lines.length > max ? null : cached.lines;
    // One word at a time, by the native substring search over the whole text: far cheaper than indexing every word.
    const hit: number[] = [];
    let complete = true;
    for (let at = this.text.indexOf(t); at >= 0; at = this.text.indexOf(t, at + t.length)) {
      if (WORD_CHAR.test(this.text[at - 1] ?? '') || WORD_CHAR.test(this.text[at + t.length] ?? '')) continue;
      let lo = 0;
      let hi = this.starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (this.starts[mid] <= at) lo = mid;
        else hi = mid - 1;
      }
      if (hit[hit.length - 1] !== lo) hit.push(lo);
      if (hit.length > max) {
        complete = false;
        break;
      }
    }
    if (this.byToken.size > 4096) this.byToken.clear();
    this.byToken.set(t, { lines: hit, complete });
    return hit.length > max ? null : hit;
  }

  /** Stripped text of lines [s, s+m). */
  window(s: number, m: number): string {
    let out = '';
    for (let i = s; i < s + m && i < this.lines.length; i++) out += this.stripped(i);
    return out;
  }

  /** The context string of lines [s, s+m): hashes of the two nearest non-trivial lines above and below. */
  context(s: number, m: number): string {
    const above: string[] = [];
    for (let i = s - 1; i >= 0 && above.length < 2; i--) if (!this.trivial(i)) above.push(enc24(this.h[i]));
    const below: string[] = [];
    for (let i = s + m; i < this.lines.length && below.length < 2; i++) if (!this.trivial(i)) below.push(enc24(this.h[i]));
    while (above.length < 2) above.push(NO_CONTEXT);
    while (below.length < 2) below.push(NO_CONTEXT);
    return above.join('') + below.join('');
  }
}

const WORD_CHAR = /[\w$]/;
export function tokens(line: string): string[] {
  return line.match(/[A-Za-z_$][\w$]{2,}|\d{2,}/g) ?? [];
}
