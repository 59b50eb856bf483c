/**
 * Embedding providers, run inside the embedding worker.
 *
 * `TransformersProvider` loads any transformers.js feature-extraction ONNX model: a Hugging Face
 * hub id (downloaded once into the user cache), a model under a local models folder, or a model
 * folder path. transformers.js (and onnxruntime) is loaded only then, on first use.
 * `StaticProvider` (static-model.ts) runs static models such as the built-in one in plain
 * JavaScript, without any neural runtime. `loadWithFallback` falls back to the built-in model
 * when the configured one cannot be loaded.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { StaticProvider, staticConfigOf } from './static-model';
import {
  normalizeInPlace,
  parseModulesJson,
  parsePoolingConfig,
  pool,
  poolingName,
  POOLING_MODES,
  type PoolingMode,
  type PoolingSpec,
} from './pooling';
import { isBlank, prepareText } from './prepare';
import { BUILTIN_MODEL_ID, isBuiltinModelId, type EmbedderInfo } from './shared';
import { readEnv } from '../protocol/settings';
import { withTimeout } from '../wait';

export interface EmbeddingProvider {
  readonly info: Omit<EmbedderInfo, 'configuredModel' | 'fallbackReason'>;
  /** Unit-length vectors (or all zeros for texts with nothing to embed), one per text. */
  embed(texts: string[]): Promise<Float32Array[]>;
  dispose(): Promise<void>;
}

export interface ProviderOptions {
  /** Hub id (`Xenova/all-MiniLM-L6-v2`), `builtin`, or a path to a model folder. */
  model: string;
  /** Folder holding local models as `<modelPath>/<model id>/...`. */
  modelPath?: string;
  /** Download cache for hub models (`<cacheDir>/<model id>/...`). */
  cacheDir: string;
  allowRemote: boolean;
  /** Hub to download from. Default: $HF_ENDPOINT, else transformers.js's (https://huggingface.co/). */
  remoteHost?: string;
  /** Folder of the built-in model. */
  builtinPath: string;
  /** transformers.js dtype (`q8`, `fp32`, ...). Default: the model config's, else `q8` falling back to `fp32`. */
  dtype?: string;
  /**
   * onnxruntime intra-op threads. Default DEFAULT_THREADS (1), with thread spinning off; 0 leaves
   * every session option to onnxruntime (one spinning thread per core: the behaviour before the
   * default was measured, kept for the benchmark's comparison).
   */
  threads?: number;
  /** Overrides the pooling read from the model's configuration. */
  pooling?: PoolingMode;
  /** Texts per model call (after sorting by length). Default TRANSFORMER_BATCH (static models: 256). */
  batchSize?: number;
  /** Give up loading (and fall back) after this long. Default 300 000 ms. */
  loadTimeoutMs?: number;
  log?: (msg: string) => void;
}

/**
 * onnxruntime intra-op threads for a transformer model, chosen by measurement (bench/README.md,
 * "Transformer speed"): on 2 cores shared with the daemon's main thread, one thread without
 * spinning embedded 2-3x more memories per CPU-second than onnxruntime's default (a spinning
 * thread per core, which burns a core while waiting), at equal or better wall-clock speed.
 */
export const DEFAULT_THREADS = 1;
/**
 * Texts per model call for a transformer model (after sorting by length). Larger batches pad more
 * and leave the CPU cache; per CPU-second, 8 beat 32 (bench/README.md, "Transformer speed").
 */
export const TRANSFORMER_BATCH = 8;

/** onnxruntime session options for `threads` (see ProviderOptions.threads). */
export function sessionOptions(threads: number | undefined): Record<string, unknown> | undefined {
  const n = threads ?? DEFAULT_THREADS;
  if (n === 0) return undefined;
  if (!Number.isInteger(n) || n < 0) throw new Error(`threads must be a whole number >= 0 (got ${threads})`);
  const noSpin = { allow_spinning: '0' };
  return { intraOpNumThreads: n, interOpNumThreads: 1, extra: { session: { intra_op: noSpin, inter_op: noSpin } } };
}

