/**
 * The vector arm's tuning: when a KNN or a duplicate check is exact and how many candidates it takes by Hamming
 * distance otherwise, how a large index loads, and when the index in memory turns compact (vectors.ts).
 */

/**
 * Admitted vectors up to which the vector arm is exact. At 100k memories (bench/sidebyside.ts workload) a
 * 16k-memory project scored every vector exactly (~4M multiply-adds, the slowest scoped queries); from 4096 on it
 * takes SIMHASH_CANDIDATES by Hamming distance first: the arm's top 100 kept 99.6% of the exact top 100 over the
 * 200 scoped queries, and hybrid hit@5/@25 of the query's source memory was unchanged. LoCoMo's conversations
 * (under 1,000 memories each) stay exact, so their figures cannot move.
 */
export const EXACT_MAX = 4096;
/**
 * Candidates taken by Hamming distance before exact rescoring, above EXACT_MAX. 5120 keeps 86.0% of the exact
 * top 100 on the whole 100k store (92.7% of the top 25); the previous selection (4096 plus every slot tied at the
 * cut-off distance, ~5,000) kept 85.1% (92.2%).
 */
export const SIMHASH_CANDIDATES = 5120;
/**
 * Above SIMHASH_CANDIDATES / CANDIDATE_SHARE admitted vectors (102,400), this share of them is taken by Hamming
 * distance instead: the share 5,120 is of the 100k store, so a larger store keeps its recall. Recall@10 of the
 * whole-store arm against exact at 100k (bench/vector-recall.ts) was 0.951 with 5.1% of the vectors as candidates,
 * 0.851 with 1.6% and 0.775 with 0.5% (what a fixed 5,120 is of a million); the arm's time barely moved (the
 * Hamming pass over every admitted vector is most of it, the exact scores of the candidates run in SIMD).
 */
export const CANDIDATE_SHARE = 1 / 20;
/** A duplicate check scores every visible memory of a namespace exactly up to this many. */
export const DUP_EXACT_MAX = 256;
/**
 * Above DUP_EXACT_MAX, a duplicate check scores exactly the memories nearest by Hamming distance, this many: a
 * possible duplicate (cosine ≥ ~0.66, expected Hamming distance ≤ ~70 of 256 bits) is missed only when this many
 * memories of its namespace are nearer still, and then the ones reported are at least as similar.
 */
export const DUP_CANDIDATES = 128;
/**
 * Of a duplicate check's candidates, this many (ranked by their 4-bit vectors) are ranked again by the int8 vectors
 * read from disk when the index is compact (above COMPACT_ABOVE): the check reports at most DUPLICATE_LIMIT (5).
 * Searches re-rank rerankPool(limit), at least 64; for duplicate checks at 1M (bench/duplicate-rerank.ts, 2,000
 * checks spread over the store) 32 reported exactly what 64 did, for half the event loop's time (0.319 → 0.156 ms a
 * check); 16 lost 0.4% of them, 8 lost 7%.
 */
export const DUP_RERANK = 32;
/**
 * Vectors read per slice when the index is loaded in the background (loadInSlices): about 10-20 ms of the event
 * loop each, so requests wait at most that long while a million vectors load.
 */
export const LOAD_SLICE = 8192;
/**
 * Vectors above which the index in memory is compact: 4-bit vectors (D/2 bytes) beside the signatures instead of
 * int8 ones (D bytes), each scan's best rerankPool(limit) ranked again by the int8 vectors read from disk
 * (rerank). At a million 256-d vectors that is 122 MiB less resident, for one indexed read of a few hundred rows
 * per search. At or below it (every store up to the 100k side-by-side workload) the index is int8 as before and
 * answers exactly as before. An index that grows past it while loaded turns compact in place.
 */
export const COMPACT_ABOVE = 131_072;
/**
 * LSH buckets for the duplicate checks above DUP_EXACT_MAX (store/vector-lsh.ts): when an index keeps them
 * (VectorTables.dupBands), a check's candidates are the memories of its namespace that share a band of
 * its SimHash (DUP_FLIPS 1: or are one bit away in a band), ranked as before (exact up to DUP_EXACT_MAX, else the
 * DUP_CANDIDATES nearest by Hamming distance). Off by default (DUP_BANDS null): on the side-by-side corpus at 100k
 * and 300k (bench/duplicate-lsh.ts, figures in bench/README.md) no shape was both cheaper than the whole namespace's
 * SIMD Hamming pass and as good at finding planted duplicates. At the models' threshold (~0.66 cosine, ~70 of 256
 * bits) the corpus's unrelated memories of one project are as near as real duplicates, so the buckets that find
 * those hold most of the namespace, and listing them costs the event loop more than the pass costs the worker.
 */
/** The shape that kept most of today's hits (0.975 with DUP_FLIPS 1 at 100k, at five times today's CPU): the tests' one. */
export const DUP_LSH_SHAPE = { bits: 16, bands: 16 } as const;
/** The shape an index loads with (VectorTables.dupBands): none. */
export const DUP_BANDS: { bits: number; bands: number } | null = null;
export const DUP_FLIPS = 1;
