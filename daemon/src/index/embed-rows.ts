/**
 * One batch of the indexer's embedding (Indexer.embedRows): the rows whose text changed since their vector was
 * computed are embedded in the worker and their vectors written in small transactions.
 */
import type { EmbedRow } from '../store/index-feed';
import { hashKey } from '../store/quantize';
import type { VecModel } from '../store/vectors';
import { sha256 } from '../text/hash';
import { embeddingText, type Embedded, type EmbeddingModel, type IndexerHost } from './embedding-model';
import { QUIET_WRITE_CHUNK, WRITE_CHUNK } from './indexer-tuning';

/** The previous model of a switch, embedding the writes made during it (Indexer.retiringLoop): its worker, and whether it still serves. */
export interface PreviousModel {
  embedder: EmbeddingModel;
  current: () => boolean;
}

/** Rows of one batch sent to the embedding worker (requestEmbeddings), their vectors not yet stored (storeEmbeddings). */
export interface EmbedRequest {
  todo: { row: EmbedRow; rowid: number; text: string; hash: number }[];
  /** The text hashes of the rows' stored vectors when the request was made (a rebuild in place compares them again). */
  have: Map<number, number>;
  /** What the worker returns, chunk by chunk. Already marked handled: a request nobody awaits (a pass that stopped) is no unhandled rejection. */
  done: Promise<{ vectors: Float32Array[]; sigs?: Int32Array[] }[]>;
}

/**
 * Embed rows whose text changed since their vector was computed (every row when `force`: a rebuild in place), `per`
 * texts a request; write them in small transactions. Returns the rows embedded, with their vectors (none when the
 * indexer stopped or switched models). `via`: with the previous model of a switch instead of the model in use.
 */
export async function embedRows(
  host: IndexerHost,
  model: VecModel,
  rows: EmbedRow[],
  per: number,
  force = false,
  via?: PreviousModel,
): Promise<Embedded[]> {
  const request = requestEmbeddings(host, model, rows, per, force, via);
  return request ? storeEmbeddings(host, model, request, force, via) : [];
}

/**
 * The first half of embedRows: which rows need a vector (their text changed since theirs was computed, or all when
 * `force`), sent to the worker now. Null when none does. The answer is stored by storeEmbeddings; until then the
 * rows' stored text hashes must not change under it other than by a write's own change (which a later batch
 * embeds again), so the indexer asks for one batch ahead only after the batch before it stored its vectors.
 */
export function requestEmbeddings(
  host: IndexerHost,
  model: VecModel,
  rows: EmbedRow[],
  per: number,
  force = false,
  via?: PreviousModel,
): EmbedRequest | null {
  const store = host.store;
  const todo: EmbedRequest['todo'] = [];
  const have = store.vectors.textHashes(
    model,
    rows.map((r) => r.rowid),
  );
  for (const r of rows) {
    const text = embeddingText(r);
    const hash = hashKey(sha256(model.model + '\u0000' + text));
    if (force || have.get(r.rowid) !== hash) todo.push({ row: r, rowid: r.rowid, text, hash });
  }
  if (todo.length === 0) return null;
  // Queued as small requests, so a search's query embedding (priority) waits for one chunk at most.
  const embedder = via?.embedder ?? host.embedder()!;
  const chunks: Promise<{ vectors: Float32Array[]; sigs?: Int32Array[] }>[] = [];
  for (let i = 0; i < todo.length; i += per) {
    const texts = todo.slice(i, i + per).map((t) => t.text);
    chunks.push(
      embedder.embedWithSignatures
        ? embedder.embedWithSignatures(texts, model.centre ?? null)
        : embedder.embed(texts).then((vectors) => ({ vectors })),
    );
  }
  const done = Promise.all(chunks);
  done.catch(() => {});
  return { todo, have, done };
}

/** The second half of embedRows: wait for the worker's vectors and write them in small transactions. */
export async function storeEmbeddings(
  host: IndexerHost,
  model: VecModel,
  request: EmbedRequest,
  force = false,
  via?: PreviousModel,
): Promise<Embedded[]> {
  const store = host.store;
  const { todo, have } = request;
  const done = await request.done;
  const vectors = done.flatMap((c) => c.vectors);
  const given = done.flatMap((c) => c.sigs ?? c.vectors.map(() => undefined));
  // While searches are served, write in small transactions and yield in between, so a search is never queued
  // behind a long write; with no search in the last QUIET_MS, in one transaction (one commit instead of one per
  // WRITE_CHUNK vectors).
  const chunk = host.searching() ? WRITE_CHUNK : QUIET_WRITE_CHUNK;
  const sigs: (Int32Array | null)[] = [];
  for (let i = 0; i < todo.length; i += chunk) {
    if (via ? !via.current() : host.stopped() || host.model() !== model) {
      // Stopped or switched meanwhile. Vectors already stored by this call would have no duplicate check (the next
      // start skips a memory whose text has its vector): they go, and the next start embeds and checks them.
      // A forced pass (a rebuild in place) replaced vectors that were there before, with no duplicate check to skip.
      if (host.stopped() && i > 0 && !force && !via) host.rollBack(todo.slice(0, i).map((t) => t.rowid));
      return [];
    }
    store.derivedTransaction(() => {
      const end = Math.min(todo.length, i + chunk);
      let items = todo.slice(i, end).map((t, k) => ({ rowid: t.rowid, vector: vectors[i + k], textHash: t.hash, sig: given[i + k] }));
      if (force) {
        // A rebuild in place runs beside the indexing passes: a memory whose vector changed since this call read
        // the hashes was re-embedded by a pass from newer text (or removed); this older vector must not replace it.
        const now = store.vectors.textHashes(
          model,
          items.map((x) => x.rowid),
        );
        items = items.filter((x) => now.get(x.rowid) === have.get(x.rowid));
      }
      const put = store.vectors.putMany(model, items);
      // (A rebuild's rows are checked for duplicates by the passes, not from here: it reads no SimHash back.)
      if (!force) for (let j = i; j < end; j++) sigs[j] = put[j - i];
    });
    await new Promise((r) => setImmediate(r));
  }
  return todo.map((t, i) => ({ row: t.row, vector: vectors[i], sig: sigs[i] ?? undefined }));
}
