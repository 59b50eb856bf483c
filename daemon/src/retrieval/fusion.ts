/**
 * Rank fusion and score adjustment.
 *
 * Normalized reciprocal-rank fusion: an arm contributes (K+1)/(K+rank) for a
 * candidate at 1-based `rank`, so rank 1 scores 1.0; the fused score is the
 * weighted mean over arms (a candidate missing from an arm gets 0 there), so it
 * lies in [0, 1].
 *
 * The constants depend on the kind of model behind the vector arm (FUSION, read through
 * VectorSearcher.fusion()): K = 2 (not the customary 60) and vector weight 0.75 for
 * transformer models; K = 5 and vector weight 0.5 for the built-in static model;
 * full-text weight 1.0 for both. Chosen by the protocol in bench/README.md:
 * `bench/locomo.ts --grid` on LoCoMo conversations 0-2 only, each kind's best
 * (K, weight) there, then confirmed once on conversations 3-4.
 *   transformer (all-MiniLM-L6-v2): K = 2, weight 0.75 (figures in bench/README.md).
 *   built-in cairn/mpnet-static: on 0-2 the grid's best is K = 5, weight 0.5 (turn R@5
 *   0.585; K = 2: 0.576, K = 10: 0.579, full text alone 0.557); on 3-4 it confirms
 *   (0.584 vs 0.581 at K = 2, full text 0.560).
 * With K = 60, rank 1 and rank 6 differ by 8% and the vector arm overturns
 * decisive full-text matches.
 *
 * Issue 27 (bench/README.md, "Fusion on data it was not tuned on"): rules without per-model constants
 * (FUSION_RULES below: CombSUM, CombMNZ, per-query confidence weights over min-max scores, Borda ranks or RRF,
 * and top-10 agreement between the arms) were compared offline with this one on conversations 0-2 and 3-4 and
 * chosen by the smallest gap between the sets. None was at least as good on 3-4 with a smaller gap (this rule:
 * +0.028 / +0.022 turn R@5 over full text, gap 0.005; `agreement` +0.031 / +0.024, gap 0.007; score-based ones
 * lose on 3-4), so fuseArms stays the daemon's rule; the others are kept for bench/locomo.ts `--fusion`.
 *
 * RRF_K (2) also merges the local and the team store's ranked lists (team/router.ts).
 *
 * Then a bounded adjustment: fused × (1 + a), with
 *   a = 0.06·(2·importance − 1) + 0.04·(2·confidence − 1) + 0.05·recency,
 *   recency = exp(−age_days / 90) of updatedAt,
 * so a ∈ [−0.10, +0.15]: these nudge ties and near-ties, never overturn relevance.
 */
export const RRF_K = 2;
export const FTS_WEIGHT = 1.0;

/** Fusion constants for one kind of embedding model. */
export interface Fusion {
  /** The reciprocal-rank constant K. */
  k: number;
  /** The vector arm's weight (the full-text arm's is FTS_WEIGHT). */
  vectorWeight: number;
}

export const FUSION = {
  transformer: { k: 2, vectorWeight: 0.75 },
  builtin: { k: 5, vectorWeight: 0.5 },
} as const satisfies Record<string, Fusion>;
export const RECENCY_DAYS = 90;

/** Normalized reciprocal-rank score of a 1-based rank: 1.0 at rank 1. */
export function rrf(rank: number, k: number = RRF_K): number {
  return (k + 1) / (k + rank);
}

const unit = (x: number) => Math.min(1, Math.max(0, x));

export function adjustment(importance: number, confidence: number, updatedAtMs: number, now: number): number {
  const ageDays = Math.max(0, now - updatedAtMs) / 86_400_000;
  const recency = Math.exp(-ageDays / RECENCY_DAYS);
  // Writes keep importance and confidence in [0, 1]; clamped here too, so MAX_ADJUSTMENT bounds every row.
  return 0.06 * (2 * unit(importance) - 1) + 0.04 * (2 * unit(confidence) - 1) + 0.05 * recency;
}
/** The largest adjustment (importance and confidence 1, updated now), with room for rounding. */
export const MAX_ADJUSTMENT = 0.15 + 1e-9;

/** One arm's candidate (a store row id and the arm's own score), in the arm's order, best first. */
export interface ArmCandidate {
  rowid: number;
  score: number;
}

/** A candidate after fusion: its rank and score in each arm (null where it was absent) and the fused score. */
export interface FusedCandidate {
  fts: { rank: number; score: number } | null;
  vector: { rank: number; score: number } | null;
  fused: number;
}

/**
 * Weighted reciprocal-rank fusion of a full-text and a vector arm, for any store
 * (retrieval/search.ts on SQLite, store/pg/search.ts on PostgreSQL). A candidate
 * only the vector arm found is dropped below `minVectorOnly` similarity.
 */
