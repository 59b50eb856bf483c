/**
 * The vector arm of a search (Indexer.search): the query embedded and ranked in the embedding worker over the
 * admitted set decided on this thread, or embedded there and ranked here.
 */
import { CairnError } from '../protocol/errors';
import type { ArmHit, ArmQuery } from '../store/search-fts';
import { isZeroVector } from '../embed';
import type { IndexerHost } from './embedding-model';

export class VectorSearch {
  constructor(private readonly host: IndexerHost) {}

  /** The buffer of the last worker KNN's admitted slots, given back for the next search's (Embedder.nearest). */
  private knnSpare: Int32Array | null = null;

  /** `queryVector`, when given, is told the query's embedding as soon as the worker returns it (a branch's own vector arm scores with it). */
  async search(query: string, q: ArmQuery, queryVector?: (v: Float32Array) => void): Promise<ArmHit[]> {
    // The model in use, or during a switch the previous one, whose vectors are complete (Indexer.serving).
    const serving = this.host.serving();
    if (!serving) throw new CairnError('InvalidState', 'no embedding model is loaded');
    const { model, embedder } = serving;
    if (embedder.nearest) {
      // The admitted set is decided here, now; the worker embeds the query and scans it while this thread runs the
      // full-text arm (retrieval/search.ts); what it finds is admitted again before fusion sees it.
      const prepared = this.host.store.vectors.prepareKnn(model, q, this.knnSpare ?? undefined);
      const { arrays, admitted, exactMax, candidates, stored } = prepared;
      if (admitted.length === 0) return [];
      if (admitted.buffer === this.knnSpare?.buffer) this.knnSpare = null; // transferred: a search meanwhile allocates
      const knn = { arrays, admitted, limit: q.limit, exactMax, candidates, stored };
      const { hits, spare, query: v, reranked } = await embedder.nearest(query, knn);
      if (spare && (!this.knnSpare || this.knnSpare.length < spare.length)) this.knnSpare = spare;
      queryVector?.(v);
      if (this.host.serving()?.model !== model) return []; // the index was switched to another model meanwhile
      const admittedHits = this.host.store.vectors.stillAdmitted(model, hits, q, prepared);
      // Ranked again by the stored vectors in the worker (all of them) or here; then cut.
      return reranked ? admittedHits.slice(0, q.limit) : this.host.store.vectors.rerank(model, arrays, v, admittedHits, q.limit);
    }
    const [v] = await embedder.embed([query], { priority: true });
    queryVector?.(v);
    if (isZeroVector(v)) return []; // nothing the model knows: no meaning to compare
    return this.host.store.vectors.knn(model, v, q);
  }
}
