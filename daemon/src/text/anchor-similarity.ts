/**
 * How alike a window of a file is to an anchor's recorded lines (anchor-locate.ts), and when that is enough: the
 * similarity of text and line hashes, agreement of the context, the anchor's symbol and where it is defined. Pure.
 */
import { B64, NO_CONTEXT, type FileText } from './file-text';

/** Similarity at which changed lines still count as the anchored code when the context agrees above and below. */
export const SIMILAR_WITH_CONTEXT = 0.7;
/** Short code changed in place: found within this many lines of where it was. */
export const NEAR_LINES = 2;
/** ... when it agrees on one side only. */
export const SIMILAR_ONE_CONTEXT = 0.8;
/** ... with no agreeing context (the code moved and changed). */
export const SIMILAR_ALONE = 0.92;
/** Inside the anchor's own symbol (still defined in the file), a window this similar is the anchored code. */
export const SIMILAR_IN_SYMBOL = 0.5;

/**
 * Anchored code at least this long (whitespace removed) may be recognised by its content with the context on one side
 * or none; shorter code ("return total;") found elsewhere is too likely another copy, so it needs its neighbours.
 */
export const DISTINCTIVE_CHARS = 80;

// ---------------------------------------------------------------------------
// similarity
// ---------------------------------------------------------------------------
export function bigrams(s: string): Map<number, number> {
  const m = new Map<number, number>();
  for (let i = 0; i + 1 < s.length; i++) {
    const k = (s.charCodeAt(i) << 16) | s.charCodeAt(i + 1);
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return m;
}

/**
 * How well window text `b` covers the anchored text (its bigram multiset `a`): the F-score of the shared character
 * bigrams with recall weighted over precision (β = 2), so a window holding all the anchored code plus an inserted line
 * beats one holding only part of it.
 */
const seen = new Map<number, number>();
function cover(a: Map<number, number>, aLen: number, b: string): number {
  if (aLen < 2 || b.length < 2) return aLen === b.length && aLen > 0 ? 1 : 0;
  seen.clear();
  let common = 0;
  for (let i = 0; i + 1 < b.length; i++) {
    const k = (b.charCodeAt(i) << 16) | b.charCodeAt(i + 1);
    const used = seen.get(k) ?? 0;
    if (used < (a.get(k) ?? 0)) common++;
    seen.set(k, used + 1);
  }
  return fBeta(common / (b.length - 1), common / (aLen - 1));
}

function fBeta(precision: number, recall: number): number {
  return precision + recall === 0 ? 0 : (5 * precision * recall) / (4 * precision + recall);
}

export function decodeLines(lines: string): number[] {
  const out: number[] = [];
  for (let i = 0; i + 3 < lines.length; i += 4) {
    let h = 0;
    for (let k = 0; k < 4; k++) h = (h << 6) | Math.max(0, B64.indexOf(lines[i + k]));
    out.push(h);
  }
  return out;
}

/** What locate() keeps of one anchor while it scores windows. */
export interface Probe {
  n: number;
  hashes: number[] | null;
  excerptStripped: string;
  excerptBigrams: Map<number, number>;
  excerptLines: string[];
  complete: boolean;
  context: string;
  hash: string;
  /** How many lines longer or shorter than n a window may be. */
  delta: number;
  /** The recorded context lines' hashes (a window holding one is not the anchor, even where a copy of it is). */
  neighbours: number[];
}

const lineCounts = new Map<number, number>();
export function similarity(f: FileText, p: Probe, s: number, m: number): number {
  const win = f.window(s, m);
  const text = cover(p.excerptBigrams, p.excerptStripped.length, p.complete ? win : win.slice(0, p.excerptStripped.length));
  if (!p.hashes) return text;
  const counts = lineCounts;
  counts.clear();
  for (const h of p.hashes) counts.set(h, (counts.get(h) ?? 0) + 1);
  let common = 0;
  for (let i = s; i < s + m && i < f.lineCount; i++) {
    const c = counts.get(f.h[i]) ?? 0;
    if (c > 0) {
      common++;
      counts.set(f.h[i], c - 1);
    }
  }
  const both = (text + fBeta(common / m, common / p.hashes.length)) / 2;
  // A complete excerpt is all the anchored text: the line hashes may only help (a renamed one-liner shares no line).
  return p.complete ? Math.max(text, both) : both;
}

/**
 * On how many sides (0-2) the context agrees: a side agrees when one of its two recorded lines is one of the two
 * nearest non-trivial lines on that side of the window (a line inserted right above still leaves the side agreeing),
 * or when it had none (the file's start or end) and has none.
 */
export function contextAgreement(f: FileText, p: Probe, s: number, m: number): number {
  if (p.context.length !== 16) return 0;
  const here = f.context(s, m);
  let sides = 0;
  for (const off of [0, 8]) {
    const want = [p.context.slice(off, off + 4), p.context.slice(off + 4, off + 8)].filter((h) => h !== NO_CONTEXT);
    const got = [here.slice(off, off + 4), here.slice(off + 4, off + 8)];
    if (want.length === 0 ? got[0] === NO_CONTEXT : want.some((h) => got.includes(h))) sides++;
  }
  return sides;
}

/**
 * Whether changed lines are still the anchored code: with the neighbours agreeing on both sides, fairly similar; on
 * one side, more similar; with none, very similar, not short, and nothing else in the file looked like it when it was
 * anchored. Short code changed is recognised only where it was, and only if it was the one such code in the file.
 */
export function accepted(sim: number, sides: number, p: Probe, unique: boolean, near: boolean): boolean {
  const distinctive = p.excerptStripped.length >= DISTINCTIVE_CHARS;
  if (!distinctive && !(near && unique)) return false;
  return (unique && sim >= SIMILAR_ALONE) || (sides >= 1 && sim >= SIMILAR_ONE_CONTEXT) || (sides >= 2 && sim >= SIMILAR_WITH_CONTEXT);
}

/** A window holding one of the anchor's recorded neighbours is not the anchor (a deleted line's neighbour slid up). */
export function holdsNeighbour(f: FileText, p: Probe, s: number, m: number): boolean {
  for (const h of p.neighbours) for (let i = s; i < s + m; i++) if (f.h[i] === h) return true;
  return false;
}

/** A line that defines `name` (a function, class, method, variable... in the common languages), or null for a bad name. */
export function definitionPattern(name: string): RegExp | null {
  if (!/^[\w$]+$/.test(name)) return null;
  const esc = name.replace(/\$/g, '\\$');
  return new RegExp(
    `(?:\\b(?:function\\*?|def|class|interface|type|enum|struct|trait|impl|fn|func|const|let|var|val|module|namespace)\\s+${esc}\\b)` +
      `|(?:^\\s*(?:(?:export|public|private|protected|static|async|override|readonly|abstract|get|set)\\s+)*${esc}\\s*(?:<[^>]*>)?\\s*\\()`,
  );
}

/** The 0-based lines defining `symbol` (its last dotted segment). */
export function findDefinitions(f: FileText, symbol: string): number[] {
  const name = symbol.split('.').pop() ?? symbol;
  const def = definitionPattern(name);
  return def ? f.withToken(name).filter((i) => def.test(f.lines[i])) : [];
}

export function findDefinition(f: FileText, symbol: string): number {
  return findDefinitions(f, symbol)[0] ?? -1;
}

/** A line that opens some definition (a function, class, method...): where the enclosing symbol of lines below changes. */
const OPENS_DEFINITION =
  /^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\b|class\b|def\b|interface\b|fn\b|func\b|(?:(?:public|private|protected|static|get|set)\s+)+[\w$]+\s*\()/;

/** 1 when line s lies inside one of the symbol's definitions (no other definition opens between), else 0. */
export function insideSymbol(f: FileText, s: number, defs: number[]): number {
  let d = -1;
  for (const x of defs) if (x <= s && x > d) d = x;
  if (d < 0) return 0;
  for (let i = d + 1; i <= s; i++) if (OPENS_DEFINITION.test(f.lines[i])) return 0;
  return 1;
}
