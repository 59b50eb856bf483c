/**
 * Snippets: an excerpt of the value around the first match, matches wrapped in «…». The excerpt's cut sides fall
 * between words (marked …), unless a single word longer than the slack is in the way (a URL, a hash): then it is cut.
 */
import { queryTokens, splitIdentifier, STOPWORDS, WORD } from '../text/identifiers';

const WINDOW = 160;

/** The query's terms (the hits of one search ask with the same query one after the other: kept for the last query). */
let last: { query: string; terms: string[] } = { query: '', terms: [] };
function termsOf(query: string): string[] {
  if (last.query !== query) {
    const all = queryTokens(query).filter((t) => t.length > 1);
    const content = all.filter((t) => !STOPWORDS.has(t));
    last = { query, terms: content.length > 0 ? content : all };
  }
  return last.terms;
}

/** A lowercase word: its own only part (most words of prose), so no splitting is needed to match it. */
const LOWER = /^[a-z0-9]+$/;

export function snippet(value: string, query: string): string {
  const terms = termsOf(query);
  const flat = value.replace(/\s+/g, ' ').trim();
  if (terms.length === 0) return clip(flat, 0);
  const matches = (p: string) => {
    for (const t of terms) if (p === t || (t.length >= 3 && p.startsWith(t))) return true;
    return false;
  };
  const hits: [number, number][] = [];
  // The excerpt starts 40 characters before the first match and is WINDOW long: words past its end are not read.
  let start = 0;
  let end = flat.length;
  for (const m of flat.matchAll(WORD)) {
    if (m.index! >= end) break;
    const raw = m[0];
    const w = raw.toLowerCase();
    const hit = LOWER.test(raw) ? matches(w) : matches(w) || w.split(/[_$]+/).some(matches) || splitIdentifier(raw).some(matches);
    if (!hit) continue;
    if (hits.length === 0) {
      start = Math.max(0, m.index! - 40);
      end = Math.min(flat.length, start + WINDOW);
    }
    hits.push([m.index!, m.index! + raw.length]);
  }
  if (hits.length === 0) return clip(flat, 0);
  start = snapStart(flat, start, hits[0][0]);
  end = snapEnd(flat, end, hits[0][1]);
  let out = '';
  let at = start;
  for (const [s, e] of hits) {
    if (s < start || e > end) continue;
    out += flat.slice(at, s) + '«' + flat.slice(s, e) + '»';
    at = e;
  }
  out += flat.slice(at, end);
  return (start > 0 ? '…' : '') + out + (end < flat.length ? '…' : '');
}

function clip(s: string, from: number): string {
  return s.length - from > WINDOW ? s.slice(from, snapEnd(s, from + WINDOW, from + WINDOW - SLACK)) + '…' : s.slice(from);
}

/** How far (characters) a cut side may move to fall between words. */
const SLACK = 30;

/**
 * Where an excerpt starting at `start` (in a value whose whitespace is single spaces) should start so that it
 * does not begin mid-word: the next word's start, if there is one within SLACK and no later than `max`.
 */
export function snapStart(flat: string, start: number, max: number): number {
  if (start <= 0 || flat[start - 1] === ' ') return start;
  if (flat[start] === ' ') return Math.min(start + 1, max);
  const space = flat.indexOf(' ', start);
  return space >= 0 && space + 1 <= max && space + 1 - start <= SLACK ? space + 1 : start;
}

/**
 * Where an excerpt ending at `end` (exclusive) should end so that it does not end mid-word or on a space: after
 * the last whole word, if that is within SLACK and later than `min`.
 */
export function snapEnd(flat: string, end: number, min: number): number {
  if (end >= flat.length) return flat.length;
  if (flat[end] === ' ' || flat[end - 1] === ' ') return flat[end - 1] === ' ' && end - 1 > min ? end - 1 : end;
  const space = flat.lastIndexOf(' ', end - 1);
  return space > min && end - space <= SLACK ? space : end;
}
