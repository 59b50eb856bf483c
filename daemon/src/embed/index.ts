/**
 * The daemon's embedding layer. Text in, unit-length Float32Array vectors out, computed in a
 * worker thread so embedding never blocks the event loop.
 *
 * ```ts
 * import { Embedder } from './embed';
 * const embedder = await Embedder.start({ model: 'Xenova/all-MiniLM-L6-v2', allowRemote: true, log });
 * embedder.info;   // { model, configuredModel, dimension, fallbackReason, pooling, maxTokens, ... }
 * const [a, b] = await embedder.embed(['sqlite btree', 'database index']);   // dot(a, b) = cosine
 * await embedder.close();
 * ```
 *
 * Exports
 * - `Embedder.start(opts: EmbedderOptions): Promise<Embedder>`: starts the worker and loads the
 *   model. If the configured model cannot be loaded (offline, not downloaded, downloads off,
 *   broken files, load timeout) it falls back to the built-in model and says why in
 *   `info.fallbackReason` (also passed to `opts.log`). Rejects only if even the built-in model
 *   cannot be loaded, or the worker cannot start.
 * - `embedder.info: EmbedderInfo` (see shared.ts), `embedder.alive: boolean`, `embedder.threadId`.
 * - `embedder.embed(texts: string[]): Promise<Float32Array[]>`: one vector per text, in order,
 *   each its own Float32Array (not views of a shared buffer). Any number of texts per call
 *   (batched inside the worker, similar lengths together); calls may overlap, they are queued.
 *   `embed(texts, { priority: true })` goes ahead of queued calls (a search's query must not wait
 *   behind background indexing; the call being computed is not interrupted).
 *   Rejects with a TypeError for non-string input.
 * - `embedder.scanDuplicates(scan)`: runs a batch of duplicate checks (store/vector-scan.ts) in the worker, over
 *   the vector index's shared arrays, queued with the background embedding requests.
 * - `embedder.embedOne(text)`, `embedder.restart(): Promise<EmbedderInfo>` (new worker, same
 *   options; use after a crash or to retry the configured model), `embedder.close()`,
 *   `embedder.simulateCrash(code?)` (tests).
 * - `prepareText(text, isKnownWord?)`: identifier splitting (`getUserById` -> `get User By Id`,
 *   `snake_case` -> `snake case`), applied in the worker before every model's tokenizer.
 * - `isZeroVector(v)`, `BUILTIN_MODEL_ID` (`cairn/mpnet-static`), `DEFAULT_MODEL_ID`,
 *   `isBuiltinModelId(id)`, `builtinModelPath()`, `resolveWorkerPath(explicit?)`, `modelCacheDir()`.
 *
 * Vectors
 * - L2-normalized: dot product = cosine similarity. Texts with nothing to embed (empty,
 *   whitespace only, or, for the built-in model, only words/punctuation unknown to its
 *   vocabulary) give the ZERO vector (all 0, never NaN): treat it as "no semantic content" and
 *   leave it out of vector search (`isZeroVector`). Any non-finite model output also maps to
 *   the zero vector.
 * - Length limit: `info.maxTokens` tokens per text: sentence-transformers max_seq_length (own or
 *   upstream repository; 256 for all-MiniLM-L6-v2), else the tokenizer's model_max_length, else
 *   512, at most the position embeddings; the built-in model: 512. The rest of a longer text is
 *   ignored. Texts are also cut to 32 characters per allowed token before tokenizing.
 * - Pooling comes from the model's configuration (`modules.json` / `1_Pooling/config.json`,
 *   also looked up in the repository a conversion came from, `_name_or_path`), default mean;
 *   `info.pooling` / `info.poolingSource` say what was used. `opts.pooling` overrides it.
 *
 * Models
 * - `model`: a hub id (transformers.js feature-extraction ONNX model, e.g.
 *   `Xenova/all-MiniLM-L6-v2`, `Xenova/bge-small-en-v1.5`), `builtin` / `cairn/mpnet-static`, or a
 *   path to a model folder. Hub models are looked up in `modelPath/<id>/`, then in the download
 *   cache `cacheDir/<id>/` (default `<cacheDir()>/models`, never node_modules), then downloaded
 *   into the cache if `allowRemote` (from `remoteHost`, default $HF_ENDPOINT or huggingface.co).
 *   A cached model loads offline. Weights: the model config's `transformers.js_config.dtype`,
 *   else `q8` (onnx/model_quantized.onnx), else `fp32`; `opts.dtype` overrides.
 * - The built-in model (`daemon/models/cairn-mpnet-static`, a static model distilled from
 *   all-mpnet-base-v2, see its README) and any other `cairn-static-1` folder run in plain
 *   JavaScript (static-model.ts: tokenize, look up, weighted mean, normalize); transformers.js and
 *   onnxruntime are loaded only for a transformer model.
 *
 * Worker crashes: pending calls reject with an Error naming the exit code; `alive` turns false,
 * `opts.onCrash` is called, and later calls reject until `restart()`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { cacheDir } from '../paths';
import { signature, SIG_WORDS } from '../store/quantize';
import { signatureCentre } from './signature-centre';
import type { ArmHit } from '../store/search-fts';
import type { DuplicateScan, DuplicateScanResult } from '../store/vector-scan';
import {
  BUILTIN_MODEL_DIR,
  DEFAULT_MODEL_ID,
  type EmbedderInfo,
  type FromWorker,
  type ToWorker,
  type WorkerInit,
  type WorkerKnn,
  type WorkerKnnResult,
} from './shared';

export { prepareText } from './prepare';
export { isZeroVector, type PoolingMode } from './pooling';
export { BUILTIN_MODEL_ID, DEFAULT_MODEL_ID, isBuiltinModelId, type EmbedderInfo } from './shared';

export interface EmbedderOptions {
  /** Hub id, `builtin`, or a model folder path. Default `Xenova/all-MiniLM-L6-v2`. */
  model?: string;
  /** Local models folder (`<modelPath>/<model id>/...`), searched before the cache. */
  modelPath?: string;
  /** Download cache for models. Default `<cacheDir()>/models`. */
  cacheDir?: string;
  /** Allow downloading the configured model. Default true. The built-in model never downloads. */
  allowRemote?: boolean;
  /** Hub to download from (a mirror). Default: $HF_ENDPOINT, else https://huggingface.co/. */
  remoteHost?: string;
  /** Folder of the built-in model. Default `builtinModelPath()`. */
  builtinPath?: string;
  /** Receives human-readable messages (fallback reason, worker crash, load notes). */
  log?: (msg: string) => void;
  /** Worker script. Default `resolveWorkerPath()`. */
  workerPath?: string;
  /** transformers.js dtype. Default: the model's `transformers.js_config.dtype`, else q8 (then fp32 if absent). */
  dtype?: string;
  /** onnxruntime intra-op threads. Default 1, thread spinning off (measured, see provider.ts DEFAULT_THREADS); 0: onnxruntime's own defaults. */
  threads?: number;
  /** Force a pooling mode instead of the model's configuration. */
  pooling?: 'cls' | 'mean' | 'max' | 'mean_sqrt_len' | 'weightedmean' | 'lasttoken';
  /** Texts per model call inside the worker (after sorting by length). Default 8 for a transformer, 256 for a static model. */
  batchSize?: number;
  /** Fall back to the built-in model if the configured one takes longer to load. Default 300 000 ms. */
  loadTimeoutMs?: number;
  /** Called when the worker dies unexpectedly. */
  onCrash?: (err: Error) => void;
}

