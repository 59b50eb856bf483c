/**
 * Could a duplicate check read a part of its namespace instead of all of it (issue 27: the 1M import)? Today a check
 * in a large namespace takes the Hamming distance of every memory of the namespace to pick its 128 candidates, and
 * that pass is most of the embedding worker's time at 1M. This measures, offline on a store's stored int8 vectors of
 * one namespace, an inverted-file partition of it: the namespace's vectors are clustered (spherical k-means on
 * vectors less the signature centre, trained on a sample), each memory belongs to its nearest cluster, and a check
 * reads only the memories of the `P` clusters nearest to it, then picks its 128 Hamming candidates among those and
 * scores them exactly, as today's check does among all of them. Reported per (K clusters, P probed): the share of
 * the namespace read, the share of the exact top 5 (at ≥ the threshold) found, and how often the whole exact answer
 * is found, next to today's whole pass.
 *
 * Memories used as checks are left out of the base; `--part K` takes the checks from rowid modulo 23 = K and the
 * k-means sample from the other rows, so two values of K give disjoint checks (one to look at, one to confirm).
 *
 *   node --import tsx bench/dup-partitions.ts --db path/to/cairn.db [--ns project.atlas] [--part 5] [--checks 300]
 *        [--train 20000] [--clusters 64,256] [--probes 1,2,4,8,16] [--space vectors|signatures|q4] [--train-from namespace|store]
 *        [--json FILE]
 *
 * `--space signatures`: the clusters are of the centred signatures instead (k-modes: each centroid the bitwise majority
 * of its members, memories and checks assigned by Hamming distance), which a daemon could keep for a stored vector
 * from its signature alone. `--space q4`: clusters of the 4-bit copies a compact index holds in memory (centroids trained
 * on them, memories assigned by them; a check probes by its own vector), as a daemon could assign cells when it
 * loads the index instead of keeping them on disk. `--train-from store` (with `q4`): the centroids trained on a sample of
 * the whole store's memories (every namespace; the checks' part left out), as one set of cells per index would be.
 *
 * Read-only: the store is opened read-only and never written.
 */
import * as fs from 'node:fs';
import Database from 'better-sqlite3';
import { loadModel } from '../daemon/src/index/attach';
import { signatureCentre } from '../daemon/src/embed/signature-centre';
import { pack4, q4Bytes, signature, SIG_WORDS } from '../daemon/src/store/quantize';
import { normalized, pop32 } from '../daemon/src/store/vector-scan';
import { arg, report } from './stats';

const DUP_THRESHOLD = 0.66;
const CANDIDATES = 128;
const TOP = 5;

/** An int8 vector at 4 bits and back (pack4's components, -7..7): what a compact index holds in memory. */
function fourBits(q: Int8Array): Float32Array {
  const packed = new Uint8Array(q4Bytes(q.length));
  pack4(q, q.length, packed, 0);
  const out = new Float32Array(q.length);
  for (let b = 0; b < packed.length; b++) {
    const i = (b >> 4) * 32 + (b & 15);
    if (i < q.length) out[i] = (packed[b] & 15) - 8;
    if (i + 16 < q.length) out[i + 16] = (packed[b] >> 4) - 8;
  }
  return out;
}

/** A stored int8 vector (a row's blob) as a compact index holds it, at unit length. */
const unit4 = (q: Buffer): Float32Array => normalized(fourBits(new Int8Array(q.buffer, q.byteOffset, q.byteLength)));

function dot(a: Float32Array, b: Float32Array): number {
  let x = 0;
  for (let i = 0; i < a.length; i++) x += a[i] * b[i];
  return x;
}

/** Spherical k-means (cosine) of `data` into k unit centroids, `iters` rounds, seeded deterministically. */
function kmeans(data: Float32Array[], k: number, iters: number): Float32Array[] {
  const d = data[0].length;
  const step = Math.floor(data.length / k);
  let cents: Float32Array[] = Array.from({ length: k }, (_, i) => Float32Array.from(data[i * step]));
  for (let it = 0; it < iters; it++) {
    const sums = Array.from({ length: k }, () => new Float32Array(d));
    for (const v of data) {
      const c = nearestCentroid(cents, v);
      const s = sums[c];
      for (let i = 0; i < d; i++) s[i] += v[i];
    }
    cents = sums.map((s, c) => (s.some((x) => x !== 0) ? normalized(s) : cents[c]));
  }
  return cents;
}

function nearestCentroid(cents: Float32Array[], v: Float32Array): number {
  let best = 0;
  let bx = -Infinity;
  for (let c = 0; c < cents.length; c++) {
    const x = dot(cents[c], v);
    if (x > bx) {
      bx = x;
      best = c;
    }
  }
  return best;
}