/** Upper bound for any model's token limit (models declaring 1e30 and the like). */
const MAX_TOKENS_CAP = 8192;
/** Characters kept per text before tokenizing, per allowed token (bounds tokenizer work on huge inputs). */
const CHARS_PER_TOKEN_CAP = 32;

interface Located {
  /** Id handed to transformers.js (a hub id, or the folder's base name under `root`). */
  id: string;
  /** Value for env.localModelPath. */
  root: string;
  /** The model's folder when it is local (built-in, path, or under modelPath/cache). */
  dir: string | null;
  remote: boolean;
  builtin: boolean;
}

// Minimal shapes of the transformers.js objects used here (its typings are very wide).
interface TensorLike {
  data: ArrayLike<number | bigint>;
  dims: number[];
  type?: string;
  to?(type: string): TensorLike;
}
interface TokenizerLike {
  (texts: string[], opts: { padding: boolean; truncation: boolean; max_length: number }): Record<string, TensorLike>;
  get_vocab?(): Map<string, number>;
  model_max_length?: number;
}
interface ExtractorLike {
  tokenizer: TokenizerLike;
  model: ((inputs: Record<string, TensorLike>) => Promise<Record<string, TensorLike>>) & { dispose?: () => Promise<unknown> };
  dispose?: () => Promise<unknown>;
}

function locate(opts: ProviderOptions, builtin: boolean): Located {
  if (builtin) {
    const dir = path.resolve(opts.builtinPath);
    return { id: path.basename(dir), root: path.dirname(dir), dir, remote: false, builtin: true };
  }
  const m = opts.model;
  const looksLikePath = path.isAbsolute(m) || m.startsWith('./') || m.startsWith('../') || m.startsWith('~') || m.includes('\\');
  if (looksLikePath || (fs.existsSync(path.join(m, 'config.json')) && !/^[\w.-]+\/[\w.-]+$/.test(m))) {
    const dir = path.resolve(m.startsWith('~') ? path.join(readEnv('HOME') ?? '', m.slice(1)) : m);
    return { id: path.basename(dir), root: path.dirname(dir), dir, remote: false, builtin: false };
  }
  const roots = [opts.modelPath, opts.cacheDir].filter((r): r is string => !!r);
  const local = roots.find((r) => fs.existsSync(path.join(r, m, 'config.json')));
  const root = opts.modelPath || opts.cacheDir;
  return { id: m, root, dir: local ? path.join(local, m) : null, remote: opts.allowRemote, builtin: false };
}

type Transformers = typeof import('@huggingface/transformers');
let transformersModule: Transformers | null = null;
let DEFAULT_REMOTE_HOST = 'https://huggingface.co/';
/** transformers.js, loaded on first use (a daemon on the built-in static model never loads it). */
function transformers(): Transformers {
  if (!transformersModule) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    transformersModule = require('@huggingface/transformers') as Transformers;
    DEFAULT_REMOTE_HOST = transformersModule.env.remoteHost;
  }
  return transformersModule;
}

function remoteHost(opts: Pick<ProviderOptions, 'remoteHost'>): string {
  const host = opts.remoteHost || readEnv('HF_ENDPOINT') || DEFAULT_REMOTE_HOST;
  return host.endsWith('/') ? host : host + '/';
}

/** Throws a network error ("fetch failed ...") when the hub cannot be reached at all; any HTTP answer will do. */
async function probeHub(opts: Pick<ProviderOptions, 'remoteHost'>, repo: string): Promise<void> {
  const url = `${remoteHost(opts)}${repo}/resolve/main/config.json`;
  try {
    const res = await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(15_000) });
    await res.body?.cancel();
  } catch (err) {
    const e = err as { message?: string; cause?: { code?: string; message?: string } };
    throw new Error(`fetch failed: ${url} (${e.cause?.code ?? e.cause?.message ?? e.message ?? String(err)})`);
  }
}

