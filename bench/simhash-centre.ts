/**
 * How much of the exact neighbours does the Hamming pre-selection keep when the SimHash is taken of the vector minus
 * the model's mean direction instead of the vector itself (issue 27, stop 48)? Embedding models put every vector in a
 * narrow cone (the built-in model's vectors share a large common component), so many of the 256 sign bits are the
 * same for nearly every memory and tell nothing apart. This measures, offline on a store's stored int8 vectors:
 * - the bits' balance (how many have a minority share below 5%) and their summed entropy, plain and centred;
 * - for memories used as queries against a disjoint base (what a duplicate check does), and optionally for the
 *   workload's queries embedded with the built-in model (what a search does), the share of the exact top 10 among
 *   the C Hamming-nearest (recall@10), and how often the exact duplicate answer (top 5 at ≥ 0.66) lies wholly among
 *   them, for several C.
 * The mean is taken over `--fit` memories disjoint from the base and the queries (or, with `--centre notes`, the
 * centre a new index takes: the built-in embeddings of generic developer notes, embed/signature-centre.ts); `--part K` picks rows by rowid
 * modulo 23, so two values of K give disjoint samples (one to look at, one to confirm).
 *
 *   node --import tsx bench/simhash-centre.ts --db path/to/cairn.db [--part 5] [--base 35000] [--fit 5000]
 *        [--memory-queries 300] [--queries CORPUS/queries-N.jsonl] [--centre store|notes]
 *        [--json FILE]
 *
 * Read-only: the store is opened read-only and never written.
 */
import * as fs from 'node:fs';
import Database from 'better-sqlite3';
import { loadModel } from '../daemon/src/index/attach';
import { signatureCentre } from '../daemon/src/embed/signature-centre';
import { signature, SIG_BITS, SIG_WORDS } from '../daemon/src/store/quantize';
import { normalized, pop32 } from '../daemon/src/store/vector-scan';
import { arg, report } from './stats';
import { readJsonl } from './workload';

const CANDIDATES = [64, 128, 512, 3000];
const DUP_THRESHOLD = 0.66;

function balance(sigs: Int32Array[]): { skewedBits: number; entropyBits: number } {
  let skewed = 0;
  let entropy = 0;
  for (let b = 0; b < SIG_BITS; b++) {
    let ones = 0;
    for (const s of sigs) ones += (s[b >> 5] >>> (b & 31)) & 1;
    const p = ones / sigs.length;
    if (Math.min(p, 1 - p) < 0.05) skewed++;
    if (p > 0 && p < 1) entropy -= p * Math.log2(p) + (1 - p) * Math.log2(1 - p);
  }
  return { skewedBits: skewed, entropyBits: Math.round(entropy * 10) / 10 };
}

function preselection(base: Float32Array[], queries: Float32Array[], centre: Float32Array | null) {
  const d = base[0].length;
  const S = base.map((v) => signature(v, centre));
  const out: Record<number, { recall10: number; dupWhole: number }> = {};
  for (const C of CANDIDATES) out[C] = { recall10: 0, dupWhole: 0 };
  for (const q of queries) {
    const exact = base
      .map((v, j) => {
        let x = 0;
        for (let i = 0; i < d; i++) x += q[i] * v[i];
        return { j, x };
      })
      .sort((a, b) => b.x - a.x)
      .slice(0, 10);
    const qs = signature(q, centre);
    const byHamming = S.map((s, j) => {
      let h = 0;
      for (let w = 0; w < SIG_WORDS; w++) h += pop32(s[w] ^ qs[w]);
      return { j, h };
    }).sort((a, b) => a.h - b.h || a.j - b.j);
    const dup = exact.slice(0, 5).filter((e) => e.x >= DUP_THRESHOLD);
    for (const C of CANDIDATES) {
      const kept = new Set(byHamming.slice(0, C).map((x) => x.j));
      out[C].recall10 += exact.filter((e) => kept.has(e.j)).length / 10 / queries.length;
      if (dup.every((e) => kept.has(e.j))) out[C].dupWhole += 1 / queries.length;
    }
  }
  for (const C of CANDIDATES) {
    out[C].recall10 = Math.round(out[C].recall10 * 1000) / 1000;
    out[C].dupWhole = Math.round(out[C].dupWhole * 1000) / 1000;
  }
  return out;
}

async function main() {
  const file = arg('db', '');
  if (!file || !fs.existsSync(file)) throw new Error('--db path/to/cairn.db');
  const part = Number(arg('part', '5'));
  const nBase = Number(arg('base', '35000'));
  const nFit = Number(arg('fit', '5000'));
  const nMem = Number(arg('memory-queries', '300'));
  const db = new Database(file, { readonly: true, fileMustExist: true });
  const table = (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'vq\\_%' ESCAPE '\\'").get() as { name: string }
  ).name;
  const rows = (db.prepare(`SELECT q FROM ${table} WHERE rowid % 23 = ? LIMIT ?`).all(part, nFit + nBase + nMem) as { q: Buffer }[]).map(
    (r) => normalized(Float32Array.from(new Int8Array(r.q.buffer, r.q.byteOffset, r.q.byteLength))),
  );
  db.close();
  if (rows.length < nFit + nBase + nMem) throw new Error(`only ${rows.length} vectors with rowid % 23 = ${part}: lower --base`);
  const fit = rows.slice(0, nFit);
  const base = rows.slice(nFit, nFit + nBase);
  const memoryQueries = rows.slice(nFit + nBase);
  const d = base[0].length;
  const centre = new Float32Array(d);
  for (const v of fit) for (let i = 0; i < d; i++) centre[i] += v[i] / fit.length;
  // --centre notes: the built-in model's centre of a new index (daemon/src/embed/signature-centre.ts: generic
  // developer notes, nothing of the store's data) instead of the store's own mean
  if (arg('centre', 'store') === 'notes') {
    const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
    const c = await signatureCentre(embedder);
    await embedder.close?.();
    if (!c) throw new Error('the built-in model gave no centre');
    centre.set(c);
  }
  let norm = 0;
  for (const x of centre) norm += x * x;
  const result: Record<string, unknown> = {
    db: file,
    part,
    base: base.length,
    meanNorm: Math.round(Math.sqrt(norm) * 1000) / 1000,
    bits: {
      plain: balance(base.map((v) => signature(v))),
      centred: balance(base.map((v) => signature(v, centre))),
    },
    memoryQueries: {
      plain: preselection(base, memoryQueries, null),
      centred: preselection(base, memoryQueries, centre),
    },
  };
  const qfile = arg('queries', '');
  if (qfile) {
    const texts = readJsonl<{ q: string }>(qfile)
      .slice(0, 200)
      .map((x) => x.q);
    const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
    const vectors = (await embedder.embed(texts)).map((v) => normalized(v));
    await embedder.close?.();
    result.workloadQueries = {
      plain: preselection(base, vectors, null),
      centred: preselection(base, vectors, centre),
    };
  }
  report(result);
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