export function fuseArms(fts: ArmCandidate[], vec: ArmCandidate[], fusion: Fusion, minVectorOnly: number): Map<number, FusedCandidate> {
  const fused = new Map<number, FusedCandidate>();
  const { k, vectorWeight } = fusion;
  const wsum = FTS_WEIGHT + vectorWeight;
  fts.forEach((h, i) =>
    fused.set(h.rowid, { fts: { rank: i + 1, score: h.score }, vector: null, fused: (FTS_WEIGHT * rrf(i + 1, k)) / wsum }),
  );
  vec.forEach((h, i) => {
    if (!fused.has(h.rowid) && h.score < minVectorOnly) return;
    const e = fused.get(h.rowid) ?? { fts: null, vector: null, fused: 0 };
    e.vector = { rank: i + 1, score: h.score };
    e.fused += (vectorWeight * rrf(i + 1, k)) / wsum;
    fused.set(h.rowid, e);
  });
  return fused;
}

/** A fusion rule: two arms' candidates (each best first) to fused candidates; same contract as `fuseArms`. */
export type FusionRule = (fts: ArmCandidate[], vec: ArmCandidate[], fusion: Fusion, minVectorOnly: number) => Map<number, FusedCandidate>;

/**
 * One arm's scores min-max normalized over its own candidate list: the best 1, the worst 0. A flat list (one
 * candidate, or all scores equal) normalizes to 1 everywhere: the arm cannot tell its candidates apart.
 */
export function minMax(list: ArmCandidate[]): number[] {
  if (list.length === 0) return [];
  let hi = -Infinity;
  let lo = Infinity;
  for (const h of list) {
    hi = Math.max(hi, h.score);
    lo = Math.min(lo, h.score);
  }
  const span = hi - lo;
  return list.map((h) => (span > 0 && Number.isFinite(span) ? (h.score - lo) / span : 1));
}

/**
 * How confident an arm is of its own ranking for this query, in [0, 1]: how far its top `top` candidates stand
 * above the rest of its list, on the min-max scale, i.e. 1 − the mean normalized score of the candidates below the
 * top. A list whose scores fall away after the top gives near 1; a flat one (every candidate about as good, or fewer
 * than two candidates) gives 0.
 */
export function armConfidence(list: ArmCandidate[], top = 1): number {
  const u = minMax(list);
  if (u.length <= top) return 0;
  const rest = u.slice(top);
  const mean = rest.reduce((a, b) => a + b, 0) / rest.length;
  return Math.min(1, Math.max(0, 1 - mean));
}

/** Shared shape of the score-based rules: per-arm normalized scores, per-arm weights, weighted mean in [0, 1]. */
function fuseWeighted(
  fts: ArmCandidate[],
  vec: ArmCandidate[],
  minVectorOnly: number,
  norm: (list: ArmCandidate[]) => number[],
  weights: (fts: ArmCandidate[], vec: ArmCandidate[]) => [number, number],
  mnz = false,
): Map<number, FusedCandidate> {
  // Weights read whole lists (scores, and for `agreement` the identities at the top), never one candidate's place.
  let [wf, wv] = weights(fts, vec);
  if (!(wf + wv > 0)) [wf, wv] = [1, 1];
  const uf = norm(fts);
  const uv = norm(vec);
  const fused = new Map<number, FusedCandidate & { n: number }>();
  fts.forEach((h, i) => fused.set(h.rowid, { fts: { rank: i + 1, score: h.score }, vector: null, fused: (wf * uf[i]) / (wf + wv), n: 1 }));
  vec.forEach((h, i) => {
    if (!fused.has(h.rowid) && h.score < minVectorOnly) return;
    const e = fused.get(h.rowid) ?? { fts: null, vector: null, fused: 0, n: 0 };
    e.vector = { rank: i + 1, score: h.score };
    e.fused += (wv * uv[i]) / (wf + wv);
    e.n++;
    fused.set(h.rowid, e);
  });
  const out = new Map<number, FusedCandidate>();
  for (const [rowid, { n, ...e }] of fused) out.set(rowid, mnz ? { ...e, fused: (e.fused * n) / 2 } : e);
  return out;
}

/** Borda-normalized rank: 1 at rank 1, falling linearly to 1/n at rank n. */
const borda = (list: ArmCandidate[]) => list.map((_, i) => 1 - i / list.length);

