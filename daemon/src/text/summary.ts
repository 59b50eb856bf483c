/**
 * Extractive summaries for long values, computed once at write time: the
 * highest-scoring sentences (by frequency of their content words) kept in their
 * original order, up to a character budget.
 */
import { STOPWORDS } from './identifiers';

export const SUMMARY_MAX_CHARS = 320;

export function extractiveSummary(text: string, maxChars = SUMMARY_MAX_CHARS): string | null {
  const sentences = text
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+(?=[A-Z0-9"'`([])|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (sentences.length === 0) return null;
  const freq = new Map<string, number>();
  const wordsOf = (s: string) => (s.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []).filter((w) => !STOPWORDS.has(w) && w.length > 1);
  // Each sentence's words once (they were split twice: half of a batch's summary time).
  const words = sentences.map(wordsOf);
  for (const ws of words) for (const w of ws) freq.set(w, (freq.get(w) ?? 0) + 1);
  const scored = sentences.map((s, i) => {
    const ws = words[i];
    const score = ws.reduce((a, w) => a + (freq.get(w) ?? 0), 0) / Math.sqrt(ws.length + 1) + (i === 0 ? 1.5 : 0);
    return { s, i, score };
  });
  const chosen: typeof scored = [];
  let used = 0;
  for (const c of [...scored].sort((a, b) => b.score - a.score || a.i - b.i)) {
    const len = Math.min(c.s.length, maxChars);
    if (used + len > maxChars && chosen.length > 0) continue;
    chosen.push(c);
    used += len + 1;
    if (used >= maxChars) break;
  }
  const out = chosen
    .sort((a, b) => a.i - b.i)
    .map((c) => c.s)
    .join(' ');
  return out.length > maxChars ? out.slice(0, maxChars - 1).trimEnd() + '…' : out;
}
