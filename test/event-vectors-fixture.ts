/** The daemon's event embedder over a stand-in embedding, for tests of the events' vector arm (no model needed). */
import { EventVectors } from '../daemon/src/index/event-vectors';
import type { Indexer } from '../daemon/src/index/indexer';
import type { Core } from '../daemon/src/server/core';

/** A stand-in embedding: hashed bag of words over 64 dimensions (deterministic), so the vector arm can be tested exactly. */
export function bagOfWords(text: string): Float32Array {
  const v = new Float32Array(64);
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 0;
    for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    v[h % 64] += 1;
  }
  return v;
}

/** The event embedder over `embed`, wired into the Core as the daemon wires it (index/attach.ts). */
export function attachEventVectors(core: Core, embed: (text: string) => Float32Array = bagOfWords): EventVectors {
  const fake = {
    state: 'ready',
    model: { model: 'test-bag-of-words' },
    embedder: { embed: async (texts: string[]) => texts.map(embed) },
    unavailable: () => null,
    indexUnavailable: () => null,
    modelUnavailable: () => null,
    indexing: () => true,
  } as unknown as Indexer;
  const ev = new EventVectors(core.store, fake, () => {});
  core.hooks.eventVectors = ev;
  core.episodes.onAppend = () => ev.kick();
  return ev;
}
