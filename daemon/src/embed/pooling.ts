/**
 * Pooling token vectors into one vector per text, driven by the model's own configuration
 * (sentence-transformers `modules.json` and `1_Pooling/config.json`), and L2 normalization
 * with a guard for zero and non-finite vectors. Pure functions, no transformers.js.
 */

export type PoolingMode = 'cls' | 'mean' | 'max' | 'mean_sqrt_len' | 'weightedmean' | 'lasttoken';
export const POOLING_MODES: readonly PoolingMode[] = ['cls', 'mean', 'max', 'mean_sqrt_len', 'weightedmean', 'lasttoken'];

/** Resolved pooling: one or more modes (several are concatenated, as sentence-transformers does). */
export interface PoolingSpec {
  modes: PoolingMode[];
  /** Where it came from, e.g. `Xenova/all-MiniLM-L6-v2/1_Pooling/config.json`, `option`, `default`. */
  source: string;
}

/** sentence-transformers Pooling config keys, in the order its outputs are concatenated. */
const ST_KEYS: Array<[string, PoolingMode]> = [
  ['pooling_mode_cls_token', 'cls'],
  ['pooling_mode_mean_tokens', 'mean'],
  ['pooling_mode_max_tokens', 'max'],
  ['pooling_mode_mean_sqrt_len_tokens', 'mean_sqrt_len'],
  ['pooling_mode_weightedmean_tokens', 'weightedmean'],
  ['pooling_mode_lasttoken', 'lasttoken'],
];

/**
 * Reads a sentence-transformers Pooling config (`1_Pooling/config.json`). Accepts the boolean
 * `pooling_mode_*` keys and the string form `{"pooling_mode": "cls"}`. Null when it names no mode.
 */
export function parsePoolingConfig(json: unknown): PoolingMode[] | null {
  if (!json || typeof json !== 'object') return null;
  const cfg = json as Record<string, unknown>;
  if (typeof cfg.pooling_mode === 'string') {
    const m = cfg.pooling_mode
      .toLowerCase()
      .replace(/_token(s)?$/, '')
      .replace(/^mean_tokens$/, 'mean');
    const alias: Record<string, PoolingMode> = {
      cls: 'cls',
      mean: 'mean',
      max: 'max',
      mean_sqrt_len: 'mean_sqrt_len',
      weightedmean: 'weightedmean',
      lasttoken: 'lasttoken',
      last: 'lasttoken',
    };
    return alias[m] ? [alias[m]] : null;
  }
  const modes = ST_KEYS.filter(([k]) => cfg[k] === true).map(([, m]) => m);
  return modes.length ? modes : null;
}

/** From `modules.json`: the folder of the Pooling module (e.g. `1_Pooling`) and whether a Normalize module follows. */
export function parseModulesJson(json: unknown): { poolingPath: string | null; normalize: boolean } | null {
  if (!Array.isArray(json)) return null;
  let poolingPath: string | null = null;
  let normalize = false;
  for (const m of json) {
    const type = typeof m?.type === 'string' ? m.type : '';
    if (/\.Pooling$/.test(type) && typeof m.path === 'string') poolingPath = m.path;
    if (/\.Normalize$/.test(type)) normalize = true;
  }
  return { poolingPath, normalize };
}

export function poolingName(spec: PoolingSpec): string {
  return spec.modes.join('+');
}

/**
 * Pools a [batch, seq, hidden] float tensor into `batch` vectors of `hidden * modes.length`
 * values. `mask` is the attention mask ([batch, seq], 1 = real token). Padding is on the right
 * (transformers.js tokenizers pad right by default); `lasttoken` uses the last unmasked token.
 * A row with no unmasked token pools to zeros.
 */
export function pool(
  data: Float32Array,
  dims: readonly number[],
  mask: ArrayLike<number | bigint>,
  modes: readonly PoolingMode[],
): Float32Array[] {
  const [B, S, H] = dims;
  if (dims.length !== 3 || data.length !== B * S * H)
    throw new Error(`pool: expected [batch, seq, hidden] data, got dims ${JSON.stringify(dims)}`);
  if (mask.length !== B * S) throw new Error(`pool: attention mask has ${mask.length} entries, expected ${B * S}`);
  const m = new Uint8Array(B * S);
  for (let i = 0; i < m.length; i++) m[i] = Number(mask[i]) !== 0 ? 1 : 0;
  const out: Float32Array[] = [];
  for (let b = 0; b < B; b++) {
    const v = new Float32Array(H * modes.length);
    let count = 0;
    let last = -1;
    for (let s = 0; s < S; s++)
      if (m[b * S + s]) {
        count++;
        last = s;
      }
    if (count > 0) for (let k = 0; k < modes.length; k++) poolOne(data, m, b, S, H, modes[k], count, last, v, k * H);
    out.push(v);
  }
  return out;
}

function poolOne(
  data: Float32Array,
  m: Uint8Array,
  b: number,
  S: number,
  H: number,
  mode: PoolingMode,
  count: number,
  last: number,
  v: Float32Array,
  o: number,
): void {
  const base = b * S * H;
  switch (mode) {
    case 'cls':
    case 'lasttoken': {
      const r = base + (mode === 'cls' ? 0 : last) * H;
      for (let h = 0; h < H; h++) v[o + h] = data[r + h];
      return;
    }
    case 'max': {
      for (let h = 0; h < H; h++) v[o + h] = -Infinity;
      for (let s = 0; s < S; s++) {
        if (!m[b * S + s]) continue;
        const r = base + s * H;
        for (let h = 0; h < H; h++) if (data[r + h] > v[o + h]) v[o + h] = data[r + h];
      }
      return;
    }
    case 'mean':
    case 'mean_sqrt_len':
    case 'weightedmean': {
      let wsum = 0;
      for (let s = 0; s < S; s++) {
        if (!m[b * S + s]) continue;
        const w = mode === 'weightedmean' ? s + 1 : 1;
        wsum += w;
        const r = base + s * H;
        for (let h = 0; h < H; h++) v[o + h] += w * data[r + h];
      }
      const div = mode === 'mean_sqrt_len' ? Math.sqrt(count) : wsum;
      for (let h = 0; h < H; h++) v[o + h] /= div;
      return;
    }
  }
}

/**
 * L2-normalizes in place and returns the vector. A vector whose norm is zero, tiny, or not
 * finite (NaN/Infinity anywhere) becomes all zeros: the documented "nothing to embed" value,
 * never NaN.
 */
export function normalizeInPlace(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm < 1e-12) {
    v.fill(0);
    return v;
  }
  for (let i = 0; i < v.length; i++) v[i] /= norm;
  return v;
}

/** True for the all-zeros vector that stands for "nothing to embed". */
export function isZeroVector(v: ArrayLike<number>): boolean {
  for (let i = 0; i < v.length; i++) if (v[i] !== 0) return false;
  return true;
}
