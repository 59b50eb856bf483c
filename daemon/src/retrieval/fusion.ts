/**
 * Rank fusion and score adjustment.
 *
 * Normalized reciprocal-rank fusion: an arm contributes (K+1)/(K+rank) for a
 * candidate at 1-based `rank`, so rank 1 scores 1.0; the fused score is the
 * weighted mean over arms (a candidate missing from an arm gets 0 there), so it
 * lies in [0, 1].
 *
 * K = 2 (not the customary 60), full-text weight 1.0, vector weight 0.75 for
 * transformer models and 0.5 for the built-in static model (the vector arm's
 * weight comes from the model in use, VectorSearcher.weight()). Chosen by the
 * protocol in bench/README.md: `bench/locomo.ts --grid` on LoCoMo conversations
 * 0-2 only; K is shared, so it is the K with the best sum of turn R@5 over both
 * model kinds (built-in cairn/minilm-static and all-MiniLM-L6-v2), then each
 * kind's best weight at that K. Re-run after vectors became int8 in the store:
 * selection set (0-2), turn R@5: built-in 0.562, MiniLM 0.574 (weight 1.0:
 * 0.568), full text alone 0.555. With K = 60, rank 1 and rank 6 differ by 8%
 * and the vector arm overturns decisive full-text matches. Conversations 3-4
 * confirm (figures in bench/README.md).
 *
 * Then a bounded adjustment: fused × (1 + a), with
 *   a = 0.06·(2·importance − 1) + 0.04·(2·confidence − 1) + 0.05·recency,
 *   recency = exp(−age_days / 90) of updatedAt,
 * so a ∈ [−0.10, +0.15]: these nudge ties and near-ties, never overturn relevance.
 */
export const RRF_K = 2;
export const FTS_WEIGHT = 1.0;
export const VECTOR_WEIGHT = { transformer: 0.75, builtin: 0.5 } as const;
export const RECENCY_DAYS = 90;

export function rrf(rank: number): number {
  return (RRF_K + 1) / (RRF_K + rank);
}

export function adjustment(importance: number, confidence: number, updatedAtMs: number, now: number): number {
  const ageDays = Math.max(0, now - updatedAtMs) / 86_400_000;
  const recency = Math.exp(-ageDays / RECENCY_DAYS);
  return 0.06 * (2 * importance - 1) + 0.04 * (2 * confidence - 1) + 0.05 * recency;
}
