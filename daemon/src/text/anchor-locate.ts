/**
 * Anchors that follow the code: what an anchor records about the lines it points at (a fingerprint), and how those
 * lines are found again in a changed file. Pure (no I/O, no node modules), so the daemon and the extension share it.
 *
 * A fingerprint holds a hash of the anchored lines (whitespace removed, so re-indenting or re-wrapping keeps it), a
 * short excerpt (the lines trimmed), a 24-bit hash per line (up to MAX_LINE_HASHES lines) and the hashes of the two
 * nearest non-trivial lines above and below (the context). `locate()` then decides, in order:
 * 1. exact: the same lines at the same place, or elsewhere (`moved`); several copies: the one whose context agrees,
 *    then the nearest;
 * 2. similar: the best window near where its lines, words or context point, scored by character-bigram similarity of
 *    the text and overlap of the line hashes; accepted only with enough similarity *and* agreeing context, or a very
 *    high similarity alone — a look-alike elsewhere in the file is not the anchored code;
 * 3. symbol: the anchor's symbol still defined in the file, and a window inside it still somewhat similar;
 * 4. otherwise stale. Nothing is ever guessed: an anchor either points at lines that match or is stale.
 */

import {
  accepted,
  bigrams,
  contextAgreement,
  decodeLines,
  definitionPattern,
  findDefinition,
  findDefinitions,
  holdsNeighbour,
  insideSymbol,
  similarity,
  DISTINCTIVE_CHARS,
  NEAR_LINES,
  SIMILAR_ALONE,
  SIMILAR_IN_SYMBOL,
  SIMILAR_WITH_CONTEXT,
  type Probe,
} from './anchor-similarity';
import { enc24, FileText, NO_CONTEXT, strip, tokens } from './file-text';

export {
  DISTINCTIVE_CHARS,
  NEAR_LINES,
  SIMILAR_ALONE,
  SIMILAR_IN_SYMBOL,
  SIMILAR_ONE_CONTEXT,
  SIMILAR_WITH_CONTEXT,
} from './anchor-similarity';
export { FileText, findDefinition, findDefinitions };

export const EXCERPT_CHARS = 240;
export const MAX_LINE_HASHES = 200;

export interface Fingerprint {
  /** 16 hex digits over the anchored lines with all whitespace removed. */
  hash: string;
  /** The anchored lines, trimmed, at most EXCERPT_CHARS characters (a cut one ends in '…'). */
  excerpt: string;
  /** 4 characters (24 bits) per anchored line, for anchors of at most MAX_LINE_HASHES lines. */
  lines?: string;
  /** The two nearest non-trivial lines above (nearest first) and below, 4 characters each ('....' for none). */
  context: string;
  /** Set when these lines appeared once in the file: found once elsewhere later, they moved there. */
  unique?: true;
}

/** What locate() reads of an anchor (protocol Anchor fields). */
export interface AnchorFacts {
  startLine?: number;
  endLine?: number;
  symbol?: string;
  hash?: string;
  excerpt?: string;
  lines?: string;
  context?: string;
  unique?: boolean;
}

export type Located =
  | { status: 'exact' | 'moved'; startLine: number; endLine: number }
  | { status: 'similar' | 'symbol'; startLine: number; endLine: number; similarity: number }
  | { status: 'stale'; reason: string; similarity: number }
  /** The anchor has no line range (a symbol or whole-file anchor) and its symbol, if any, is still in the file. */
  | { status: 'present' }
  /** No fingerprint to judge by (an anchor written before fingerprints, or by a client that gave none). */
  | { status: 'unknown' };

// ---------------------------------------------------------------------------
// fingerprint
// ---------------------------------------------------------------------------
/** The fingerprint of 1-based lines startLine..endLine, or null when they are not all in the file. */
export function fingerprint(file: FileText | string, startLine: number, endLine: number = startLine): Fingerprint | null {
  const f = typeof file === 'string' ? new FileText(file) : file;
  if (startLine < 1 || endLine < startLine || endLine > f.lineCount) return null;
  const s = startLine - 1;
  const n = endLine - startLine + 1;
  let excerpt = f.lines
    .slice(s, s + Math.min(n, EXCERPT_CHARS))
    .map((l) => l.trim())
    .join('\n');
  if (excerpt.length > EXCERPT_CHARS) excerpt = excerpt.slice(0, EXCERPT_CHARS - 1) + '…';
  let lines: string | undefined;
  if (n <= MAX_LINE_HASHES) {
    lines = '';
    for (let i = s; i < s + n; i++) lines += enc24(f.h[i]);
  }
  const hash = f.hashOf(s, n);
  const context = f.context(s, n);
  const probe = probeOf({ startLine, endLine, hash, excerpt, lines, context })!;
  // Unique: no other copy, and no other window as similar as SIMILAR_ALONE (an anchor that had look-alikes is found
  // again only with its neighbours' help).
  const unique =
    exactAt(f, hash, probe.hashes, n).length === 1 &&
    !scoreWindows(f, probe, s, (ws, wm) => ws < s + n && ws + wm > s).some((c) => c.sim >= SIMILAR_ALONE);
  return { hash, excerpt, ...(lines !== undefined ? { lines } : {}), context, ...(unique ? { unique: true as const } : {}) };
}

