/**
 * The duplicate check's LSH buckets against today's whole-namespace Hamming pass (issue 27): recall and CPU per
 * check, for band shapes and multi-probe depths, on the side-by-side corpus embedded with the built-in model.
 *
 *   node --import tsx bench/duplicate-lsh.ts [--size 100000] [--corpus DIR] [--checks 2000] [--shapes 16x8,16x16,32x8]
 *
 * The corpus's memories go into a vector index (store/vector-index.ts, int8, as a store of this size holds them) with
 * their namespaces; `--checks` of them, spread over the corpus (so a namespace is checked in proportion to its size,
 * as an import checks it), are checked as the indexer checks a write: the visible memories of the namespace other than
 * itself, the DUPLICATE_LIMIT best at or above the built-in model's threshold, in passes of INDEX_BATCH checks. Paths:
 * - `exact`: every memory of the namespace scored (the truth);
 * - `today`: the whole namespace's Hamming pass, the DUP_CANDIDATES nearest scored (the check before the buckets);
 * - `BITSxBANDS/fF`: the memories sharing a band with the check (F = 1: also one bit away), then as today.
 * Recall of a path against another: the share of the other's hits (memories reported as possible duplicates) it
 * reports too. Planted: the labelled duplicate pairs (test/embed/duplicate-pairs.ts) put into the largest
 * namespace, each pair's second memory checked: the share whose first memory is reported. CPU: per check, the
 * event loop's part (listing the candidates) and the scan's (what the embedding worker runs), one thread.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Embedder } from '../daemon/src/embed';
import { embeddingText } from '../daemon/src/index/embedding-model';
import { DUPLICATE_LIMIT, DUPLICATE_THRESHOLD, INDEX_BATCH } from '../daemon/src/index/indexer-tuning';
import { quantize } from '../daemon/src/store/quantize';
import { buildDuplicateScan, type DuplicateCheck } from '../daemon/src/store/vector-duplicates';
import { VectorIndex } from '../daemon/src/store/vector-index';
import type { BandShape } from '../daemon/src/store/vector-lsh';
import { duplicateHits, newScratch, runDuplicateScan, type SlotArrays } from '../daemon/src/store/vector-scan';
import { DUP_CANDIDATES, DUP_EXACT_MAX } from '../daemon/src/store/vector-tuning';
import { HELD_OUT, SELECTION } from '../test/embed/duplicate-pairs';
import { ROOT } from '../test/helpers';
import { arg, cpuNow } from './stats';
import type { CorpusRecord } from './workload';

const size = Number(arg('size', '100000'));
const nChecks = Number(arg('checks', '2000'));
const corpusDir = path.resolve(arg('corpus', path.join(ROOT, 'bench', '.corpus')));
const shapes = arg('shapes', '16x8,16x16,32x8')
  .split(',')
  .map((s) => s.split('x').map(Number))
  .map(([bits, bands]) => ({ bits, bands }) as BandShape);
const threshold = DUPLICATE_THRESHOLD.builtin;
const D = 256;

const r3 = (x: number) => Math.round(x * 1000) / 1000;

interface Mem {
  rowid: number;
  ns: number;
  vector: Float32Array;
  sig: Int32Array;
}

async function embedAll(texts: string[]): Promise<{ vectors: Float32Array[]; sigs: Int32Array[] }> {
  const e = await Embedder.start({ model: 'builtin', allowRemote: false });
  const vectors: Float32Array[] = [];
  const sigs: Int32Array[] = [];
  for (let i = 0; i < texts.length; i += 1000) {
    const r = await e.embedWithSignatures(texts.slice(i, i + 1000));
    vectors.push(...r.vectors);
    sigs.push(...r.sigs);
  }
  await e.close();
  return { vectors, sigs };
}

function indexOf(mems: Mem[], bands: BandShape | null): { ix: VectorIndex; arrays: SlotArrays } {
  const ix = new VectorIndex({ model: 'bench', dimension: D, table: 'none' }, false, Infinity, bands);
  ix.grow(mems.length);
  for (const m of mems) {
    const z = quantize(m.vector, m.sig);
    ix.put(
      { rowid: m.rowid, ns: m.ns, status: 'active', deleted_at: null, expires_at: null, valid_from: null, valid_to: null },
      z.q,
      z.sig,
      z.inv,
    );
  }
  return { ix, arrays: { rowid: ix.rowid, inv: ix.inv, q: ix.q, q4: ix.q4, sig: ix.sig, dimension: D, kmem: ix.kmem } };
}

/** The hits of every check (threshold applied), and CPU ms per check on the event loop's side and the scan's. */
function run(
  ix: VectorIndex,
  arrays: SlotArrays,
  checks: DuplicateCheck[],
  exactMax: number,
  flips: number | null,
): { hits: number[][]; buildMs: number; scanMs: number; listed: number } {
  const hits: number[][] = [];
  const sc = newScratch();
  let buildMs = 0;
  let scanMs = 0;
  let listed = 0;
  const now = Date.now();
  for (let i = 0; i < checks.length; i += INDEX_BATCH) {
    const batch = checks.slice(i, i + INDEX_BATCH);
    const t0 = cpuNow();
    const scan = buildDuplicateScan(ix, arrays, batch, DUPLICATE_LIMIT, now, exactMax, DUP_CANDIDATES, flips);
    const t1 = cpuNow();
    const res = duplicateHits(runDuplicateScan(scan, sc));
    scanMs += cpuNow() - t1;
    buildMs += t1 - t0;
    // Slots each check was given (its group's list), summed.
    for (let c = 0; c < batch.length; c++) listed += scan.starts[scan.group[c] + 1] - scan.starts[scan.group[c]];
    for (const h of res) hits.push(h.filter((x) => x.score >= threshold).map((x) => x.rowid));
  }
  return { hits, buildMs: buildMs / checks.length, scanMs: scanMs / checks.length, listed: listed / checks.length };
}