/** The download cache for models: `<cacheDir()>/models` (user cache, never node_modules). */
export function modelCacheDir(): string {
  return path.join(cacheDir(), 'models');
}

function firstExisting(candidates: string[], marker: string): string | null {
  return candidates.find((c) => fs.existsSync(path.join(c, marker))) ?? null;
}

/**
 * Folder of the built-in model. Works from the bundle (`daemon/dist/cairn.js` ->
 * `daemon/models/...`) and from sources (`daemon/src/embed/index.ts` -> `daemon/models/...`).
 */
export function builtinModelPath(): string {
  const candidates = [
    path.join(__dirname, '..', 'models', BUILTIN_MODEL_DIR),
    path.join(__dirname, '..', '..', 'models', BUILTIN_MODEL_DIR),
    path.join(__dirname, 'models', BUILTIN_MODEL_DIR),
  ];
  return firstExisting(candidates, 'config.json') ?? candidates[0];
}

/**
 * The worker script: `explicit` if given; else `embed-worker.js` next to this code (the esbuild
 * bundle: dist/cairn.js + dist/embed-worker.js); else `worker.ts` next to this file (sources run
 * under tsx, e.g. `node --import tsx --test`); else `worker.js` (tsc output).
 */
export function resolveWorkerPath(explicit?: string): string {
  if (explicit) return path.resolve(explicit);
  const candidates = [path.join(__dirname, 'embed-worker.js'), path.join(__dirname, 'worker.ts'), path.join(__dirname, 'worker.js')];
  const found = candidates.find((c) => fs.existsSync(c));
  if (!found) throw new Error(`embedding worker not found (looked for ${candidates.join(', ')}); build the daemon or pass workerPath`);
  return found;
}

