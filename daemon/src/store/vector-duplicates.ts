/**
 * Building a DuplicateScan (vector-scan.ts) from the index in memory: many duplicate checks, each against the visible
 * memories of its namespace (VectorTables.prepareDuplicateScan).
 *
 * Duplicate detection (`similarInNamespace`) uses the same index and the same two steps: up to DUP_EXACT_MAX
 * visible memories of the namespace are scored exactly; above it, the DUP_CANDIDATES nearest by Hamming distance.
 * (A Hamming bound derived from the threshold filtered nothing at the thresholds the models need, about 0.66:
 * unrelated memories of one project are often within it, so every check scored the whole namespace.)
 */
import type { Include } from '../protocol/types';
import { quantize, SIG_WORDS } from './quantize';
import type { VectorIndex } from './vector-index';
import { normalized, type DuplicateScan, type SlotArrays } from './vector-scan';

/** One duplicate check: a vector, its namespace, the memory it belongs to (left out), and its SimHash if known. */
export interface DuplicateCheck {
  vector: Float32Array;
  nsRowid: number;
  exclude: number;
  sig?: Int32Array;
}

/**
 * The scan of `checks` over `ix` (brought up to the change log by the caller): each namespace's visible memories at
 * `now` are listed once for all its checks. A check scores them exactly up to `exactMax`, above that the
 * `candidates` nearest by Hamming distance to its SimHash (computed here when not given and needed).
 */
export function buildDuplicateScan(
  ix: VectorIndex,
  arrays: SlotArrays,
  checks: DuplicateCheck[],
  limit: number,
  now: number,
  exactMax: number,
  candidates: number,
): DuplicateScan {
  const d = arrays.dimension;
  const inc: Include = {};
  const groupOf = new Map<number, number>();
  let total = 0;
  for (const c of checks)
    if (!groupOf.has(c.nsRowid)) {
      groupOf.set(c.nsRowid, groupOf.size);
      total += ix.namespaceSlots(c.nsRowid).length;
    }
  const slots = new Int32Array(total);
  const starts = new Int32Array(groupOf.size + 1);
  let m = 0;
  for (const [ns, g] of groupOf) {
    starts[g] = m;
    for (const s of ix.namespaceSlots(ns)) if (ix.visible(s, inc, now)) slots[m++] = s;
  }
  starts[groupOf.size] = m;
  const vectors = new Float32Array(checks.length * d);
  const sigs = new Int32Array(checks.length * SIG_WORDS);
  const group = new Int32Array(checks.length);
  const exclude = new Int32Array(checks.length);
  for (let i = 0; i < checks.length; i++) {
    const c = checks[i];
    const g = groupOf.get(c.nsRowid)!;
    group[i] = g;
    exclude[i] = c.exclude;
    const v = normalized(c.vector);
    vectors.set(v, i * d);
    // The SimHash of the vector (put() returns it; the signs of projections do not depend on the vector's length).
    if (starts[g + 1] - starts[g] > exactMax) sigs.set(c.sig ?? quantize(v).sig, i * SIG_WORDS);
  }
  return { arrays, vectors, sigs, group, exclude, starts, slots, limit, exactMax, candidates };
}
