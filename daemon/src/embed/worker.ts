/**
 * The embedding worker thread: loads one model (with fallback to the built-in model) and
 * embeds batches of texts on request, one request at a time, so the daemon's event loop never
 * runs tokenization or inference. Bundled to dist/embed-worker.js by daemon/build.mjs; under
 * tsx the .ts file runs directly. Started by `Embedder` (index.ts); speaks the messages in
 * shared.ts.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { isZeroVector, type PoolingMode } from './pooling';
import { loadWithFallback, type EmbeddingProvider } from './provider';
import type { FromWorker, ToWorker, WorkerInit } from './shared';
import { SIG_WORDS } from '../store/quantize';
import { fastSignature } from './embed-kernels';
import { newScratch, queryNearest, runDuplicateScanReranked } from '../store/vector-scan';
import { StoredVectorReader } from '../store/vector-rerank';

if (isMainThread || !parentPort) throw new Error('embed worker: must run in a worker thread (start it through Embedder)');
const port = parentPort;
const send = (msg: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(msg, transfer);
const log = (message: string) => send({ type: 'log', message });

let provider: EmbeddingProvider | null = null;
const queue: Array<Extract<ToWorker, { type: 'embed' | 'scan' | 'knn' }>> = [];
const scratch = newScratch();
/** A read-only connection to the store, for ranking a compact index's hits again by their stored int8 vectors. */
const stored = new StoredVectorReader();
let busy = false;
let closing = false;

async function drain(): Promise<void> {
  if (busy) return;
  busy = true;
  try {
    while (queue.length && provider && !closing) {
      const req = queue.shift()!;
      try {
        if (req.type === 'scan') {
          const result = runDuplicateScanReranked(req.scan, scratch, stored);
          send({ type: 'scanned', id: req.id, result }, [
            result.counts.buffer,
            result.rowids.buffer,
            result.scores.buffer,
          ] as ArrayBuffer[]);
          continue;
        }
        if (req.type === 'knn') {
          const [v] = await provider.embed([req.text]);
          // The Float32 copy the event loop would receive for this text (Embedder.embed), so the ranking is its own.
          const query = Float32Array.from(v);
          const k = req.knn;
          let hits = isZeroVector(query) ? [] : queryNearest(k.arrays, scratch, k.admitted, query, k.limit, k.exactMax, k.candidates);
          // A compact index's hits ranked again here (all of them: the event loop admits them again, then cuts).
          const again = k.stored && hits.length ? stored.rerank(k.stored, [{ query, hits }], Infinity) : null;
          if (again) hits = again[0];
          const rowids = Int32Array.from(hits, (h) => h.rowid);
          const scores = Float64Array.from(hits, (h) => h.score);
          // A buffer of its own goes back (the next search's copy); a cached set in shared memory stays where it is.
          const admitted = k.admitted.buffer instanceof SharedArrayBuffer ? null : (k.admitted.buffer as ArrayBuffer);
          send({ type: 'nearest', id: req.id, rowids, scores, admitted, query, reranked: !!again }, [
            rowids.buffer,
            scores.buffer,
            ...(admitted ? [admitted] : []),
            query.buffer,
          ] as ArrayBuffer[]);
          continue;
        }
        const vectors = await provider.embed(req.texts);
        const dimension = provider.info.dimension;
        const data = new Float32Array(vectors.length * dimension);
        vectors.forEach((v, i) => data.set(v, i * dimension));
        if (req.signatures) {
          const sigs = new Int32Array(vectors.length * SIG_WORDS);
          // From the Float32 copy the daemon receives, so the signature is exactly the one it would compute.
          for (let i = 0; i < vectors.length; i++)
            sigs.set(fastSignature(data.subarray(i * dimension, (i + 1) * dimension), req.centre ?? null), i * SIG_WORDS);
          send({ type: 'result', id: req.id, count: vectors.length, dimension, data: data.buffer, sigs: sigs.buffer }, [
            data.buffer,
            sigs.buffer,
          ]);
        } else send({ type: 'result', id: req.id, count: vectors.length, dimension, data: data.buffer }, [data.buffer]);
      } catch (err) {
        send({ type: 'error', id: req.id, message: err instanceof Error ? err.message : String(err) });
      }
    }
  } finally {
    busy = false;
  }
}

port.on('message', (msg: ToWorker) => {
  switch (msg.type) {
    case 'embed':
      // Interactive requests (a search's query) go ahead of queued background batches.
      if (msg.priority) queue.unshift(msg);
      else queue.push(msg);
      void drain();
      break;
    case 'knn':
      queue.unshift(msg); // a search waits on it, as on a query's embedding
      void drain();
      break;
    case 'scan':
      queue.push(msg);
      void drain();
      break;
    case 'crash':
      process.exit(msg.code);
      break;
    case 'close':
      closing = true;
      stored.close();
      void (async () => {
        try {
          await provider?.dispose();
        } catch {
          /* exiting anyway */
        }
        send({ type: 'closed' });
        process.exit(0);
      })();
      break;
  }
});

void (async () => {
  const init = workerData as WorkerInit;
  try {
    const { provider: p, fallbackReason } = await loadWithFallback({ ...init, pooling: init.pooling as PoolingMode | undefined, log });
    provider = p;
    send({ type: 'ready', info: { ...p.info, fallbackReason } });
    void drain();
  } catch (err) {
    send({ type: 'fatal', message: err instanceof Error ? err.message : String(err) });
  }
})();
