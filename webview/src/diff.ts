/** Line diff (longest common subsequence) for comparing two versions of a memory. */
export interface DiffLine {
  op: 'same' | 'add' | 'del';
  text: string;
}

/** Lines of `a` and `b` as a diff from a to b. Quadratic; memory values are at most 64 KiB. */
export function lineDiff(a: string, b: string): DiffLine[] {
  const x = a.split('\n');
  const y = b.split('\n');
  const n = x.length,
    m = y.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out: DiffLine[] = [];
  let i = 0,
    j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) {
      out.push({ op: 'same', text: x[i] });
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push({ op: 'del', text: x[i++] });
    else out.push({ op: 'add', text: y[j++] });
  }
  while (i < n) out.push({ op: 'del', text: x[i++] });
  while (j < m) out.push({ op: 'add', text: y[j++] });
  return out;
}

/** Every field of two memory states as `name: value` lines, so a diff shows metadata changes too. */
export function describeState(m: Record<string, unknown> | null): string {
  if (!m) return '';
  const keys = [
    'value',
    'kind',
    'tags',
    'importance',
    'confidence',
    'status',
    'validFrom',
    'validTo',
    'expiresAt',
    'anchors',
    'properties',
    'supersededBy',
    'deletedAt',
  ];
  return keys.map((k) => `${k}: ${typeof m[k] === 'string' ? m[k] : JSON.stringify(m[k] ?? null)}`).join('\n');
}
