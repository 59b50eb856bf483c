/**
 * Static embedding models (the built-in model): a sentence is the weighted mean of its tokens'
 * vectors, L2-normalized. Plain arithmetic: no transformers.js, no onnxruntime, so a daemon on
 * the built-in model never loads a neural runtime (small RSS, fast start).
 *
 * Folder format `cairn-static-1` (made by scripts/models/distill_static.py):
 *   config.json   { "cairn": { "kind": "static", "format": "cairn-static-1", "id", "dimension", "vocabSize", "maxTokens", ... } }
 *   vocab.txt     one token per line (WordPiece tokens, `##` continuation pieces, whole words); line i is row i
 *   vectors.i8    vocabSize x dimension int8, row-major
 *   scales.f32    vocabSize float32 little-endian: row i's vector is scales[i] * vectors[i]
 *                 (the frequency weight is folded in; 0 for tokens that never count, e.g. [CLS])
 *
 * Tokenizer: BERT's uncased basic tokenizer (clean control characters, space out CJK characters,
 * lowercase, strip accents, split on whitespace and punctuation), then greedy longest-match-first
 * WordPiece over vocab.txt, so a whole word in the vocabulary is one token and any other word
 * falls back to the teacher's pieces. Unknown words ([UNK]) are left out; text with no known
 * token gives the zero vector (never NaN).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TokenSums } from './embed-kernels';
import { isBlank, prepareText } from './prepare';
import type { EmbeddingProvider } from './provider';
import type { EmbedderInfo } from './shared';

export const STATIC_FORMAT = 'cairn-static-1';

export interface StaticConfig {
  kind: 'static';
  format: string;
  id?: string;
  dimension: number;
  vocabSize: number;
  maxTokens?: number;
}

/** The `cairn` block of a folder's config.json when it is a static model of our format, else null. */
export function readStaticConfig(dir: string): StaticConfig | null {
  let cfg: unknown;
  try {
    cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  } catch {
    return null;
  }
  return staticConfigOf(cfg, dir);
}

/** The `cairn` block of a parsed config.json (of the folder `dir`) when it is a static model of our format, else null. */
export function staticConfigOf(cfg: unknown, dir: string): StaticConfig | null {
  const c = (cfg as { cairn?: Partial<StaticConfig> } | null)?.cairn;
  if (!c || c.kind !== 'static' || c.format !== STATIC_FORMAT) return null;
  if (!Number.isInteger(c.dimension) || c.dimension! <= 0 || !Number.isInteger(c.vocabSize) || c.vocabSize! <= 0) {
    throw new Error(`static model at ${dir}: config.json needs positive integer cairn.dimension and cairn.vocabSize`);
  }
  return c as StaticConfig;
}