function readJsonFile(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * A JSON file of a model: from its local folder, the models folder, the download cache, or
 * (remote allowed) the hub, in which case it is saved in the cache for offline starts.
 * Null when absent.
 */
async function modelJson(opts: ProviderOptions, loc: Located, repo: string, file: string): Promise<unknown> {
  const local = repo === loc.id && loc.dir ? [path.join(loc.dir, file)] : [];
  for (const root of [opts.modelPath, opts.cacheDir]) if (root) local.push(path.join(root, repo, file));
  for (const f of local) {
    if (fs.existsSync(f)) return readJsonFile(f);
  }
  if (!loc.remote || !/^[\w.-]+(\/[\w.-]+)?$/.test(repo)) return null;
  // files the hub answered 404 for are remembered, so later starts do not ask again
  const absentList = path.join(opts.cacheDir, repo, '.cairn-absent.json');
  const absent = (readJsonFile(absentList) as string[] | null) ?? [];
  if (Array.isArray(absent) && absent.includes(file)) return null;
  const url = remoteHost(opts) + transformers().env.remotePathTemplate.replaceAll('{model}', repo).replaceAll('{revision}', 'main') + file;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(15_000) });
    if (res.status === 404 || res.status === 401) {
      fs.mkdirSync(path.dirname(absentList), { recursive: true });
      fs.writeFileSync(absentList, JSON.stringify([...(Array.isArray(absent) ? absent : []), file]));
      return null;
    }
    if (res.status !== 200) return null;
    const text = await res.text();
    const json = JSON.parse(text);
    const dest = path.join(opts.cacheDir, repo, file);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.writeFileSync(dest, text);
    return json;
  } catch {
    return null;
  }
}

/** The model's repository, then the one it was converted from (`_name_or_path`), if any. */
function sourceRepos(loc: Located, config: Record<string, unknown>): string[] {
  const upstream = typeof config._name_or_path === 'string' ? config._name_or_path : '';
  return /^[\w.-]+\/[\w.-]+$/.test(upstream) && upstream !== loc.id ? [loc.id, upstream] : [loc.id];
}

/**
 * Pooling from the model's configuration: sentence-transformers `modules.json` (naming the
 * Pooling module's folder) or `1_Pooling/config.json`, in the model's own repository, else in
 * the repository it was converted from (`_name_or_path` in config.json, as ONNX conversions
 * such as Xenova/* often omit these files). Default: mean.
 */
async function resolvePooling(opts: ProviderOptions, loc: Located, config: Record<string, unknown>): Promise<PoolingSpec> {
  if (opts.pooling) {
    if (!POOLING_MODES.includes(opts.pooling)) throw new Error(`unknown pooling "${opts.pooling}" (one of ${POOLING_MODES.join(', ')})`);
    return { modes: [opts.pooling], source: 'option' };
  }
  for (const repo of sourceRepos(loc, config)) {
    const modules = parseModulesJson(await modelJson(opts, loc, repo, 'modules.json'));
    const poolDir = modules?.poolingPath ?? '1_Pooling';
    const file = `${poolDir}/config.json`;
    const modes = parsePoolingConfig(await modelJson(opts, loc, repo, file));
    if (modes) return { modes, source: `${repo}/${file}` };
  }
  return { modes: ['mean'], source: 'default' };
}

/**
 * Token limit: sentence-transformers `sentence_bert_config.json` max_seq_length (own or upstream
 * repository), else the tokenizer's model_max_length, else 512; never more than the model's
 * position embeddings, and at most MAX_TOKENS_CAP.
 */
