/** Snippets: an excerpt of the value around the first match, matches wrapped in «…». */
import { queryTokens, splitIdentifier, STOPWORDS } from '../text/identifiers';

const WINDOW = 160;

export function snippet(value: string, query: string): string {
  const all = queryTokens(query).filter((t) => t.length > 1);
  const content = all.filter((t) => !STOPWORDS.has(t));
  const terms = content.length > 0 ? content : all;
  const flat = value.replace(/\s+/g, ' ').trim();
  if (terms.length === 0) return clip(flat, 0);
  const re = new RegExp(`[\\p{L}\\p{N}_$]+`, 'gu');
  const hits: [number, number][] = [];
  for (const m of flat.matchAll(re)) {
    const w = m[0].toLowerCase();
    const parts = [w, ...w.split(/[_$]+/), ...splitIdentifier(m[0])];
    if (parts.some((p) => terms.some((t) => p === t || (t.length >= 3 && p.startsWith(t))))) hits.push([m.index!, m.index! + m[0].length]);
  }
  if (hits.length === 0) return clip(flat, 0);
  const start = Math.max(0, hits[0][0] - 40);
  const end = Math.min(flat.length, start + WINDOW);
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
  return s.length - from > WINDOW ? s.slice(from, from + WINDOW) + '…' : s.slice(from);
}