/**
 * Starts the worker. A `.ts` worker needs tsx inside the thread: on Node 20, loader hooks
 * registered with `--import tsx` do not reach worker threads (nodejs/node#47747), so a small
 * CommonJS bootstrap registers tsx's require hook there and then loads the worker.
 */
function createWorker(workerPath: string, init: WorkerInit): Worker {
  if (!/\.[cm]?tsx?$/.test(workerPath)) return new Worker(workerPath, { workerData: init });
  let tsxCjs: string;
  try {
    tsxCjs = require.resolve('tsx/cjs', { paths: [__dirname, process.cwd()] });
  } catch {
    throw new Error(
      `the embedding worker ${workerPath} is TypeScript and needs tsx (run under \`node --import tsx\`, or build the daemon)`,
    );
  }
  const bootstrap = `require(${JSON.stringify(tsxCjs)}); require(${JSON.stringify(workerPath)});`;
  return new Worker(bootstrap, { eval: true, workerData: init });
}

interface Pending {
  resolve: (v: Float32Array[], sigs?: Int32Array[]) => void;
  /** For a duplicate scan. */
  scanned?: (r: DuplicateScanResult) => void;
  /** For a knn. */
  nearest?: (r: WorkerKnnResult) => void;
  reject: (e: Error) => void;
}

export class Embedder {
  private worker: Worker | null = null;
  private pending = new Map<number, Pending>();
  private nextId = 1;
  private state: 'starting' | 'ready' | 'crashed' | 'closed' = 'starting';
  private crashError: Error | null = null;
  private _info: EmbedderInfo | null = null;

  private constructor(private readonly opts: EmbedderOptions) {}

  /** Starts the worker and loads the model (falling back to the built-in model). */
  static async start(opts: EmbedderOptions = {}): Promise<Embedder> {
    const e = new Embedder(opts);
    await e.spawn();
    return e;
  }

  get info(): EmbedderInfo {
    if (!this._info) throw new Error('Embedder is not started');
    return this._info;
  }

  /** threadId of the worker thread (never the main thread's 0), or -1 when there is none. */
  get threadId(): number {
    return this.worker?.threadId ?? -1;
  }

  /** True while the worker runs and accepts work. */
  get alive(): boolean {
    return this.state === 'ready';
  }

  private log(msg: string): void {
    this.opts.log?.(msg);
  }

