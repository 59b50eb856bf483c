/**
 * Rank fusion and score adjustment.
 *
 * Normalized reciprocal-rank fusion: an arm contributes (K+1)/(K+rank) for a
 * candidate at 1-based `rank`, so rank 1 scores 1.0; the fused score is the
 * weighted mean over arms (a candidate missing from an arm gets 0 there), so it
 * lies in [0, 1]. K = 5 (not the customary 60): with K = 60, rank 1 and rank 6
 * differ by 8% and any vector-arm signal overturns a decisive full-text match;
 * measured on LoCoMo (bench/locomo.ts), K = 5 ranks best.
 *
 * Arm weights: full text 1.0; vector 1.0 for transformer models, 0.5 for the
 * built-in static word-vector model, whose ranking is weaker (LoCoMo turn R@5:
 * vector alone 0.36 vs full text 0.56) — the vector arm's weight comes from
 * the model in use (VectorSearcher.weight()).
 *
 * Then a bounded adjustment: fused × (1 + a), with
 *   a = 0.06·(2·importance − 1) + 0.04·(2·confidence − 1) + 0.05·recency,
 *   recency = exp(−age_days / 90) of updatedAt,
 * so a ∈ [−0.10, +0.15]: these nudge ties and near-ties, never overturn relevance.
 */
export const RRF_K = 5;
export const FTS_WEIGHT = 1.0;
export const VECTOR_WEIGHT = { transformer: 1.0, builtin: 0.5 } as const;
export const RECENCY_DAYS = 90;

export function rrf(rank: number): number {
  return (RRF_K + 1) / (RRF_K + rank);
}

export function adjustment(importance: number, confidence: number, updatedAtMs: number, now: number): number {
  const ageDays = Math.max(0, now - updatedAtMs) / 86_400_000;
  const recency = Math.exp(-ageDays / RECENCY_DAYS);
  return 0.06 * (2 * importance - 1) + 0.04 * (2 * confidence - 1) + 0.05 * recency;
}
