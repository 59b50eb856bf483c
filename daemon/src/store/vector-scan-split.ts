/**
 * One DuplicateScan (vector-scan.ts) cut into parts by check, to be run on two threads at once: the embedding worker
 * takes one part (its arrays transferred), the event loop the others, and the parts' answers are put back in the
 * scan's own check order. Each check is scored by the same code over the same namespace lists whichever thread runs
 * it, so the merged answer is the whole scan's (test/unit/vector-scan-split.test.ts).
 *
 * Why: after a large import the vector catch-up runs a batch's duplicate checks in the worker while the event loop,
 * its writes done, waits (at 1M the checks walk namespaces of up to ~114k signatures, most of the catch-up's CPU).
 * The indexer gives the event loop a share of them when it has been idle (index/duplicate-check.ts).
 */
import { SIG_WORDS } from './quantize';
import type { DuplicateScan, DuplicateScanResult } from './vector-scan';

/** How much a check costs, roughly: the length of the namespace list it walks. */
const weightOf = (scan: DuplicateScan, c: number): number => scan.starts[scan.group[c] + 1] - scan.starts[scan.group[c]];

/** The total weight of a scan's checks (slots walked, summed over its checks). */
export function scanWeight(scan: DuplicateScan): number {
  let w = 0;
  for (let c = 0; c < scan.group.length; c++) w += weightOf(scan, c);
  return w;
}

/**
 * The scan with only the checks `checks` (indexes into it, in order). `copyLists`: its own copies of the namespace
 * lists (a part that is transferred to the worker); otherwise it shares them with `scan`.
 */
export function scanPart(scan: DuplicateScan, checks: number[], copyLists: boolean): DuplicateScan {
  const d = scan.arrays.dimension;
  const vectors = new Float32Array(checks.length * d);
  const hasSigs = scan.sigs.length >= scan.group.length * SIG_WORDS && scan.group.length > 0;
  const sigs = new Int32Array(hasSigs ? checks.length * SIG_WORDS : 0);
  const group = new Int32Array(checks.length);
  const exclude = new Int32Array(checks.length);
  checks.forEach((c, i) => {
    vectors.set(scan.vectors.subarray(c * d, (c + 1) * d), i * d);
    if (hasSigs) sigs.set(scan.sigs.subarray(c * SIG_WORDS, (c + 1) * SIG_WORDS), i * SIG_WORDS);
    group[i] = scan.group[c];
    exclude[i] = scan.exclude[c];
  });
  return {
    ...scan,
    vectors,
    sigs,
    group,
    exclude,
    starts: copyLists ? scan.starts.slice() : scan.starts,
    slots: copyLists ? scan.slots.slice() : scan.slots,
  };
}

/**
 * Cut a scan's checks in two by weight: about `share` of it (from the end) for the event loop, in slices of at most
 * `sliceWeight` each (so no slice holds the event loop long), the rest for the worker. Null when there is nothing to
 * share (fewer than two checks).
 */
export function splitScan(scan: DuplicateScan, share: number, sliceWeight: number): { worker: number[]; slices: number[][] } | null {
  const n = scan.group.length;
  if (n < 2) return null;
  const total = scanWeight(scan);
  let mine = 0;
  let cut = n;
  // At least one check each side.
  while (cut > 1 && mine + weightOf(scan, cut - 1) <= total * share) mine += weightOf(scan, --cut);
  if (cut === n) cut = n - 1;
  const worker = Array.from({ length: cut }, (_, c) => c);
  const slices: number[][] = [];
  let slice: number[] = [];
  let w = 0;
  for (let c = cut; c < n; c++) {
    if (slice.length && w + weightOf(scan, c) > sliceWeight) {
      slices.push(slice);
      slice = [];
      w = 0;
    }
    slice.push(c);
    w += weightOf(scan, c);
  }
  if (slice.length) slices.push(slice);
  return { worker, slices };
}

/** The answers of a scan's parts (each with the checks it ran, in its order) as the whole scan's answer. */
export function mergeScanResults(checks: number, parts: { checks: number[]; result: DuplicateScanResult }[]): DuplicateScanResult {
  const per: { rowids: Int32Array; scores: Float64Array }[] = new Array(checks);
  for (const { checks: which, result } of parts) {
    let at = 0;
    which.forEach((c, i) => {
      const k = result.counts[i];
      per[c] = { rowids: result.rowids.subarray(at, at + k), scores: result.scores.subarray(at, at + k) };
      at += k;
    });
  }
  const counts = new Int32Array(checks);
  let total = 0;
  for (let c = 0; c < checks; c++) {
    if (!per[c]) throw new Error(`check ${c} of the scan was in no part`);
    counts[c] = per[c].rowids.length;
    total += counts[c];
  }
  const rowids = new Int32Array(total);
  const scores = new Float64Array(total);
  let at = 0;
  for (let c = 0; c < checks; c++) {
    rowids.set(per[c].rowids, at);
    scores.set(per[c].scores, at);
    at += counts[c];
  }
  return { counts, rowids, scores };
}
