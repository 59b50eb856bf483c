/**
 * A small line diff (longest common subsequence) for the history document. Memory values are at most
 * 64 KiB, so the quadratic table stays small; past `maxCells` the diff degrades to remove-all/add-all.
 * Plain TypeScript, no vscode import: unit-tested directly.
 */
export function lineDiff(before: string, after: string, maxCells = 4_000_000): string[] {
  const a = before.split('\n');
  const b = after.split('\n');
  if (before === after) return a.map((l) => `  ${l}`);
  if (a.length * b.length > maxCells) return [...a.map((l) => `- ${l}`), ...b.map((l) => `+ ${l}`)];
  const n = a.length;
  const m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push(`  ${a[i]}`);
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(`- ${a[i++]}`);
    else out.push(`+ ${b[j++]}`);
  }
  while (i < n) out.push(`- ${a[i++]}`);
  while (j < m) out.push(`+ ${b[j++]}`);
  return out;
}

/** Field-level changes between two memory states, as `field: old → new` lines (value excluded). */
export function fieldChanges(before: Record<string, unknown> | null, after: Record<string, unknown> | null, fields: string[]): string[] {
  if (!before || !after) return [];
  const out: string[] = [];
  for (const f of fields) {
    const x = JSON.stringify(before[f] ?? null);
    const y = JSON.stringify(after[f] ?? null);
    if (x !== y) out.push(`${f}: ${x} → ${y}`);
  }
  return out;
}