  private async spawn(): Promise<void> {
    const o = this.opts;
    const init: WorkerInit = {
      model: o.model?.trim() || DEFAULT_MODEL_ID,
      modelPath: o.modelPath || undefined,
      cacheDir: o.cacheDir || modelCacheDir(),
      allowRemote: o.allowRemote ?? true,
      remoteHost: o.remoteHost,
      builtinPath: o.builtinPath || builtinModelPath(),
      dtype: o.dtype,
      threads: o.threads,
      pooling: o.pooling,
      batchSize: o.batchSize,
      loadTimeoutMs: o.loadTimeoutMs,
    };
    const workerPath = resolveWorkerPath(o.workerPath);
    this.state = 'starting';
    this.crashError = null;
    const worker = createWorker(workerPath, init);
    this.worker = worker;

    await new Promise<void>((resolve, reject) => {
      let settled = false;
      let lastError: Error | null = null;
      const settle = (err: Error | null) => {
        if (settled) return;
        settled = true;
        if (err) reject(err);
        else resolve();
      };
      worker.on('message', (msg: FromWorker) => {
        switch (msg.type) {
          case 'ready':
            this._info = { ...msg.info, configuredModel: init.model };
            this.state = 'ready';
            worker.unref();
            settle(null);
            break;
          case 'fatal':
            settle(new Error(`embedding model could not be loaded: ${msg.message}`));
            void worker.terminate();
            break;
          case 'log':
            this.log(msg.message);
            break;
          case 'result': {
            const p = this.take(msg.id);
            if (!p) break;
            const all = new Float32Array(msg.data);
            const out: Float32Array[] = [];
            for (let i = 0; i < msg.count; i++) out.push(all.slice(i * msg.dimension, (i + 1) * msg.dimension));
            const sigs = msg.sigs ? new Int32Array(msg.sigs) : null;
            p.resolve(out, sigs ? out.map((_, i) => sigs.slice(i * SIG_WORDS, (i + 1) * SIG_WORDS)) : undefined);
            break;
          }
          case 'scanned':
            this.take(msg.id)?.scanned?.(msg.result);
            break;
          case 'nearest': {
            const hits: ArmHit[] = [];
            for (let i = 0; i < msg.rowids.length; i++) hits.push({ rowid: msg.rowids[i], score: msg.scores[i] });
            this.take(msg.id)?.nearest?.({
              hits,
              spare: msg.admitted ? new Int32Array(msg.admitted) : null,
              query: msg.query,
              reranked: msg.reranked,
            });
            break;
          }
          case 'error': {
            this.take(msg.id)?.reject(new Error(`embedding failed: ${msg.message}`));
            break;
          }
          case 'closed':
            break;
        }
      });
      worker.on('error', (err) => {
        lastError = err;
        this.log(`embedding worker error: ${err.message}`);
      });
      worker.on('exit', (code) => {
        if (this.worker === worker) this.worker = null;
        const expected = this.state === 'closed';
        const err = new Error(
          expected
            ? 'Embedder closed'
            : `embedding worker exited unexpectedly (exit code ${code})${lastError ? `: ${lastError.message}` : ''}`,
        );
        if (!settled) {
          settle(
            lastError ? new Error(`embedding worker failed to start (${workerPath}): ${lastError.message}`, { cause: lastError }) : err,
          );
        }
        if (!expected && this.state !== 'starting') {
          this.state = 'crashed';
          this.crashError = err;
          this.log(err.message);
          this.opts.onCrash?.(err);
        } else if (!expected) {
          this.state = 'crashed';
          this.crashError = err;
        }
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      });
    });
  }

  /** Why a scan cannot be sent: the worker crashed, or the Embedder is closed. */
  private gone(): Error {
    return new Error(
      this.state === 'crashed' ? `the embedding worker crashed (${this.crashError?.message}); call restart()` : 'Embedder closed',
    );
  }

  private take(id: number): Pending | undefined {
    const p = this.pending.get(id);
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker?.unref();
    return p;
  }

  /** Embeds texts: one unit-length (or zero, see above) vector per text, in order. */
  embed(texts: string[], opts?: { priority?: boolean }): Promise<Float32Array[]> {
    return this.request(texts, opts?.priority ?? false, false).then((r) => r.vectors);
  }

  /**
   * Embeds texts and computes each vector's SimHash (store/quantize.ts `signature`) in the worker too, so the
   * indexer's event loop does not (256 projections of every vector: about a tenth of a millisecond each).
   */
  embedWithSignatures(texts: string[], centre: Float32Array | null = null): Promise<{ vectors: Float32Array[]; sigs: Int32Array[] }> {
    return this.request(texts, false, true, centre).then((r) => ({
      vectors: r.vectors,
      sigs: r.sigs ?? r.vectors.map((v) => signature(v, centre)),
    }));
  }

  /** What a new vector table's signatures are centred on: the mean of this model's embeddings of generic notes. */
  signatureCentre(): Promise<Float32Array | null> {
    return signatureCentre(this);
  }

  /**
   * Run duplicate checks (store/vector-scan.ts) in the worker, queued behind the embedding requests before it:
   * the vector index's arrays are shared memory, so only the checks' own vectors and slot lists are sent
   * (transferred, not copied; `scan` must not be used after the call).
   */
  scanDuplicates(scan: DuplicateScan): Promise<DuplicateScanResult> {
    if (this.state !== 'ready' || !this.worker) return Promise.reject(this.gone());
    const id = this.nextId++;
    const worker = this.worker;
    return new Promise<DuplicateScanResult>((resolve, reject) => {
      this.pending.set(id, { resolve: () => reject(new Error('duplicate scan answered with vectors')), scanned: resolve, reject });
      worker.ref();
      const msg: ToWorker = { type: 'scan', id, scan };
      worker.postMessage(msg, [
        scan.vectors.buffer,
        scan.sigs.buffer,
        scan.group.buffer,
        scan.exclude.buffer,
        scan.starts.buffer,
        scan.slots.buffer,
      ] as ArrayBuffer[]);
    });
  }