/** Hamming distance of two signatures. */
function hammingOf(a: Int32Array, b: Int32Array): number {
  let h = 0;
  for (let w = 0; w < SIG_WORDS; w++) h += pop32(a[w] ^ b[w]);
  return h;
}

function nearestSig(cents: Int32Array[], s: Int32Array): number {
  let best = 0;
  let bh = Infinity;
  for (let c = 0; c < cents.length; c++) {
    const h = hammingOf(cents[c], s);
    if (h < bh) {
      bh = h;
      best = c;
    }
  }
  return best;
}

/** k-modes on signatures: each centroid the bitwise majority of its members, assignment by Hamming distance. */
function kmodes(data: Int32Array[], k: number, iters: number): Int32Array[] {
  const step = Math.floor(data.length / k);
  let cents: Int32Array[] = Array.from({ length: k }, (_, i) => Int32Array.from(data[i * step]));
  for (let it = 0; it < iters; it++) {
    const ones = Array.from({ length: k }, () => new Int32Array(SIG_WORDS * 32));
    const counts = new Int32Array(k);
    for (const s of data) {
      const c = nearestSig(cents, s);
      counts[c]++;
      for (let b = 0; b < SIG_WORDS * 32; b++) ones[c][b] += (s[b >> 5] >>> (b & 31)) & 1;
    }
    cents = cents.map((old, c) => {
      if (!counts[c]) return old;
      const out = new Int32Array(SIG_WORDS);
      for (let b = 0; b < SIG_WORDS * 32; b++) if (2 * ones[c][b] > counts[c]) out[b >> 5] |= 1 << (b & 31);
      return out;
    });
  }
  return cents;
}

