/** "Did you mean …?": the nearest of some names to a mistyped one (commands, namespaces). */

/** Optimal string alignment distance (Levenshtein plus swapping two neighbours: `serach` is one step from `search`). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * The candidate nearest to `word`, or undefined when none is near enough to be a plausible typo: at most a third of
 * the word's length in edits (at least 1, at most 3); a candidate that starts with the word (`rebuild` →
 * `rebuild-index`) also counts. Ties go to the earlier candidate.
 */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  const limit = Math.min(3, Math.max(1, Math.floor(w.length / 3)));
  let best: { name: string; d: number } | undefined;
  for (const c of candidates) {
    if (c === word) continue;
    const d = c.toLowerCase().startsWith(w) && w.length >= 3 ? 0.5 : editDistance(w, c.toLowerCase());
    if (d <= limit && (!best || d < best.d)) best = { name: c, d };
  }
  return best?.name;
}

/**
 * The first `--option` in argv (before a `--` terminator) that is not one of `known`, with the nearest known one.
 * The word after an option that takes a value (`valued`) is that value, never an option.
 */
export function unknownOption(
  argv: readonly string[],
  known: readonly string[],
  valued: (name: string) => boolean = () => false,
): { option: string; near?: string } | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') return undefined;
    if (!a.startsWith('--') || a.length < 3) continue;
    const [name, inline] = [a.slice(2).split('=')[0], a.includes('=')];
    if (!known.includes(name)) {
      const near = nearest(name, known);
      return { option: `--${name}`, ...(near ? { near: `--${near}` } : {}) };
    }
    if (!inline && valued(name)) i++;
  }
  return undefined;
}