async function resolveMaxTokens(
  opts: ProviderOptions,
  loc: Located,
  config: Record<string, unknown>,
  tokenizer: TokenizerLike,
): Promise<number> {
  let st: { max_seq_length?: unknown } | null = null;
  for (const repo of sourceRepos(loc, config)) {
    st = (await modelJson(opts, loc, repo, 'sentence_bert_config.json')) as { max_seq_length?: unknown } | null;
    if (st) break;
  }
  const candidates = [st?.max_seq_length, tokenizer.model_max_length, 512];
  let max = candidates.find((n): n is number => typeof n === 'number' && Number.isFinite(n) && n > 0) ?? 512;
  const positions = config.max_position_embeddings;
  if (typeof positions === 'number' && positions > 0 && !(config as { cairn?: unknown }).cairn) max = Math.min(max, positions);
  return Math.min(Math.floor(max), MAX_TOKENS_CAP);
}

/** The model is not on disk and may not be downloaded. */
export class ModelNotLocalError extends Error {
  constructor(
    message: string,
    readonly searched: string,
  ) {
    super(message);
    this.name = 'ModelNotLocalError';
  }
}

function isMissingFile(err: unknown): boolean {
  const msg = err instanceof Error ? err.message : String(err);
  return (err as { name?: string })?.name === 'ModelFileNotFoundError' || /not found|could not locate|404|ENOENT/i.test(msg);
}

export class TransformersProvider implements EmbeddingProvider {
  private constructor(
    readonly info: EmbeddingProvider['info'],
    private readonly extractor: ExtractorLike,
    private readonly pooling: PoolingSpec,
    private readonly vocab: Map<string, number> | null,
    private readonly batchSize: number,
  ) {}

  /** Loads `opts.model` (or the built-in model when `builtin`). Throws when it cannot. */
  /** `localConfig`: the local folder's config.json, already read by loadProvider (else it is read here). */
  static async load(
    opts: ProviderOptions,
    builtin = isBuiltinModelId(opts.model),
    localConfig?: Record<string, unknown>,
  ): Promise<TransformersProvider> {
    const t0 = Date.now();
    const loc = locate(opts, builtin);
    if ((builtin || !loc.remote) && !loc.dir) {
      const where = builtin ? loc.root : [opts.modelPath, opts.cacheDir].filter(Boolean).join(' and ');
      throw new ModelNotLocalError(
        `model "${builtin ? BUILTIN_MODEL_ID : opts.model}" is not available locally (looked in ${where})`,
        where,
      );
    }
    if (loc.dir && !fs.existsSync(path.join(loc.dir, 'config.json'))) {
      throw new Error(`${builtin ? `built-in model ${BUILTIN_MODEL_ID} not found` : 'no model'} at ${loc.dir} (config.json missing)`);
    }

    // A model still to be downloaded: see that the hub answers before loading transformers.js, so an offline
    // start falls back to the built-in model without ever mapping onnxruntime into the daemon.
    if (loc.remote && !loc.dir) await probeHub(opts, loc.id);

    const { AutoConfig, PretrainedConfig, env, pipeline } = transformers();
    env.allowLocalModels = true;
    env.allowRemoteModels = loc.remote;
    env.remoteHost = remoteHost(opts);
    env.localModelPath = loc.root.endsWith(path.sep) ? loc.root : loc.root + path.sep;
    env.useFSCache = true;
    env.cacheDir = opts.cacheDir;
    env.useBrowserCache = false;

    const localOnly = !loc.remote;
    const config = (localConfig && loc.dir
      ? new PretrainedConfig(localConfig)
      : await AutoConfig.from_pretrained(loc.id, { local_files_only: localOnly, cache_dir: opts.cacheDir })) as unknown as Record<
      string,
      unknown
    >;
    const configDtype = (config['transformers.js_config'] as { dtype?: unknown } | undefined)?.dtype;
    const dtypes = opts.dtype ? [opts.dtype] : typeof configDtype === 'string' ? [configDtype] : ['q8', 'fp32'];
    let extractor: ExtractorLike | null = null;
    let dtype = dtypes[0];
    for (let i = 0; i < dtypes.length && !extractor; i++) {
      dtype = dtypes[i];
      try {
        extractor = (await pipeline('feature-extraction', loc.id, {
          // eslint-disable-next-line @typescript-eslint/no-explicit-any
          dtype: dtype as any,
          // eslint-disable-next-line @typescript-eslint/no-explicit-any
          config: config as any,
          local_files_only: localOnly,
          cache_dir: opts.cacheDir,
          session_options: sessionOptions(opts.threads),
        })) as unknown as ExtractorLike;
      } catch (err) {
        if (i === dtypes.length - 1 || !isMissingFile(err)) throw err;
        opts.log?.(`model ${opts.model}: no ${dtype} weights (${err instanceof Error ? err.message : err}); trying ${dtypes[i + 1]}`);
      }
    }
    if (!extractor) throw new Error(`could not load ${opts.model}`);

    const pooling = await resolvePooling(opts, loc, config);
    const maxTokens = await resolveMaxTokens(opts, loc, config, extractor.tokenizer);
    let vocab: Map<string, number> | null = null;
    try {
      vocab = extractor.tokenizer.get_vocab?.() ?? null;
    } catch {
      vocab = null;
    }
    const isStatic = (config as { cairn?: { kind?: string } }).cairn?.kind === 'static';
    const batchSize = opts.batchSize ?? (isStatic ? 256 : TRANSFORMER_BATCH);
    const provider = new TransformersProvider(
      {
        model: builtin ? BUILTIN_MODEL_ID : opts.model,
        dimension: 0,
        builtin,
        pooling: poolingName(pooling),
        poolingSource: pooling.source,
        maxTokens,
        dtype,
        loadMs: 0,
      },
      extractor,
      pooling,
      vocab,
      batchSize,
    );
    // One probe both checks the model runs and gives the output dimension.
    const probe = await provider.run(['dimension probe']);
    provider.info.dimension = probe[0].length;
    provider.info.loadMs = Date.now() - t0;
    return provider;
  }