/** About `n` memories of the whole store (every namespace, none of part `part`), at 4 bits and back, normalized. */
function storeSample(file: string, table: string, part: number, n: number): Float32Array[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  const total = (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  const stride = Math.max(1, Math.floor(total / n));
  const rows = db.prepare(`SELECT rowid, q FROM ${table} WHERE rowid % ? = 0 AND rowid % 23 != ?`).all(stride, part) as {
    q: Buffer;
  }[];
  db.close();
  return rows.map((r) => unit4(r.q));
}

async function main() {
  const file = arg('db', '');
  if (!file || !fs.existsSync(file)) throw new Error('--db path/to/cairn.db');
  const nsName = arg('ns', 'project.atlas');
  const part = Number(arg('part', '5'));
  const nChecks = Number(arg('checks', '300'));
  const nTrain = Number(arg('train', '20000'));
  const clusterCounts = arg('clusters', '64,256').split(',').map(Number);
  const probes = arg('probes', '1,2,4,8,16').split(',').map(Number);
  const space = arg('space', 'vectors');
  if (space !== 'vectors' && space !== 'signatures' && space !== 'q4') throw new Error('--space vectors|signatures|q4');
  const db = new Database(file, { readonly: true, fileMustExist: true });
  const table = (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'vq\\_%' ESCAPE '\\'").get() as { name: string }
  ).name;
  const rows = db
    .prepare(
      `SELECT v.rowid AS rowid, v.q AS q FROM ${table} v JOIN memories m ON m.rowid = v.rowid JOIN namespaces n ON n.id = m.ns_id
       WHERE n.path = ? AND m.deleted_at IS NULL`,
    )
    .all(nsName) as { rowid: number; q: Buffer }[];
  db.close();
  const vec = (q: Buffer) => normalized(Float32Array.from(new Int8Array(q.buffer, q.byteOffset, q.byteLength)));
  const checkRows = rows.filter((r) => r.rowid % 23 === part).slice(0, nChecks);
  const checkIds = new Set(checkRows.map((r) => r.rowid));
  const baseRows = rows.filter((r) => !checkIds.has(r.rowid));
  const base = baseRows.map((r) => vec(r.q));
  const checks = checkRows.map((r) => vec(r.q));
  const d = base[0].length;
  const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
  const centre = await signatureCentre(embedder);
  await embedder.close?.();
  if (!centre) throw new Error('the built-in model gave no centre');
  const centred = (v: Float32Array) => normalized(Float32Array.from(v, (x, i) => x - centre[i]));
  const sigs = base.map((v) => signature(v, centre));
  const started = Date.now();
  // The exact answers, and today's: the 128 Hamming-nearest of the whole namespace, scored exactly.
  const exact = checks.map((q) =>
    base
      .map((v, j) => ({ j, x: dot(q, v) }))
      .sort((a, b) => b.x - a.x)
      .slice(0, TOP)
      .filter((e) => e.x >= DUP_THRESHOLD),
  );
  const hamming = checks.map((q) => {
    const qs = signature(q, centre);
    return sigs.map((s) => {
      let h = 0;
      for (let w = 0; w < SIG_WORDS; w++) h += pop32(s[w] ^ qs[w]);
      return h;
    });
  });
  /** The check's answer among `pool` (indexes of base): its 128 Hamming-nearest, the best TOP of those by cosine. */
  const answer = (c: number, pool: number[]) => {
    const h = hamming[c];
    const kept = [...pool].sort((a, b) => h[a] - h[b] || a - b).slice(0, CANDIDATES);
    return new Set(
      kept
        .map((j) => ({ j, x: dot(checks[c], base[j]) }))
        .sort((a, b) => b.x - a.x)
        .slice(0, TOP)
        .map((e) => e.j),
    );
  };
  const score = (found: Set<number>[]) => {
    let hits = 0;
    let total = 0;
    let whole = 0;
    exact.forEach((ex, c) => {
      const h = ex.filter((e) => found[c].has(e.j)).length;
      hits += h;
      total += ex.length;
      if (h === ex.length) whole++;
    });
    return { top5: Math.round((hits / Math.max(1, total)) * 1000) / 1000, whole: Math.round((whole / exact.length) * 1000) / 1000 };
  };
  const all = base.map((_, j) => j);
  const result: Record<string, unknown> = {
    db: file,
    ns: nsName,
    part,
    space,
    namespace: base.length,
    checks: checks.length,
    dimension: d,
    exactAnswers: exact.reduce((s, e) => s + e.length, 0),
    whole: score(checks.map((_, c) => answer(c, all))),
  };
  // The k-means sample: base memories from every part but the checks' own, spread over the namespace.
  const trainIdx = baseRows.map((r, j) => ({ r, j })).filter((x) => x.r.rowid % 23 !== part);
  const stride = Math.max(1, Math.floor(trainIdx.length / nTrain));
  const trainAt = trainIdx.filter((_, i) => i % stride === 0).map((x) => x.j);
  const train = trainAt.map((j) => centred(base[j]));
  const trainFrom = arg('train-from', 'namespace');
  if (trainFrom !== 'namespace' && trainFrom !== 'store') throw new Error('--train-from namespace|store');
  if (trainFrom === 'store' && space !== 'q4') throw new Error('--train-from store needs --space q4');
  result.trainFrom = trainFrom;
  const base4 = space === 'q4' ? baseRows.map((r) => unit4(r.q)) : [];
  // What k-means clusters (centred), the same for every K: read from the store once when it is the store's sample.
  const sample =
    space !== 'q4' ? train : (trainFrom === 'store' ? storeSample(file, table, part, nTrain) : trainAt.map((j) => base4[j])).map(centred);
  const partitions: Record<string, unknown>[] = [];
  for (const K of clusterCounts) {
    // Clusters of the vectors (k-means, cosine) or of their signatures (k-modes, Hamming: cheaper to keep, as each
    // stored vector's cell would be assigned from its signature alone).
    let owner: number[];
    let probeOrder: (c: number) => number[];
    if (space === 'signatures') {
      const cents = kmodes(
        train.map((v) => signature(v)),
        K,
        8,
      );
      owner = sigs.map((sg) => nearestSig(cents, sg));
      probeOrder = (c) => {
        const qs = signature(checks[c], centre);
        return cents
          .map((m, i) => ({ i, h: hammingOf(m, qs) }))
          .sort((a, b) => a.h - b.h || a.i - b.i)
          .map((o) => o.i);
      };
    } else {
      // `q4`: as a daemon would assign cells when its index loads: the centroids trained on, and the memories assigned
      // by, the 4-bit copies the index holds in memory. Either way a check probes by its own vector (it has it when it
      // is embedded).
      const assigned = space === 'q4' ? base4 : base;
      const cents = kmeans(sample, K, 8);
      owner = assigned.map((v) => nearestCentroid(cents, centred(v)));
      probeOrder = (c) => {
        const cq = centred(checks[c]);
        return cents
          .map((m, i) => ({ i, x: dot(m, cq) }))
          .sort((a, b) => b.x - a.x)
          .map((o) => o.i);
      };
    }
    const members: number[][] = Array.from({ length: K }, () => []);
    owner.forEach((c, j) => members[c].push(j));
    const sizes = members.map((m) => m.length).sort((a, b) => b - a);
    for (const P of probes.filter((p) => p <= K)) {
      let read = 0;
      const found = checks.map((_, c) => {
        const pool = probeOrder(c)
          .slice(0, P)
          .flatMap((i) => members[i]);
        read += pool.length;
        return answer(c, pool);
      });
      partitions.push({
        clusters: K,
        probed: P,
        largestCluster: sizes[0],
        read: Math.round((read / checks.length / base.length) * 1000) / 1000,
        ...score(found),
      });
    }
  }
  result.partitions = partitions;
  result.seconds = Math.round((Date.now() - started) / 1000);
  report(result);
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