/** 0-based starts of the runs of n lines with this content hash (line hashes, when known, narrow the search first). */
function exactAt(f: FileText, hash: string, hashes: number[] | null, n: number): number[] {
  const starts = hashes ? f.at(hashes[0]) : Array.from({ length: Math.max(0, f.lineCount - n + 1) }, (_, i) => i);
  const out: number[] = [];
  for (const s of starts) {
    if (s + n > f.lineCount) continue;
    if (hashes) {
      let ok = true;
      for (let k = 1; k < n && ok; k++) ok = f.h[s + k] === hashes[k];
      if (!ok) continue;
    }
    if (f.hashOf(s, n) === hash) out.push(s);
  }
  return out;
}

// ---------------------------------------------------------------------------
// locate
// ---------------------------------------------------------------------------
export function locate(anchor: AnchorFacts, file: FileText | string): Located {
  const f = typeof file === 'string' ? new FileText(file) : file;
  if (anchor.startLine === undefined) {
    if (anchor.symbol === undefined) return { status: 'present' };
    const name = anchor.symbol.split('.').pop() ?? anchor.symbol;
    return findDefinition(f, anchor.symbol) >= 0 || f.withToken(name).length > 0
      ? { status: 'present' }
      : { status: 'stale', reason: `the symbol ${anchor.symbol} is no longer in the file`, similarity: 0 };
  }
  const p = probeOf(anchor);
  if (!p) return { status: 'unknown' };
  const { n } = p;
  const s0 = anchor.startLine - 1;
  const unique = anchor.unique === true;

  // 1. exact: the same lines (compared by line hashes, confirmed by the content hash). Short common code ("return
  // total;") counts where it was with a neighbour agreeing, elsewhere with both agreeing, or when it was the one copy in
  // the file and is the one copy again; longer code also when it is the one copy now: else it may be another copy.
  const exact = exactAt(f, p.hash, p.hashes, n);
  const distinctive = p.excerptStripped.length >= DISTINCTIVE_CHARS;
  let defsFound: number[] | null = null;
  const defs = (): number[] => (defsFound ??= anchor.symbol ? findDefinitions(f, anchor.symbol) : []);
  const exactOk = exact
    .map((s) => ({ s, m: n, sim: 1, ctx: contextAgreement(f, p, s, n), own: 0 }))
    .filter((c) => c.ctx >= (c.s === s0 ? 1 : 2) || (exact.length === 1 && (unique || distinctive)));
  if (exactOk.length > 0) {
    if (exactOk.length > 1 && defs().length) for (const c of exactOk) c.own = insideSymbol(f, c.s, defs());
    const best = pick(exactOk, s0, n);
    return { status: best.s === s0 ? 'exact' : 'moved', startLine: best.s + 1, endLine: best.s + n };
  }

  // 2. similar: score windows where the anchor's lines, words and context point
  const scored = scoreWindows(f, p, s0);
  // "Where it was": within NEAR_LINES of its recorded start, or right below (above) its nearest neighbour above (below)
  // when that line is the only one of its kind in the file (lines inserted or removed above moved it).
  const [aboveAt, belowAt] = [0, 8].map((k) => {
    const c = p.context.slice(k, k + 4);
    if (c.length < 4 || c === NO_CONTEXT) return -2;
    const at = f.at(decodeLines(c)[0]);
    return at.length === 1 ? at[0] : -2;
  });
  const near = (c: Scored) => Math.abs(c.s - s0) <= NEAR_LINES || c.s === aboveAt + 1 || c.s + c.m === belowAt;
  const ok = scored.filter((c) => accepted(c.sim, c.ctx, p, unique, near(c)));
  let best = 0;
  for (const c of scored) best = Math.max(best, c.sim);
  if (ok.length > 0) {
    if (defs().length) for (const c of ok) c.own = insideSymbol(f, c.s, defs());
    const b = grow(f, p, pick(ok, s0, n));
    const same = f.hashOf(b.s, b.m) === p.hash;
    if (same) return { status: b.s === s0 ? 'exact' : 'moved', startLine: b.s + 1, endLine: b.s + b.m };
    return { status: 'similar', startLine: b.s + 1, endLine: b.s + b.m, similarity: round(b.sim) };
  }

  // 3. symbol: an anchor on a whole definition whose name is still defined here, changed but still like itself
  if (anchor.symbol && defs().length > 0) {
    const d = defs()[0];
    const name = anchor.symbol.split('.').pop() ?? anchor.symbol;
    if (definitionPattern(name)?.test(p.excerptLines[0] ?? '')) {
      let b: { s: number; m: number; sim: number } | null = null;
      for (let m = Math.max(1, n - p.delta); m <= n + p.delta && d + m <= f.lineCount; m++) {
        const sim = similarity(f, p, d, m);
        if (!b || sim > b.sim + 1e-9) b = { s: d, m, sim };
      }
      if (b && b.sim >= SIMILAR_IN_SYMBOL) return { status: 'symbol', startLine: b.s + 1, endLine: b.s + b.m, similarity: round(b.sim) };
      if (b) best = Math.max(best, b.sim);
    }
  }
  return {
    status: 'stale',
    reason:
      best > 0
        ? `the anchored lines are no longer in the file (the closest lines are ${Math.round(best * 100)}% similar)`
        : 'the anchored lines are no longer in the file',
    similarity: round(best),
  };
}