/** Candidate rules compared in bench/locomo.ts (`--fusion`); none but `rrf` reads the per-model constants. */
export const FUSION_RULES = {
  /** Weighted normalized RRF with the model kind's K and vector weight (the rule shipped before issue 27). */
  rrf: fuseArms,
  /** CombSUM: per-query min-max normalized scores, equal weights. */
  combsum: (f, v, _c, floor) => fuseWeighted(f, v, floor, minMax, () => [1, 1]),
  /** CombMNZ: CombSUM times the number of arms that found the candidate (halved, so it stays in [0, 1]). */
  combmnz: (f, v, _c, floor) => fuseWeighted(f, v, floor, minMax, () => [1, 1], true),
  /** Min-max scores, each arm weighted by its confidence (top 1 over the rest). */
  confidence: (f, v, _c, floor) => fuseWeighted(f, v, floor, minMax, (a, b) => [armConfidence(a), armConfidence(b)]),
  /** As `confidence`, with the top five over the rest. */
  confidence5: (f, v, _c, floor) => fuseWeighted(f, v, floor, minMax, (a, b) => [armConfidence(a, 5), armConfidence(b, 5)]),
  /** Borda ranks, each arm weighted by its confidence. */
  'confidence-rank': (f, v, _c, floor) => fuseWeighted(f, v, floor, borda, (a, b) => [armConfidence(a), armConfidence(b)]),
  /** RRF at a fixed K = 5 (not per model), each arm weighted by its confidence. */
  'confidence-rrf': (f, v, _c, floor) =>
    fuseWeighted(
      f,
      v,
      floor,
      (l) => l.map((_, i) => rrf(i + 1, 5)),
      (a, b) => [armConfidence(a), armConfidence(b)],
    ),
  /** Min-max scores; the vector arm weighted by how much of its top 10 the full-text arm's top 10 holds. */
  agreement: (f, v, _c, floor) =>
    fuseWeighted(f, v, floor, minMax, (a, b) => {
      const top = new Set(a.slice(0, 10).map((h) => h.rowid));
      return [1, b.slice(0, 10).filter((h) => top.has(h.rowid)).length / 10];
    }),
} as const satisfies Record<string, FusionRule>;
export type FusionRuleName = keyof typeof FUSION_RULES;

/**
 * The top `limit` fused candidates by fused × (1 + adjustment), ties by the newer
 * then the smaller id; a candidate whose row is missing from `rows` drops out.
 */
export function rankFused<R extends { importance: number; confidence: number; updated_at: number; id: string }>(
  fused: Map<number, FusedCandidate>,
  rows: Map<number, R>,
  now: number,
  limit: number,
): { rowid: number; r: R; e: FusedCandidate; boost: number; score: number }[] {
  return [...fused.entries()]
    .flatMap(([rowid, e]) => {
      const r = rows.get(rowid);
      if (!r) return [];
      const boost = adjustment(r.importance, r.confidence, r.updated_at, now);
      return [{ rowid, r, e, boost, score: e.fused * (1 + boost) }];
    })
    .sort((a, b) => b.score - a.score || b.r.updated_at - a.r.updated_at || (a.r.id < b.r.id ? -1 : 1))
    .slice(0, limit);
}

/**
 * `rankFused` reading the facts of only as many candidates as can still reach the top `limit`: candidates are taken
 * by fused score, best first, in growing batches, until the next one cannot beat the `limit`-th score found so far
 * even with the largest adjustment (fused × (1 + MAX_ADJUSTMENT) below it). The same answer as reading every
 * candidate's facts (a candidate left out ranks strictly below `limit` others), for a fraction of the reads: fusion
 * hands over up to two arms' worth of candidates (100 each for 25 hits).
 */
export function rankFusedLazy<R extends { importance: number; confidence: number; updated_at: number; id: string }>(
  fused: Map<number, FusedCandidate>,
  facts: (rowids: number[]) => Map<number, R>,
  now: number,
  limit: number,
): { rowid: number; r: R; e: FusedCandidate; boost: number; score: number }[] {
  const order = [...fused.entries()].sort((a, b) => b[1].fused - a[1].fused);
  const rows = new Map<number, R>();
  const scores: number[] = [];
  let taken = 0;
  for (let batch = Math.max(2 * limit, 16); taken < order.length; batch *= 2) {
    const next = order.slice(taken, taken + batch);
    taken += next.length;
    for (const [rowid, r] of facts(next.map(([rowid]) => rowid))) {
      rows.set(rowid, r);
      scores.push(fused.get(rowid)!.fused * (1 + adjustment(r.importance, r.confidence, r.updated_at, now)));
    }
    if (taken >= order.length || scores.length < limit) continue;
    scores.sort((a, b) => b - a);
    if (order[taken][1].fused * (1 + MAX_ADJUSTMENT) < scores[limit - 1]) break;
  }
  return rankFused(new Map(order.slice(0, taken)), rows, now, limit);
}
