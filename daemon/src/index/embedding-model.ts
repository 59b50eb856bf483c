/**
 * What the indexer asks of an embedding model (the Embedder and its worker, or a test's stand-in), the text a
 * memory's vector is computed from, and the host the indexer's pass functions (embed-rows.ts, duplicate-check.ts)
 * read it through.
 */
import type { WorkerKnn, WorkerKnnResult } from '../embed/shared';
import type { EmbedRow } from '../store/index-feed';
import type { Store } from '../store/store';
import type { DuplicateScan, DuplicateScanResult } from '../store/vector-scan';
import type { VecModel } from '../store/vectors';

export interface EmbeddingModel {
  readonly info: { model: string; configuredModel: string; dimension: number; fallbackReason: string | null };
  embed(texts: string[], opts?: { priority?: boolean }): Promise<Float32Array[]>;
  /** Vectors with their SimHashes computed off the event loop (the Embedder's worker); embed() is used without it. */
  embedWithSignatures?(texts: string[], centre?: Float32Array | null): Promise<{ vectors: Float32Array[]; sigs: Int32Array[] }>;
  /**
   * What a new vector table's signatures are centred on (embed/signature-centre.ts), null when it cannot be worked out;
   * without it a new table's signatures are plain.
   */
  signatureCentre?(): Promise<Float32Array | null>;
  /** Duplicate checks scored off the event loop (the Embedder's worker); run on this thread without it. */
  scanDuplicates?(scan: DuplicateScan): Promise<DuplicateScanResult>;
  /** A search's query embedded and ranked off the event loop (the Embedder's worker); embed() + knn here without it. */
  nearest?(text: string, knn: WorkerKnn): Promise<WorkerKnnResult>;
  close(): Promise<void>;
}

/** The text a memory's vector is computed from. */
export function embeddingText(m: { key: string; value: string; tags: string[] | string }): string {
  const tags = Array.isArray(m.tags) ? m.tags : (JSON.parse(m.tags) as string[]);
  return `${m.key.replace(/[._:/-]+/g, ' ')}\n${tags.join(' ')}\n${m.value}`;
}

/** A memory just embedded: its vector and (when stored) the vector's SimHash. */
export type Embedded = { row: EmbedRow; vector: Float32Array; sig?: Int32Array };

/** What a pass of the indexer (embedRows, checkDuplicates) reads of the Indexer, live. */
export interface IndexerHost {
  readonly store: Store;
  log(m: string): void;
  /** The model in use now: a pass begun with another one ends. */
  model(): VecModel | null;
  embedder(): EmbeddingModel | null;
  /** The model and worker whose vectors serve the vector arm of searches now (Indexer.serving). */
  serving(): { model: VecModel; embedder: EmbeddingModel } | null;
  /** The indexer is stopping (the model may be closed under a pass). */
  stopped(): boolean;
  /** Whether a search was served within QUIET_MS. */
  searching(): boolean;
  /** Remove the vectors a stopped pass stored for these memories (their changes stay past the watermark). */
  rollBack(rowids: number[]): void;
}