  /** Identifier splitting aware of this model's vocabulary. */
  prepare(text: string): string {
    const vocab = this.vocab;
    return prepareText(text, vocab ? (w) => vocab.has(w) : undefined);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = new Array(texts.length);
    const todo: Array<{ i: number; text: string }> = [];
    const maxChars = this.info.maxTokens * CHARS_PER_TOKEN_CAP;
    texts.forEach((t, i) => {
      const text = this.prepare(t.length > maxChars ? t.slice(0, maxChars) : t);
      if (isBlank(text)) out[i] = new Float32Array(this.info.dimension);
      else todo.push({ i, text });
    });
    // Similar lengths share a batch, so little padding is computed.
    todo.sort((a, b) => a.text.length - b.text.length);
    for (let k = 0; k < todo.length; k += this.batchSize) {
      const chunk = todo.slice(k, k + this.batchSize);
      const vecs = await this.run(chunk.map((c) => c.text));
      chunk.forEach((c, j) => {
        out[c.i] = vecs[j];
      });
    }
    return out;
  }

  /** Tokenize, run, pool, normalize: prepared texts in, one vector per text out. */
  private async run(texts: string[]): Promise<Float32Array[]> {
    const inputs = this.extractor.tokenizer(texts, { padding: true, truncation: true, max_length: this.info.maxTokens });
    const outputs = await this.extractor.model(inputs);
    let hidden = outputs.last_hidden_state ?? outputs.token_embeddings ?? outputs.logits;
    if (!hidden)
      throw new Error(`model gave none of last_hidden_state, token_embeddings, logits (outputs: ${Object.keys(outputs).join(', ')})`);
    if (!(hidden.data instanceof Float32Array) && hidden.to) hidden = hidden.to('float32'); // fp16 models
    if (hidden.dims.length === 2) {
      // already pooled ([batch, hidden]): only normalize
      const [B, H] = hidden.dims;
      const data = hidden.data as Float32Array;
      return Array.from({ length: B }, (_, b) => normalizeInPlace(data.slice(b * H, (b + 1) * H)));
    }
    const pooled = pool(hidden.data as Float32Array, hidden.dims, inputs.attention_mask.data, this.pooling.modes);
    return pooled.map(normalizeInPlace);
  }