function probeOf(anchor: AnchorFacts): Probe | null {
  if (anchor.startLine === undefined || !anchor.hash || anchor.excerpt === undefined) return null;
  const hashes = anchor.lines ? decodeLines(anchor.lines) : null;
  const n = hashes ? hashes.length : (anchor.endLine ?? anchor.startLine) - anchor.startLine + 1;
  const complete = !anchor.excerpt.endsWith('…');
  const text = complete ? anchor.excerpt : anchor.excerpt.slice(0, -1);
  const excerptStripped = strip(text);
  return {
    n,
    hashes,
    excerptStripped,
    excerptBigrams: bigrams(excerptStripped),
    excerptLines: text.split('\n'),
    complete,
    context: anchor.context ?? '',
    hash: anchor.hash,
    delta: Math.min(10, Math.max(2, Math.round(n * 0.3))),
    neighbours:
      anchor.context && anchor.context.length === 16
        ? [0, 4, 8, 12]
            .map((k) => anchor.context!.slice(k, k + 4))
            .filter((c) => c !== NO_CONTEXT)
            .map((c) => decodeLines(c)[0])
        : [],
  };
}

interface Scored {
  s: number;
  m: number;
  sim: number;
  ctx: number;
  own: number;
}

/**
 * Windows worth scoring, scored: starts that the anchor's line hashes, rarer words and context lines point at (each
 * votes for where the anchor would start); the 12 with most votes are scored at the anchor's length, and the 4 most
 * similar, with a line either side, at every length n ± delta. Windows
 * holding one of the anchor's recorded neighbours, or below SIMILAR_WITH_CONTEXT, are left out.
 */
function scoreWindows(f: FileText, p: Probe, s0: number, skip?: (s: number, m: number) => boolean): Scored[] {
  const { n } = p;
  const votes = new Map<number, number>();
  const vote = (s: number, w: number) => {
    if (s >= 0 && s < f.lineCount) votes.set(s, (votes.get(s) ?? 0) + w);
  };
  vote(s0, 0.5);
  if (p.hashes)
    p.hashes.forEach((h, i) => {
      const at = f.at(h);
      if (at.length <= 20) for (const j of at) vote(j - i, 1 / at.length);
    });
  p.excerptLines.forEach((line, i) => {
    for (const t of new Set(tokens(line))) {
      const at = f.linesWith(t, 20);
      if (at && at.length > 0) for (const j of at) vote(j - i, 0.5 / at.length);
    }
  });
  if (p.context.length === 16) {
    const above = p.context.slice(0, 4);
    const below = p.context.slice(8, 12);
    if (above !== NO_CONTEXT) {
      const at = f.at(decodeLines(above)[0]);
      if (at.length <= 20) for (const j of at) vote(j + 1, 1 / at.length);
    }
    if (below !== NO_CONTEXT) {
      const at = f.at(decodeLines(below)[0]);
      if (at.length <= 20) for (const j of at) vote(j - n, 1 / at.length);
    }
  }
  const top = [...votes.entries()]
    .sort((a, b) => b[1] - a[1] || Math.abs(a[0] - s0) - Math.abs(b[0] - s0))
    .slice(0, 12)
    .map(([s]) => s);
  // A first pass at the anchor's own length picks the starts worth every length (and a line either side).
  const rough = top
    .filter((s) => s + Math.min(n, f.lineCount - s) <= f.lineCount)
    .map((s) => ({ s, sim: similarity(f, p, s, Math.min(n, f.lineCount - s)) }))
    .sort((a, b) => b.sim - a.sim)
    .slice(0, 4);
  const scored: Scored[] = [];
  const tried = new Set<number>();
  for (const { s: base } of rough) {
    for (const s of [base - 1, base, base + 1]) {
      if (s < 0 || s >= f.lineCount || tried.has(s)) continue;
      tried.add(s);
      for (let m = Math.max(1, n - p.delta); m <= n + p.delta && s + m <= f.lineCount; m++) {
        if (skip?.(s, m) || holdsNeighbour(f, p, s, m)) continue;
        const sim = similarity(f, p, s, m);
        if (sim >= SIMILAR_WITH_CONTEXT) scored.push({ s, m, sim, ctx: contextAgreement(f, p, s, m), own: 0 });
      }
    }
  }
  return scored;
}

