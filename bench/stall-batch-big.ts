/**
 * The big side of bench/stall-batch.ts, in its own process so that building and serializing the batch does not count
 * as the daemon's stall. Commands by IPC: `build` (ITEMS memories of prose and identifiers, about MB MiB of JSON in
 * all, deterministic), `send` (one `memory/upsertBatch` with every item, as any client may send it). Each is answered
 * {ok, detail} or {ok: false, error}.
 *
 *   (forked by stall-batch.ts) bench/stall-batch-big.ts SOCKET ITEMS MB
 */
import { StreamClient } from '../daemon/src/client/socket-client';
import { Requests as R } from '../daemon/src/protocol/methods';
import type { UpsertParams } from '../daemon/src/protocol/types';

const [socket, count, mb] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
let batch: UpsertParams[] = [];
let client: StreamClient | null = null;

/** A deterministic generator (mulberry32), so every run and build gets the same batch. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function build(): void {
  const r = rng(27);
  const syl = ['ka', 'lo', 'mi', 'ran', 'te', 'vos', 'dri', 'pel', 'su', 'gan', 'or', 'bix', 'ne', 'tal', 'qu', 'ster'];
  const word = () => Array.from({ length: 1 + Math.floor(r() * 3) }, () => syl[Math.floor(r() * syl.length)]).join('');
  const vocab = Array.from({ length: 4000 }, word);
  const ident = () => {
    const a = vocab[Math.floor(r() * vocab.length)];
    const b = vocab[Math.floor(r() * vocab.length)];
    return r() < 0.5 ? `${a}${b[0].toUpperCase()}${b.slice(1)}` : `src/${a}/${b}.ts`;
  };
  const perItem = Math.floor((mb * 1048576) / count) - 120; // the rest of an item's JSON: namespace, key, tags
  batch = Array.from({ length: count }, (_, i) => {
    const words: string[] = [];
    let len = 0;
    while (len < perItem) {
      const w = r() < 0.1 ? ident() : vocab[Math.floor(r() * vocab.length)];
      words.push(w);
      len += w.length + 1;
    }
    return {
      namespace: `project.stall.batch${i % 8}`,
      key: `item-${i}`,
      value: words.join(' ').slice(0, perItem),
      tags: ['stall', `t${i % 16}`],
      kind: 'note' as const,
    };
  });
}

const ops: Record<string, () => Promise<unknown>> = {
  build: async () => {
    build();
    client = await StreamClient.connect(socket);
    return { bytes: Buffer.byteLength(JSON.stringify({ items: batch })) };
  },
  send: async () => {
    const res = await client!.call(R.upsertBatch, { items: batch });
    return {
      ok: res.results.filter((x) => x.ok).length,
      failed: res.results.filter((x) => !x.ok).length,
      bytes: Buffer.byteLength(JSON.stringify({ items: batch })),
      chunks: 1,
    };
  },
};

process.on('message', (m: { op: string }) => {
  ops[m.op]().then(
    (detail) => process.send!({ ok: true, detail }),
    (e: Error) => process.send!({ ok: false, error: e?.message ?? String(e) }),
  );
});