  /**
   * A search's vector arm in the worker: embed `text` and rank `knn.admitted` by it (store/vector-scan.ts
   * queryNearest), ahead of queued background work, so the event loop runs the full-text arm meanwhile. The
   * admitted slots are transferred (`knn.admitted` must not be used after the call) unless they are shared memory
   * (a cached set); the index's arrays are shared memory. The hits are exactly what VectorTables.knn gives on the same admitted set; `spare` is the
   * admitted slots' buffer given back, for the next search's admitted set.
   */
  nearest(text: string, knn: WorkerKnn): Promise<WorkerKnnResult> {
    if (typeof text !== 'string') return Promise.reject(new TypeError('nearest expects a string'));
    if (this.state !== 'ready' || !this.worker) return Promise.reject(this.gone());
    const id = this.nextId++;
    const worker = this.worker;
    return new Promise<WorkerKnnResult>((resolve, reject) => {
      this.pending.set(id, { resolve: () => reject(new Error('knn answered with vectors')), nearest: resolve, reject });
      worker.ref();
      const msg: ToWorker = { type: 'knn', id, text, knn };
      // A cached admitted set is shared memory (read where it is); a copy is transferred.
      const own = knn.admitted.buffer instanceof SharedArrayBuffer ? [] : [knn.admitted.buffer as ArrayBuffer];
      worker.postMessage(msg, own);
    });
  }

  private request(
    texts: string[],
    priority: boolean,
    signatures: boolean,
    centre: Float32Array | null = null,
  ): Promise<{ vectors: Float32Array[]; sigs?: Int32Array[] }> {
    if (!Array.isArray(texts)) return Promise.reject(new TypeError('embed expects an array of strings'));
    const bad = texts.findIndex((t) => typeof t !== 'string');
    if (bad >= 0)
      return Promise.reject(new TypeError(`embed expects strings (item ${bad} is ${texts[bad] === null ? 'null' : typeof texts[bad]})`));
    if (this.state !== 'ready' || !this.worker) {
      const why =
        this.state === 'crashed'
          ? `the embedding worker crashed (${this.crashError?.message}); call restart()`
          : this.state === 'closed'
            ? 'Embedder closed'
            : 'Embedder is not started';
      return Promise.reject(new Error(why));
    }
    if (texts.length === 0) return Promise.resolve({ vectors: [], sigs: [] });
    const id = this.nextId++;
    const worker = this.worker;
    return new Promise<{ vectors: Float32Array[]; sigs?: Int32Array[] }>((resolve, reject) => {
      this.pending.set(id, { resolve: (vectors, sigs) => resolve({ vectors, sigs }), reject });
      worker.ref();
      const msg: ToWorker = {
        type: 'embed',
        id,
        texts,
        ...(priority ? { priority: true } : {}),
        ...(signatures ? { signatures: true, ...(centre ? { centre } : {}) } : {}),
      };
      worker.postMessage(msg);
    });
  }

  async embedOne(text: string): Promise<Float32Array> {
    return (await this.embed([text]))[0];
  }

  /** Replaces the worker (after a crash, or to retry the configured model). Returns the new info. */
  async restart(): Promise<EmbedderInfo> {
    await this.stopWorker();
    await this.spawn();
    return this.info;
  }

  /** Test hook: makes the worker thread exit with `code`, as a crash would. */
  simulateCrash(code = 70): void {
    const msg: ToWorker = { type: 'crash', code };
    this.worker?.postMessage(msg);
  }

  /** Stops the worker. Pending calls reject with "Embedder closed". */
  async close(): Promise<void> {
    await this.stopWorker();
  }

  private async stopWorker(): Promise<void> {
    const worker = this.worker;
    this.state = 'closed';
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    const msg: ToWorker = { type: 'close' };
    worker.postMessage(msg);
    const timer = setTimeout(() => void worker.terminate(), 2000);
    await exited;
    clearTimeout(timer);
  }
}
