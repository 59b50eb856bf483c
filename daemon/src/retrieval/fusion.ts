/**
 * Rank fusion and score adjustment.
 *
 * Normalized reciprocal-rank fusion: an arm contributes (K+1)/(K+rank) for a
 * candidate at 1-based `rank`, so rank 1 scores 1.0; the fused score is the
 * weighted mean over arms (a candidate missing from an arm gets 0 there), so it
 * lies in [0, 1].
 *
 * Then a bounded adjustment: fused × (1 + a), with
 *   a = 0.06·(2·importance − 1) + 0.04·(2·confidence − 1) + 0.05·recency,
 *   recency = exp(−age_days / 90) of updatedAt,
 * so a ∈ [−0.10, +0.15]: these nudge ties and near-ties, never overturn relevance.
 */
export const RRF_K = 60;
export const ARM_WEIGHTS = { fts: 1.0, vector: 1.0 } as const;
export const RECENCY_DAYS = 90;

export function rrf(rank: number): number {
  return (RRF_K + 1) / (RRF_K + rank);
}

export function adjustment(importance: number, confidence: number, updatedAtMs: number, now: number): number {
  const ageDays = Math.max(0, now - updatedAtMs) / 86_400_000;
  const recency = Math.exp(-ageDays / RECENCY_DAYS);
  return 0.06 * (2 * importance - 1) + 0.04 * (2 * confidence - 1) + 0.05 * recency;
}