/**
 * A similar window stretched over anchored lines just beyond its ends (a line inserted inside the anchor pushed them
 * out, and a short line adds too little text to win on similarity alone), at most to the longest length allowed.
 */
function grow(f: FileText, p: Probe, c: Scored): Scored {
  if (!p.hashes) return c;
  const left = new Map<number, number>();
  for (const h of p.hashes) left.set(h, (left.get(h) ?? 0) + 1);
  for (let i = c.s; i < c.s + c.m; i++) if ((left.get(f.h[i]) ?? 0) > 0) left.set(f.h[i], left.get(f.h[i])! - 1);
  let { s, m } = c;
  const room = () => p.n + p.delta - m;
  for (let k = 1; k <= 2 && room() > 0 && s + m - 1 + k < f.lineCount; k++) {
    const h = f.h[s + m - 1 + k];
    if ((left.get(h) ?? 0) > 0 && !p.neighbours.includes(h)) {
      left.set(h, left.get(h)! - 1);
      m += k;
      k = 0;
    }
  }
  for (let k = 1; k <= 2 && room() > 0 && s - k >= 0; k++) {
    const h = f.h[s - k];
    if ((left.get(h) ?? 0) > 0 && !p.neighbours.includes(h)) {
      left.set(h, left.get(h)! - 1);
      s -= k;
      m += k;
      k = 0;
    }
  }
  return m === c.m ? c : { ...c, s, m };
}

/**
 * The best candidate: most similar, then inside the anchor's symbol, then most context agreeing, then the original
 * length, then the nearest to where the anchor was.
 */
function pick<T extends Scored>(cands: T[], s0: number, n: number): T {
  return cands.reduce((a, b) => {
    if (Math.abs(a.sim - b.sim) > 0.005) return a.sim > b.sim ? a : b;
    if (a.own !== b.own) return a.own > b.own ? a : b;
    if (a.ctx !== b.ctx) return a.ctx > b.ctx ? a : b;
    if (Math.abs(a.m - n) !== Math.abs(b.m - n)) return Math.abs(a.m - n) < Math.abs(b.m - n) ? a : b;
    return Math.abs(a.s - s0) <= Math.abs(b.s - s0) ? a : b;
  });
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/**
 * Whether the anchor's recorded lines still hold its code (the hover's check): 'exact' when its content hash matches
 * there, 'similar' when it passes locate()'s similarity rule at exactly that place, else 'mismatch'. Anchors with no
 * fingerprint or no line range are 'unknown'.
 */
export function checkAt(anchor: AnchorFacts, file: FileText | string): 'exact' | 'similar' | 'mismatch' | 'unknown' {
  const p = probeOf(anchor);
  if (!p || anchor.startLine === undefined) return 'unknown';
  const f = typeof file === 'string' ? new FileText(file) : file;
  const s = anchor.startLine - 1;
  const m = (anchor.endLine ?? anchor.startLine) - anchor.startLine + 1;
  if (s + m > f.lineCount) return 'mismatch';
  if (f.hashOf(s, m) === anchor.hash) return 'exact';
  if (holdsNeighbour(f, p, s, m)) return 'mismatch';
  return accepted(similarity(f, p, s, m), contextAgreement(f, p, s, m), p, anchor.unique === true, true) ? 'similar' : 'mismatch';
}
