/**
 * The event embedder: keeps `event_vectors` in step with the event log for the memory indexer's model, in bounded
 * batches after each append, with the same worker (embedding never runs on a request's path except the query's).
 * A model change drops the event vectors and embeds every event again. The vector arm of events/search serves
 * whatever is embedded (events not yet embedded are found by the full-text arm); index/wait waits for it.
 */
import { isBuiltinModelId } from '../embed';
import type { EventVectorSearcher } from '../retrieval/events';
import { FUSION, type Fusion } from '../retrieval/fusion';
import {
  contextText,
  eventsToEmbed,
  eventVectorModel,
  eventWatermark,
  newestEventPosition,
  putEventVectors,
  resetEventVectors,
} from '../store/events-search';
import { quantize, SIG_WORDS } from '../store/quantize';
import type { Store } from '../store/store';
import type { Indexer } from './indexer';

/** Event vectors keep no SimHash signature (their arm scores every admitted event): quantize is handed this one. */
const NO_SIGNATURE = new Int32Array(SIG_WORDS);

/** Events embedded per request to the worker. */
export const EVENT_EMBED_BATCH = 64;

/** The text an event's vector is computed from. */
export function eventEmbeddingText(e: { text: string; context: string | null }): string {
  const ctx = contextText(e.context);
  return ctx ? `${e.text}\n${ctx}` : e.text;
}

function unitVector(v: Float32Array): Float32Array {
  let ss = 0;
  for (let i = 0; i < v.length; i++) ss += v[i] * v[i];
  const n = Math.sqrt(ss);
  if (n === 0) return v;
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i] / n;
  return out;
}

export class EventVectors implements EventVectorSearcher {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private waiters: { position: number; resolve: () => void }[] = [];
  lastError: string | null = null;

  constructor(
    private readonly store: Store,
    private readonly indexer: Indexer,
    private readonly log: (m: string) => void,
  ) {}

  unavailable(): string | null {
    return this.indexer.modelUnavailable(); // the memories' index in memory is not needed here
  }

  fusion(): Fusion {
    const m = this.indexer.model?.model;
    return FUSION[m && isBuiltinModelId(m) ? 'builtin' : 'transformer'];
  }

  async embedQuery(text: string): Promise<Float32Array> {
    // Events another process appended (`cairn log --direct`) are embedded from the next search on.
    if (!this.running && this.watermark() < newestEventPosition(this.store.db)) this.kick();
    const [v] = await this.indexer.embedder!.embed([text], { priority: true });
    return unitVector(v);
  }

  watermark(): number {
    return eventWatermark(this.store.db, 'events_vec');
  }

  /** Start a pass (after an append, once the model is ready); a pass already running runs once more. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch((e: Error) => {
        if (this.stopped) return; // the model was closed under the pass: nothing failed
        this.lastError = `embedding events failed: ${e.message}`;
        this.log(this.lastError);
      })
      .finally(() => {
        this.running = null;
        this.wake();
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async pass(): Promise<void> {
    const model = this.indexer.model?.model;
    const embedder = this.indexer.embedder;
    if (!model || !embedder || !this.indexer.indexing()) return;
    const db = this.store.db;
    if (eventVectorModel(db) !== model) resetEventVectors(db, model);
    while (!this.stopped && db.open) {
      const rows = eventsToEmbed(db, EVENT_EMBED_BATCH);
      if (rows.length === 0) return;
      const vectors = await embedder.embed(rows.map(eventEmbeddingText));
      if (this.stopped || !db.open) return;
      const put = rows.map((r, i) => {
        const z = quantize(vectors[i], NO_SIGNATURE);
        return { pos: r.pos, q: z.q, inv: z.inv };
      });
      if (!putEventVectors(db, model, put, rows[rows.length - 1].pos)) return; // the model changed meanwhile
      this.wake();
    }
  }

  private wake(): void {
    const wm = this.store.db.open ? this.watermark() : Infinity;
    this.waiters = this.waiters.filter((w) => {
      if (w.position > wm && this.running) return true;
      w.resolve();
      return false;
    });
  }

  /** Wait (at most `ms`) until every event up to the newest one at the time of the call is embedded. */
  async waitForNewest(ms: number): Promise<{ position: number; vector: number; reached: boolean }> {
    const position = newestEventPosition(this.store.db);
    if (this.indexer.indexing() && this.watermark() < position) {
      this.kick();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        const w = { position, resolve: done };
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.push(w);
      });
    }
    const vector = this.watermark();
    return { position, vector, reached: vector >= position };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }
}