function recall(got: number[][], want: number[][]): number {
  let n = 0;
  let f = 0;
  want.forEach((w, i) => {
    n += w.length;
    f += w.filter((x) => got[i].includes(x)).length;
  });
  return n ? f / n : 1;
}

(async () => {
  const records = fs
    .readFileSync(path.join(corpusDir, `corpus-${size}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as CorpusRecord);
  const nsIds = new Map<string, number>();
  const nsOf = (p: string) => nsIds.get(p) ?? (nsIds.set(p, nsIds.size + 1), nsIds.size);
  const pairs = [...SELECTION, ...HELD_OUT].filter((p) => p.duplicate);
  const t0 = Date.now();
  const texts = [
    ...records.map((r) => embeddingText({ key: r.key, value: r.value, tags: r.tags })),
    ...pairs.flatMap((p) => [p.a, p.b].map((m) => embeddingText({ key: m.key, value: m.value, tags: m.tags ?? [] }))),
  ];
  const { vectors, sigs } = await embedAll(texts);
  const embedS = (Date.now() - t0) / 1000;
  const mems: Mem[] = records.map((r, i) => ({ rowid: i + 1, ns: nsOf(r.namespace), vector: vectors[i], sig: sigs[i] }));
  // The largest namespace gets the pairs' first memories; their second memories are checked against it.
  const counts = new Map<number, number>();
  for (const m of mems) counts.set(m.ns, (counts.get(m.ns) ?? 0) + 1);
  const largest = [...counts].sort((a, b) => b[1] - a[1])[0];
  pairs.forEach((_, j) => {
    const at = records.length + 2 * j;
    mems.push({ rowid: mems.length + 1, ns: largest[0], vector: vectors[at], sig: sigs[at] });
  });
  const firstPlanted = records.length + 1;
  const step = Math.max(1, Math.floor(records.length / nChecks));
  const checks: DuplicateCheck[] = [];
  for (let i = 0; i < records.length && checks.length < nChecks; i += step) {
    const m = mems[i];
    checks.push({ vector: m.vector, nsRowid: m.ns, exclude: m.rowid, sig: m.sig });
  }
  const planted: DuplicateCheck[] = pairs.map((_, j) => {
    const at = records.length + 2 * j + 1;
    return { vector: vectors[at], nsRowid: largest[0], exclude: -1, sig: sigs[at] };
  });
  const plantedFound = (hits: number[][]) => r3(hits.filter((h, j) => h.includes(firstPlanted + j)).length / pairs.length);
  const out: Record<string, unknown>[] = [];
  const base = indexOf(mems, null);
  const exact = run(base.ix, base.arrays, checks, Infinity, null);
  const exactPlanted = run(base.ix, base.arrays, planted, Infinity, null);
  const today = run(base.ix, base.arrays, checks, DUP_EXACT_MAX, null);
  const todayPlanted = run(base.ix, base.arrays, planted, DUP_EXACT_MAX, null);
  const row = (name: string, r: ReturnType<typeof run>, p: ReturnType<typeof run>, bytes?: number) => {
    const o = {
      path: name,
      recallVsToday: r3(recall(r.hits, today.hits)),
      recallVsExact: r3(recall(r.hits, exact.hits)),
      flagged: r3(r.hits.filter((h) => h.length > 0).length / checks.length),
      planted: plantedFound(p.hits),
      listedPerCheck: Math.round(r.listed),
      cpuMsPerCheck: { eventLoop: r3(r.buildMs), scan: r3(r.scanMs) },
      ...(bytes !== undefined ? { bucketBytesPerVector: r3(bytes / mems.length) } : {}),
    };
    out.push(o);
    console.log(JSON.stringify(o));
  };
  console.log(
    `${records.length} memories, ${counts.size} namespaces (largest ${largest[1]}); ${checks.length} checks; ${pairs.length} planted pairs; embedded in ${embedS} s`,
  );
  row('exact', exact, exactPlanted);
  row('today', today, todayPlanted);
  delete (base as { ix?: VectorIndex }).ix;
  for (const shape of shapes) {
    const b = indexOf(mems, shape);
    for (const flips of [0, 1])
      row(
        `${shape.bits}x${shape.bands}/f${flips}`,
        run(b.ix, b.arrays, checks, DUP_EXACT_MAX, flips),
        run(b.ix, b.arrays, planted, DUP_EXACT_MAX, flips),
        b.ix.buckets!.bytes,
      );
  }
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify({ size, checks: checks.length, largest: largest[1], paths: out }, null, 2));
})();
