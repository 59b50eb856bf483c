/** Vectors of team memories: embedded after a write (version-guarded) and backfilled for the current model. */
import type { Memory } from '../../protocol/types';
import { sha256 } from '../../text/hash';
import { toMemory, type MemoryRow } from '../rows';
import type { PgBackend } from './backend';
import { query } from './db';
import { MEMORY_COLUMNS } from './sql';

/** What the team store needs of an embedding model (the daemon's Embedder fits). */
export interface PgEmbedder {
  readonly info: { model: string; dimension: number };
  embed(texts: string[], opts?: { priority?: boolean }): Promise<Float32Array[]>;
}

export function embeddingText(m: { key: string; value: string; tags: string[] }): string {
  return `${m.key.replace(/[._:/-]+/g, ' ')}\n${m.tags.join(' ')}\n${m.value}`;
}

export function vectorLiteral(v: Float32Array | number[]): string {
  return `[${Array.from(v, (x) => (Number.isFinite(x) ? x : 0)).join(',')}]`;
}

/** Vectors for freshly written memories, stored only if the memory has not changed since (version guard). */
export async function embedRows(b: PgBackend, ms: Memory[]): Promise<void> {
  const e = b.embedder;
  if (!e || ms.length === 0) return;
  try {
    const texts = ms.map(embeddingText);
    const vs = await e.embed(texts, { priority: true });
    const values = ms.map((m, i) => ({
      id: m.id,
      version: m.version,
      v: vectorLiteral(vs[i]),
      h: sha256(e.info.model + '\u0000' + texts[i]),
      zero: vs[i].every((x) => x === 0),
    }));
    for (let i = 0; i < values.length; i += 200) {
      const chunk = values.filter((x) => !x.zero).slice(i, i + 200);
      if (chunk.length === 0) continue;
      await b.pool.query(
        `UPDATE memories m SET embedding = u.v::vector, embed_model = $1, embed_hash = u.h
         FROM unnest($2::text[], $3::int[], $4::text[], $5::text[]) AS u(id, version, v, h) WHERE m.id = u.id AND m.version = u.version`,
        [e.info.model, chunk.map((x) => x.id), chunk.map((x) => x.version), chunk.map((x) => x.v), chunk.map((x) => x.h)],
      );
    }
  } catch (err) {
    // The write is committed; full-text finds it. backfill() embeds it later.
    b.log(`team store: embedding after write failed: ${(err as Error).message}`);
  }
}

/** Embed live memories that have no vector for the current model (after a model load or a failed embed). */
export async function backfill(b: PgBackend, batch = 256): Promise<number> {
  const e = b.embedder;
  if (!e) return 0;
  let total = 0;
  for (;;) {
    const rows = await query<MemoryRow>(
      b.pool,
      `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.deleted_at IS NULL AND m.embed_model IS DISTINCT FROM $1 AND m.rowid > $2 ORDER BY m.rowid LIMIT $3`,
      [e.info.model, -1, batch],
    );
    if (rows.length === 0) return total;
    const ms = rows.map(toMemory);
    await embedRows(b, ms);
    total += rows.length;
    const still = await query<{ c: number }>(
      b.pool,
      `SELECT count(*)::int AS c FROM memories WHERE id = ANY($1::text[]) AND embed_model IS DISTINCT FROM $2`,
      [ms.map((m) => m.id), e.info.model],
    );
    if (still[0].c === rows.length) return total; // nothing moved (zero vectors, or no write access): stop
  }
}