  async dispose(): Promise<void> {
    await this.extractor.dispose?.();
  }
}

function describe(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return (msg + cause).replace(/\s+/g, ' ').trim();
}

/** A sentence for status and logs explaining why the configured model is not in use. */
export function fallbackSentence(model: string, err: unknown, opts: Pick<ProviderOptions, 'allowRemote'>): string {
  const why = describe(err);
  const offline = /fetch failed|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|network|getaddrinfo/i.test(why);
  let sentence: string;
  if (err instanceof ModelNotLocalError) {
    sentence = `Embedding model "${model}" is not available locally (looked in ${err.searched}) and downloading models is turned off`;
  } else if (!opts.allowRemote && isMissingFile(err)) {
    sentence = `Embedding model "${model}" is incomplete on disk and downloading models is turned off (${why})`;
  } else if (offline) {
    sentence = `Embedding model "${model}" could not be downloaded, the network seems unavailable (${why})`;
  } else {
    sentence = `Embedding model "${model}" could not be loaded (${why})`;
  }
  return `${sentence}; using the built-in offline model ${BUILTIN_MODEL_ID} instead.`;
}

/**
 * Loads `opts.model` (or the built-in model): a static model folder (config.json
 * `cairn.format: cairn-static-1`, the built-in model among them) in plain JavaScript, anything
 * else through transformers.js. Throws when it cannot.
 */
export async function loadProvider(opts: ProviderOptions, builtin = isBuiltinModelId(opts.model)): Promise<EmbeddingProvider> {
  const loc = locate(opts, builtin);
  // config.json is read once (it may be a pipe, or change under us); a folder whose config is not JSON cannot load.
  let config: Record<string, unknown> | undefined;
  const file = loc.dir ? path.join(loc.dir, 'config.json') : null;
  if (loc.dir && file && fs.existsSync(file)) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read ${file}: ${err instanceof Error ? err.message : err}`);
    }
    try {
      config = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new Error(`${file} is not valid JSON`);
    }
    if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new Error(`${file} is not a JSON object`);
    const staticConfig = staticConfigOf(config, loc.dir);
    if (staticConfig) return StaticProvider.load(loc.dir, builtin ? BUILTIN_MODEL_ID : opts.model, builtin, staticConfig);
  }
  return TransformersProvider.load(opts, builtin, config);
}

/**
 * Loads the configured model; if that fails, the built-in model, with a human sentence saying
 * why. Throws only when the built-in model cannot be loaded either.
 */
export async function loadWithFallback(opts: ProviderOptions): Promise<{ provider: EmbeddingProvider; fallbackReason: string | null }> {
  if (!isBuiltinModelId(opts.model)) {
    try {
      const loadMs = opts.loadTimeoutMs ?? 300_000;
      const provider = await withTimeout(loadProvider(opts, false), loadMs, () => {
        throw new Error(`loading ${opts.model} timed out after ${Math.round(loadMs / 1000)} s`);
      });
      return { provider, fallbackReason: null };
    } catch (err) {
      const fallbackReason = fallbackSentence(opts.model, err, opts);
      opts.log?.(fallbackReason);
      const provider = await loadProvider(fallbackOptions(opts), true);
      return { provider, fallbackReason };
    }
  }
  return { provider: await loadProvider(opts, true), fallbackReason: null };
}

/** Options meant for the configured model (dtype, pooling, batch size) do not apply to the fallback. */
function fallbackOptions(opts: ProviderOptions): ProviderOptions {
  return { ...opts, dtype: undefined, pooling: undefined, batchSize: undefined };
}
