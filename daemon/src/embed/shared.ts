/**
 * Types and constants shared by the Embedder client (main thread) and the embedding worker.
 * No runtime dependencies.
 */
import type { ProviderOptions } from './provider';
import type { ArmHit } from '../store/search-fts';
import type { DuplicateScan, DuplicateScanResult, SlotArrays } from '../store/vector-scan';
import type { StoredAt } from '../store/vector-rerank';

/** Model id of the built-in offline model (daemon/models/cairn-mpnet-static: static, distilled from all-mpnet-base-v2). */
export const BUILTIN_MODEL_ID = 'cairn/mpnet-static';
/** Folder name of the built-in model under daemon/models. */
export const BUILTIN_MODEL_DIR = 'cairn-mpnet-static';
/**
 * Ids of earlier built-in models. Configuring one of them still means "the built-in model"; a store whose
 * vectors were made by one is re-embedded into the current built-in model by the usual model-change path
 * (the vector index is named after the model id).
 */
export const FORMER_BUILTIN_MODEL_IDS: readonly string[] = ['cairn/minilm-static', 'cairn-minilm-static'];
/** Default model for users (downloaded on first use when remote loading is allowed). */
export const DEFAULT_MODEL_ID = 'Xenova/all-MiniLM-L6-v2';

/** `builtin`, `cairn/mpnet-static`, `cairn-mpnet-static` and the former built-in ids all name the built-in model. */
export function isBuiltinModelId(model: string | undefined): boolean {
  const m = (model ?? '').trim().toLowerCase();
  return m === 'builtin' || m === BUILTIN_MODEL_ID || m === BUILTIN_MODEL_DIR || FORMER_BUILTIN_MODEL_IDS.includes(m);
}

export interface EmbedderInfo {
  /** Model id in use, after any fallback (`cairn/mpnet-static` for the built-in model). */
  model: string;
  /** Model id that was asked for. */
  configuredModel: string;
  /** Vector length. */
  dimension: number;
  /** Why the configured model is not in use (a sentence for status and logs), else null. */
  fallbackReason: string | null;
  /** True when the built-in model is in use. */
  builtin: boolean;
  /** Pooling in use: `mean`, `cls`, `max`, `mean_sqrt_len`, `weightedmean`, `lasttoken`, or several joined by `+`. */
  pooling: string;
  /** Where the pooling came from: `<repo>/<file>` of the model's configuration, `option`, or `default` (mean). */
  poolingSource: string;
  /** Tokens per text the model sees; longer texts are truncated. */
  maxTokens: number;
  /** transformers.js dtype of the loaded weights (`q8` = onnx/model_quantized.onnx); `int8` for static models. */
  dtype: string;
  /** Time to load the model in the worker, ms. */
  loadMs: number;
}

/**
 * Options the worker needs to load a model: the provider's options as plain data (they cross the
 * thread boundary, so no log callback, and pooling as a string the worker checks).
 */
export type WorkerInit = Omit<ProviderOptions, 'log' | 'pooling'> & { pooling?: string };

/** Main thread -> worker. */
export type ToWorker =
  /**
   * `signatures`: also compute each vector's SimHash (store/quantize.ts), so the daemon's event loop does not; of the
   * vector less `centre` when the index has one (quantize.ts signatureInput).
   */
  | { type: 'embed'; id: number; texts: string[]; priority?: boolean; signatures?: boolean; centre?: Float32Array }
  /**
   * Score duplicate checks (store/vector-scan.ts runDuplicateScan) over the vector index's shared arrays, queued
   * with the background embedding requests, so the daemon's event loop does not.
   */
  | { type: 'scan'; id: number; scan: DuplicateScan }
  /**
   * A search's vector arm: embed `text` and rank the `admitted` slots of the index's shared arrays by it
   * (store/vector-scan.ts queryNearest), ahead of queued background work, while the event loop runs the full-text arm.
   */
  | { type: 'knn'; id: number; text: string; knn: WorkerKnn }
  /** Exit the worker thread with `code` at once (tests use it to simulate a crash). */
  | { type: 'crash'; code: number }
  | { type: 'close' };

/** Worker -> main thread. */
export type FromWorker =
  | { type: 'ready'; info: Omit<EmbedderInfo, 'configuredModel'> }
  | { type: 'fatal'; message: string }
  /** `data` holds `count` vectors of `dimension` floats back to back (transferred, not copied). */
  /** `sigs`, when asked for: `count` SimHashes of SIG_WORDS int32 words back to back. */
  | { type: 'result'; id: number; count: number; dimension: number; data: ArrayBuffer; sigs?: ArrayBuffer }
  | { type: 'scanned'; id: number; result: DuplicateScanResult }
  /**
   * A knn's hits, best first (`rowids[i]` scored `scores[i]`); none when the model knows no word of the text.
   * `admitted`: the admitted slots' buffer, given back for the next search (no 400 KB buffer per query at 100k);
   * null when they were shared memory (a cached set, never transferred).
   */
  | {
      type: 'nearest';
      id: number;
      rowids: Int32Array;
      scores: Float64Array;
      admitted: ArrayBuffer | null;
      query: Float32Array;
      /** Ranked again by the stored int8 vectors (knn.stored), all of them, not cut to the limit. */
      reranked: boolean;
    }
  | { type: 'error'; id: number; message: string }
  | { type: 'log'; message: string }
  | { type: 'closed' };

/** What a knn answers: its hits, best first, and the admitted slots' buffer given back (`spare`). */
export interface WorkerKnnResult {
  hits: ArmHit[];
  /** The admitted slots' buffer given back (null: they were a cached set in shared memory). */
  spare: Int32Array | null;
  /** The query's embedding (a compact index's hits are ranked again with it: VectorTables.rerank). */
  query: Float32Array;
  /** The hits were ranked again by the stored int8 vectors in the worker (every one, best first; not cut to the limit). */
  reranked: boolean;
}

/**
 * A search's KNN for the worker: what VectorTables.prepareKnn decided (the admitted slots are transferred, or shared
 * when they are a cached set).
 */
export interface WorkerKnn {
  arrays: SlotArrays;
  admitted: Int32Array;
  limit: number;
  exactMax: number;
  candidates: number;
  /** A compact index's stored int8 vectors: the worker ranks the hits again from there (store/vector-rerank.ts). */
  stored?: StoredAt | null;
}
