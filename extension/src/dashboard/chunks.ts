/** Applying a large import in chunks (no vscode import: unit-tested in plain Node). */

/** Memory records per store/import call when applying an import (each call is one transaction). */
export const IMPORT_CHUNK = 500;

/**
 * Split export records into import chunks that store/import can apply one after another with the same result
 * as one call: namespaces first, then memories each with their own history, then links, rejected values and
 * history of memories not in the file (links need both ends imported).
 */
export function importChunks(records: unknown[], size = IMPORT_CHUNK): unknown[][] {
  type R = { type?: string; memory?: { id?: string }; entry?: { memoryId?: string } };
  const head: unknown[] = [];
  const tail: unknown[] = [];
  const mems: { rec: unknown; id: string }[] = [];
  const historyOf = new Map<string, unknown[]>();
  for (const r of records as R[]) {
    if (r?.type === 'header' || r?.type === 'namespace') head.push(r);
    else if (r?.type === 'memory') mems.push({ rec: r, id: String(r.memory?.id) });
    else if (r?.type === 'history') {
      const id = String(r.entry?.memoryId);
      historyOf.set(id, [...(historyOf.get(id) ?? []), r]);
    } else tail.push(r);
  }
  const chunks: unknown[][] = [];
  for (let i = 0; i < mems.length; i += size) {
    const chunk: unknown[] = i === 0 ? [...head] : [];
    for (const m of mems.slice(i, i + size)) {
      chunk.push(m.rec, ...(historyOf.get(m.id) ?? []));
      historyOf.delete(m.id);
    }
    chunks.push(chunk);
  }
  const rest = [...(mems.length ? [] : head), ...[...historyOf.values()].flat(), ...tail];
  if (rest.length || !chunks.length) chunks.push(rest);
  return chunks;
}

/** What importInChunks adds up: the totals of every store/import call. */
export interface ImportTotals {
  memories: number;
  history: number;
  links: number;
  skipped: number;
  position: number;
}

/**
 * Import records as importChunks cuts them, one store/import call after another (each message stays far below the
 * daemon's message limit, and each call yields to other clients), adding up the results.
 */
export async function importInChunks(
  records: unknown[],
  importChunk: (chunk: unknown[]) => Promise<ImportTotals>,
  onChunk: (done: number, total: number) => void = () => {},
): Promise<ImportTotals> {
  const chunks = importChunks(records);
  const sum: ImportTotals = { memories: 0, history: 0, links: 0, skipped: 0, position: 0 };
  for (let i = 0; i < chunks.length; i++) {
    const r = await importChunk(chunks[i]);
    sum.memories += r.memories;
    sum.history += r.history;
    sum.links += r.links;
    sum.skipped += r.skipped;
    sum.position = Math.max(sum.position, r.position);
    onChunk(i + 1, chunks.length);
  }
  return sum;
}

/**
 * A whole export through store/exportPage (the daemon never holds the whole export, and a large store is not
 * refused as one store/export reply would be): every page's records, in order.
 */
export async function exportAllPages<R>(
  page: (cursor: string | undefined) => Promise<{ records: R[]; nextCursor: string | null }>,
): Promise<R[]> {
  const out: R[] = [];
  let cursor: string | undefined;
  do {
    const p = await page(cursor);
    for (const r of p.records) out.push(r);
    cursor = p.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}
