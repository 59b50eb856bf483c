/**
 * Wiring the embedding index into a daemon: load the configured model in a
 * worker (falling back to the built-in offline model), start the indexer, and
 * hook vector search, duplicate detection, index/wait, index/rebuild and the
 * embedding status into the Core. The daemon listens at once; until the model
 * is loaded, search degrades to full-text and says so.
 */
import { CairnError } from '../protocol/errors';
import { Notifications } from '../protocol/methods';
import { envFlag, readEnv, Settings, type Env } from '../protocol/settings';
import type { PossibleDuplicate } from '../protocol/types';
import { toMemory } from '../store/rows';
import type { Store } from '../store/store';
import type { Daemon } from '../server/daemon';
import { Indexer, type EmbeddingModel } from './indexer';
import { EventVectors } from './event-vectors';
import { BranchVectors } from './branch-vectors';

export { DUPLICATE_THRESHOLD } from './indexer';
/** How long memory/upsert with waitForDuplicates waits for the vector index. */
export const DUPLICATE_WAIT_MS = 5000;

function possibleDuplicates(store: Store, hits: { rowid: number; similarity: number }[]): PossibleDuplicate[] {
  if (hits.length === 0) return [];
  const rows = store.byRowids(hits.map((h) => h.rowid));
  return hits.flatMap((h): PossibleDuplicate[] => {
    const r = rows.get(h.rowid);
    if (!r) return [];
    const m = toMemory(r);
    return [{ id: m.id, key: m.key, namespace: m.namespace, similarity: Math.round(h.similarity * 1000) / 1000 }];
  });
}

export interface EmbeddingOptions {
  model?: string;
  modelPath?: string;
  allowRemote?: boolean;
}

export function embeddingOptionsFromEnv(o: EmbeddingOptions, env?: Env): Required<Pick<EmbeddingOptions, 'model'>> & EmbeddingOptions {
  return {
    model: o.model ?? readEnv('CAIRN_MODEL', env) ?? Settings['cairn.embeddings.model'].default,
    modelPath: o.modelPath ?? readEnv('CAIRN_MODEL_PATH', env),
    allowRemote: o.allowRemote ?? envFlag('CAIRN_ALLOW_REMOTE_MODELS', Settings['cairn.embeddings.allowRemote'].default, env),
  };
}

export async function loadModel(o: EmbeddingOptions, log: (m: string) => void): Promise<EmbeddingModel> {
  const { Embedder } = await import('../embed');
  const opts = embeddingOptionsFromEnv(o);
  const e = await Embedder.start({ model: opts.model, modelPath: opts.modelPath, allowRemote: opts.allowRemote, log });
  // A fallback is already logged by the Embedder (its reason names the built-in model it switched to).
  if (!e.info.fallbackReason) log(`embedding model ${e.info.model} loaded (${e.info.dimension}-d)`);
  return e;
}

/**
 * The model the store's vectors are of, loaded from local files only (built-in, cached or CAIRN_MODEL_PATH), when it
 * is not the one just loaded; null when they are the same, the store has none, or it cannot be loaded as it is.
 */
async function previousModel(
  store: Store,
  loaded: EmbeddingModel,
  o: EmbeddingOptions,
  log: (m: string) => void,
): Promise<EmbeddingModel | null> {
  const active = store.feed.activeModel();
  if (!active || active === loaded.info.model || !store.vectors.model(active) || store.feed.watermark(active) === 0) return null;
  const e = await loadModel({ ...o, model: active, allowRemote: false }, () => {}).catch(() => null);
  if (!e) return null;
  if (e.info.fallbackReason || e.info.model !== active) {
    await e.close().catch(() => {});
    return null;
  }
  log(`the store's vectors are of ${active}: it serves searches until they are re-embedded with ${loaded.info.model}`);
  return e;
}

