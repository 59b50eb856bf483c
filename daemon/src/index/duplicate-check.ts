/**
 * The duplicate checks of the memories an indexing pass just embedded (Indexer.checkDuplicates): live memories of
 * the same namespace at least the model's threshold cosine-similar, scored in the embedding worker when it can.
 */
import type { ArmHit } from '../store/search-fts';
import { runDuplicateScan, type DuplicateScan, type DuplicateScanResult } from '../store/vector-scan';
import type { VecModel } from '../store/vectors';
import { isZeroVector } from '../embed';
import type { Embedded, IndexerHost } from './embedding-model';
import { DUPLICATE_LIMIT } from './indexer-tuning';

/** What the indexer found for one memory it embedded (reported as memory/possibleDuplicates). */
export interface DuplicateReport {
  rowid: number;
  id: string;
  version: number;
  position: number;
  duplicates: { rowid: number; similarity: number }[];
}

/**
 * Duplicate check of the memories just embedded: live memories of the same namespace at least
 * `threshold` cosine-similar (exact up to DUP_EXACT_MAX, then the DUP_CANDIDATES nearest by Hamming
 * distance; see VectorTables.prepareDuplicateScan). The checks of a batch go to the embedding worker as one scan
 * when the model runs there (the scoring is the event loop's largest share of indexing a write); what they admit
 * (namespace, visibility, not itself) is decided here first, so the answer is what a check on this thread gives.
 */
export async function checkDuplicates(
  host: IndexerHost,
  model: VecModel,
  embedded: Embedded[],
  position: number,
  threshold: number,
): Promise<DuplicateReport[] | null> {
  const live = embedded.filter((e) => !e.row.deleted);
  const checked = live.filter((e) => !isZeroVector(e.vector));
  let hits: ArmHit[][] = [];
  if (checked.length) {
    const now = host.store.now();
    const prepare = () =>
      host.store.vectors.prepareDuplicateScan(
        model,
        checked.map((e) => ({ vector: e.vector, nsRowid: e.row.ns_rowid, exclude: e.row.rowid, sig: e.sig })),
        DUPLICATE_LIMIT,
        now,
      );
    const embedder = host.embedder();
    let result: DuplicateScanResult | null = null;
    // What the scan ran over (its arrays are shared, not transferred): a compact index's hits are ranked again.
    let scanned: DuplicateScan | null = null;
    if (embedder?.scanDuplicates)
      result = await embedder.scanDuplicates((scanned = prepare())).catch((e: Error) => {
        // The worker died after this pass stored its vectors: a later pass would not embed them again (same
        // text), so their checks are scored here instead of being lost.
        if (!host.stopped()) host.log(`duplicate checks scored on the event loop: ${e.message}`);
        return null;
      });
    if (host.model() !== model) return [];
    if (!result && host.stopped()) {
      // The daemon is stopping (the worker was closed under the scan): scoring the whole batch here would hold the
      // stop for as long as the scan (seconds to minutes on a large store). The batch is rolled back instead; its
      // changes stay past the watermark, so the next start embeds and checks them.
      host.rollBack(embedded.map((e) => e.row.rowid));
      return null;
    }
    if (!result) result = runDuplicateScan((scanned = prepare()));
    hits = host.store.vectors.duplicateResults(
      model,
      scanned!,
      checked.map((e) => e.vector),
      result,
    );
  }
  const byRow = new Map(checked.map((e, i) => [e.row.rowid, hits[i]]));
  return live.map((e) => ({
    rowid: e.row.rowid,
    id: e.row.id,
    version: e.row.version,
    position,
    duplicates: (byRow.get(e.row.rowid) ?? []).filter((h) => h.score >= threshold).map((h) => ({ rowid: h.rowid, similarity: h.score })),
  }));
}