const MAX_WORD_CHARS = 100;
const PRINTABLE_ASCII = /^[\x20-\x7e\t\n\r\v\f]*$/;
const ASCII_TOKEN = /[a-z0-9]+|[!-/:-@[-`{-~]/g;
/**
 * Words whose WordPiece ids are remembered (cleared when full). A cached word costs ~240 bytes of the embedding
 * worker's heap: 100k of them held ~23 MiB after a bulk import, mostly words seen once (keys' serial numbers). At
 * 20k, tokenizing the 300k corpus took the same time (7.0–7.2 s either way, runs alternating) with at most ~5 MiB.
 */
export const CACHE_WORDS = 20_000;

function isPunct(cp: number): boolean {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) return true;
  return /\p{P}/u.test(String.fromCodePoint(cp));
}
function isCjk(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b820 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

/** BERT basic tokenization (uncased): words and punctuation marks, lowercased, accents stripped. */
export function basicTokens(text: string): string[] {
  // Fast path for printable ASCII (most memories): no accents, no CJK, and punctuation is every
  // printable character that is not a letter, digit or space.
  if (PRINTABLE_ASCII.test(text)) return text.toLowerCase().match(ASCII_TOKEN) ?? [];
  // control characters out, every kind of whitespace to a space, CJK characters spaced out
  let s = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0 || cp === 0xfffd) continue;
    if (/\s/u.test(ch)) s += ' ';
    else if (/[\p{Cc}\p{Cf}]/u.test(ch)) continue;
    else if (isCjk(cp)) s += ` ${ch} `;
    else s += ch;
  }
  s = s
    .toLowerCase()
    .normalize('NFD')
    .replace(/\p{Mn}/gu, '');
  const out: string[] = [];
  for (const word of s.split(' ')) {
    if (!word) continue;
    let cur = '';
    for (const ch of word) {
      if (isPunct(ch.codePointAt(0)!)) {
        if (cur) out.push(cur);
        out.push(ch);
        cur = '';
      } else cur += ch;
    }
    if (cur) out.push(cur);
  }
  return out;
}

/** Rows of an N x D int8 file, read from disk a block (about one memory page) at a time on first use. */
class LazyRows {
  private readonly data: Int8Array;
  private readonly loaded: Uint8Array;
  private readonly rowsPerBlock: number;
  private fd: number | null;

  /** `data`: where the rows go (the token-sum kernel's memory, TokenSums.rows), else an array of its own. */
  constructor(
    private readonly file: string,
    private readonly n: number,
    private readonly d: number,
    data?: Int8Array,
  ) {
    this.data = data ?? new Int8Array(n * d);
    this.rowsPerBlock = Math.max(1, Math.floor(4096 / d));
    this.loaded = new Uint8Array(Math.ceil(n / this.rowsPerBlock));
    this.fd = fs.openSync(file, 'r');
  }

  /** The whole array, with row `id` (and its block) read in. */
  row(id: number): Int8Array {
    const b = Math.floor(id / this.rowsPerBlock);
    if (!this.loaded[b]) this.load(b);
    return this.data;
  }

  private load(b: number): void {
    if (this.fd === null) throw new Error(`static model ${this.file}: closed`);
    const first = b * this.rowsPerBlock;
    const bytes = (Math.min(this.n, first + this.rowsPerBlock) - first) * this.d;
    const off = first * this.d;
    let got = 0;
    while (got < bytes) {
      const r = fs.readSync(this.fd, this.data, off + got, bytes - got, off + got);
      if (r <= 0) throw new Error(`static model ${this.file}: the file shrank while in use`);
      got += r;
    }
    this.loaded[b] = 1;
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

export class StaticModel {
  private readonly wordCache = new Map<string, number[]>();

  private constructor(
    readonly dir: string,
    readonly config: StaticConfig,
    readonly vocab: Map<string, number>,
    private readonly vectors: LazyRows,
    private readonly scales: Float32Array,
    /** The rows' sums in the SIMD kernel (embed-kernels.ts; bit-identical to the loop in embed), when it runs. */
    private readonly sums: TokenSums | null = null,
  ) {}

  /** Closes the vector file. */
  close(): void {
    this.vectors.close();
  }

  /** `config`: the folder's config block when the caller has already read config.json. */
  static load(dir: string, known?: StaticConfig): StaticModel {
    const config = known ?? readStaticConfig(dir);
    if (!config) throw new Error(`${dir} is not a ${STATIC_FORMAT} static model (config.json cairn.format)`);
    const { dimension: D, vocabSize: N } = config;
    const tokens = fs.readFileSync(path.join(dir, 'vocab.txt'), 'utf8').split('\n');
    if (tokens[tokens.length - 1] === '') tokens.pop();
    if (tokens.length !== N) throw new Error(`static model at ${dir}: vocab.txt has ${tokens.length} tokens, config.json says ${N}`);
    const vocab = new Map<string, number>();
    tokens.forEach((t, i) => {
      if (!vocab.has(t)) vocab.set(t, i);
    });
    // vectors.i8 is read a block of rows at a time, when a token of the block is first used: the memory of
    // rows never used (most of a 59k vocabulary, for a store of one project) is never touched, so it stays out
    // of the resident set (a zero-filled array of this size is mapped lazily by the allocator).
    const vfile = path.join(dir, 'vectors.i8');
    const vsize = fs.statSync(vfile).size;
    if (vsize !== N * D) throw new Error(`static model at ${dir}: vectors.i8 has ${vsize} bytes, expected ${N} x ${D}`);
    const sbuf = fs.readFileSync(path.join(dir, 'scales.f32'));
    if (sbuf.length !== N * 4) throw new Error(`static model at ${dir}: scales.f32 has ${sbuf.length} bytes, expected ${N} x 4`);
    const scales = new Float32Array(N);
    for (let i = 0; i < N; i++) {
      const s = sbuf.readFloatLE(i * 4);
      scales[i] = Number.isFinite(s) ? s : 0;
    }
    const sums = TokenSums.create(N, D, Math.min(config.maxTokens ?? 512, 4096));
    const vectors = new LazyRows(vfile, N, D, sums?.rows);
    return new StaticModel(dir, config, vocab, vectors, scales, sums);
  }

  get dimension(): number {
    return this.config.dimension;
  }

  get maxTokens(): number {
    return this.config.maxTokens ?? 512;
  }

  /** WordPiece ids of one basic token (greedy longest match first); [] when it cannot be split. */
  private wordIds(word: string): number[] {
    const hit = this.wordCache.get(word);
    if (hit) return hit;
    const ids: number[] = [];
    const chars = Array.from(word);
    if (chars.length <= MAX_WORD_CHARS) {
      let start = 0;
      while (start < chars.length) {
        let end = chars.length;
        let id = -1;
        while (start < end) {
          const piece = (start > 0 ? '##' : '') + chars.slice(start, end).join('');
          const v = this.vocab.get(piece);
          if (v !== undefined) {
            id = v;
            break;
          }
          end--;
        }
        if (id < 0) {
          ids.length = 0; // like BERT: the whole word becomes [UNK]
          break;
        }
        ids.push(id);
        start = end;
      }
    }
    if (this.wordCache.size >= CACHE_WORDS) this.wordCache.clear();
    this.wordCache.set(word, ids);
    return ids;
  }

  /** Token ids of a text (no [CLS]/[SEP]; unknown words left out), at most maxTokens. */
  tokenize(text: string): number[] {
    const out: number[] = [];
    for (const w of basicTokens(prepareText(text, (x) => this.vocab.has(x)))) {
      for (const id of this.wordIds(w)) {
        out.push(id);
        if (out.length >= this.maxTokens) return out;
      }
    }
    return out;
  }

  /** Unit-length vector of a text, or all zeros when no token of it counts. `loop`: without the kernel (tests). */
  embed(text: string, loop = false): Float32Array {
    const D = this.config.dimension;
    if (isBlank(text)) return new Float32Array(D);
    let used = 0;
    let acc: Float32Array;
    const sums = loop ? null : this.sums;
    if (sums) {
      try {
        for (const id of this.tokenize(text)) {
          const s = this.scales[id];
          if (s === 0) continue;
          used++;
          this.vectors.row(id);
          sums.add(id, s);
        }
      } catch (e) {
        sums.take(); // nothing of this text is left queued for the next
        throw e;
      }
      acc = sums.take();
    } else {
      acc = new Float32Array(D);
      for (const id of this.tokenize(text)) {
        const s = this.scales[id];
        if (s === 0) continue;
        used++;
        const rows = this.vectors.row(id);
        const base = id * D;
        for (let j = 0; j < D; j++) acc[j] += s * rows[base + j];
      }
    }
    if (!used) return acc;
    let n = 0;
    for (let j = 0; j < D; j++) n += acc[j] * acc[j];
    n = Math.sqrt(n);
    if (!(n > 0) || !Number.isFinite(n)) return new Float32Array(D);
    for (let j = 0; j < D; j++) acc[j] /= n;
    return acc;
  }
}

/** Characters kept per text before tokenizing, per allowed token (bounds work on huge inputs). */
const CHARS_PER_TOKEN_CAP = 32;
const YIELD_EVERY = 128;

export class StaticProvider implements EmbeddingProvider {
  private constructor(
    readonly info: EmbeddingProvider['info'],
    private readonly model: StaticModel,
  ) {}

  static load(dir: string, id: string, builtin: boolean, config?: StaticConfig): StaticProvider {
    const t0 = Date.now();
    const model = StaticModel.load(dir, config);
    const info: Omit<EmbedderInfo, 'configuredModel' | 'fallbackReason'> = {
      model: id,
      dimension: model.dimension,
      builtin,
      pooling: 'weightedmean',
      poolingSource: 'static model (frequency-weighted token mean)',
      maxTokens: model.maxTokens,
      dtype: 'int8',
      loadMs: 0,
    };
    info.loadMs = Date.now() - t0;
    return new StaticProvider(info, model);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const maxChars = this.info.maxTokens * CHARS_PER_TOKEN_CAP;
    const out: Float32Array[] = new Array(texts.length);
    for (let i = 0; i < texts.length; i++) {
      // let the worker read its messages (a priority query, close) between chunks of a big batch
      if (i > 0 && i % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
      const t = texts[i];
      out[i] = this.model.embed(t.length > maxChars ? t.slice(0, maxChars) : t);
    }
    return out;
  }

  async dispose(): Promise<void> {
    this.model.close();
  }
}