export async function attachEmbeddings(d: Daemon, o: EmbeddingOptions): Promise<Indexer> {
  // Woken whenever the indexer may have left 'loading' or 'reindexing' (model loaded or failed, rebuild done).
  const settling = new Set<() => void>();
  const settled = () => {
    for (const wake of [...settling]) wake();
  };
  const indexer = new Indexer(
    d.store,
    d.log,
    (p) => {
      d.notifyAll(Notifications.indexProgress.method, p);
      if (p.state === 'ready') settled();
    },
    (reports, labels) => {
      // `labels`: each memory's and each candidate's id, key and namespace, read once for the whole batch.
      for (const r of reports) {
        const m = labels.get(r.rowid);
        const dups = r.duplicates.flatMap((h): PossibleDuplicate[] => {
          const o = labels.get(h.rowid);
          return o ? [{ id: o.id, key: o.key, namespace: o.ns_path, similarity: Math.round(h.similarity * 1000) / 1000 }] : [];
        });
        if (m && dups.length)
          d.notifyAll(Notifications.possibleDuplicates.method, {
            id: r.id,
            namespace: m.ns_path,
            key: m.key,
            version: r.version,
            position: r.position,
            possibleDuplicates: dups,
          });
      }
    },
    settled, // a failed re-embed ends the wait too: index/wait answers at once with the reason
  );
  const hooks = d.core.hooks;
  hooks.vectors = indexer;
  // Events (docs/episodes.md) are embedded with the same model and worker, after each append and once it is ready.
  const eventVectors = new EventVectors(d.store, indexer, d.log);
  hooks.eventVectors = eventVectors;
  d.core.episodes.onAppend = () => eventVectors.kick();
  // Memory branch rows (docs/branches.md) too, after each branch write (Branches.onWrite) and once it is ready.
  const branchVectors = new BranchVectors(d.store, indexer, d.log);
  hooks.branchVectors = branchVectors;
  settling.add(() => {
    if (!indexer.indexing()) return; // stays registered: every time the model is (re)loaded
    eventVectors.kick();
    branchVectors.kick();
  });
  hooks.embeddings = () => indexer.status();
  hooks.indexes = () => (indexer.model ? [{ name: `vec:${indexer.model.model}`, watermark: indexer.watermark() }] : []);
  // Read-your-writes means the vector arm can serve the write: wait while the model loads or the index is
  // rebuilt for a new model with no previous model serving (vector search is degraded then), and say why when it
  // cannot be reached. During a rebuild in place the indexing passes go on, and during a switch the previous model
  // embeds the writes for the searches it serves, so the wait is the usual one.
  hooks.indexWait = async (p) => {
    const deadline = Date.now() + (p.timeoutMs ?? 10_000);
    const busy = () => (indexer.state === 'loading' || indexer.state === 'reindexing') && !indexer.followsWrites();
    while (busy() && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          settling.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.max(0, deadline - Date.now()));
        settling.add(wake);
      });
    }
    const watermark = indexer.model ? indexer.servingWatermark() : 0;
    if (!indexer.followsWrites()) {
      const why = indexer.modelUnavailable() ?? `the vector index is ${indexer.state}`;
      return { watermark, reached: false, index: 'vector' as const, reason: busy() ? why : `no vector index can exist: ${why}` };
    }
    const r = await indexer.waitFor(p.position, Math.max(0, deadline - Date.now()));
    const ev = await eventVectors.waitForNewest(Math.max(0, deadline - Date.now()));
    const branchRows = await branchVectors.waitForAll(Math.max(0, deadline - Date.now()));
    const fts = d.core.episodes.catchUp().watermark;
    return {
      ...r,
      reached: r.reached && branchRows,
      events: { position: ev.position, fts, vector: ev.vector, reached: fts >= ev.position && ev.reached },
      index: 'vector' as const,
      ...(r.reached ? {} : { reason: `the vector index reached ${r.watermark}, not yet ${p.position}` }),
      ...(r.reached && !branchRows ? { reason: 'memory branch rows are still being embedded' } : {}),
    };
  };
  hooks.indexRebuild = async (p) => {
    if (p.model && p.model !== indexer.embedder?.info.model) {
      const next = await loadModel({ ...o, model: p.model }, d.log);
      if (next.info.fallbackReason) {
        await next.close();
        throw new CairnError('InvalidState', `cannot load model ${p.model}: ${next.info.fallbackReason}`, { field: 'model' });
      }
      const total = d.store.feed.liveMemoryCount(); // what the re-embed embeds (its progress' total)
      await indexer.use(next);
      return { model: next.info.model, queued: total };
    }
    const queued = await indexer.rebuildCurrent();
    return { model: indexer.model?.model ?? null, queued };
  };
  hooks.duplicates = async (m, position, wait) => {
    // Said, not skipped silently: while the model loads (or the index is rebuilt for a new model) there is nothing to
    // compare with. During a rebuild in place the passes check writes as at any other time; during a switch the
    // previous model serves searches but checks nothing (indexUnavailable()).
    const why = indexer.indexUnavailable();
    if (why) return { duplicateCheck: 'unavailable', possibleDuplicates: [], skipped: `${why}; this write was not checked for duplicates` };
    if (!wait) return { duplicateCheck: 'pending', possibleDuplicates: [] };
    await indexer.waitFor(position, DUPLICATE_WAIT_MS);
    const rowid = d.store.rowidOf(m.id);
    if (rowid === undefined) return { duplicateCheck: 'unavailable', possibleDuplicates: [] };
    const r = indexer.duplicatesOf({ id: m.id, rowid });
    return { duplicateCheck: r.state, possibleDuplicates: possibleDuplicates(d.store, r.duplicates) };
  };
  hooks.duplicatesOf = (id) => {
    const rowid = d.store.rowidOf(id);
    if (rowid === undefined) return { duplicateCheck: 'unavailable', possibleDuplicates: [] };
    const r = indexer.duplicatesOf({ id, rowid });
    return { duplicateCheck: r.state, possibleDuplicates: possibleDuplicates(d.store, r.duplicates) };
  };
  d.store.onChange(() => indexer.kick());
  // All stop at once: the event and branch passes are marked stopped first, then closing the model (indexer.stop)
  // rejects every request still queued for the worker, theirs too. Waiting for the event pass first let it wait behind
  // the memory backlog's queued batches and scans while the indexer went on queueing more.
  d.extraStop.push(async () => {
    const events = eventVectors.stop();
    const branches = branchVectors.stop();
    await indexer.stop();
    await Promise.all([events, branches]);
  });
  void loadModel(o, d.log)
    .then(async (e) => {
      // A store whose vectors are of another model (the configured one changed since the last start) is re-embedded;
      // its own model, when it loads here without a download, serves searches meanwhile (Indexer.use).
      const previous = await previousModel(d.store, e, o, d.log);
      if (previous) await indexer.use(previous);
      await indexer.use(e);
    })
    .catch((e) => {
      indexer.state = 'unavailable';
      indexer.lastError = `no embedding model could be loaded: ${(e as Error).message}`;
      d.log(indexer.lastError);
    })
    .finally(settled);
  return indexer;
}
