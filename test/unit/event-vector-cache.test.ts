/**
 * The events' vector arm over its in-memory copy (store/event-vector-cache.ts): scope and filters before scoring,
 * events embedded after a scan found by the next, and the copy dropped with an erased episode or a model change.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { eventVectorArm, resetEventVectors } from '../../daemon/src/store/events-search';
import { attachEventVectors } from '../event-vectors-fixture';
import { tempCore, until } from '../helpers';

let DIM = 64;
const embed = (text: string) => {
  const v = new Float32Array(DIM);
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 0;
    for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    v[h % DIM] += 1;
  }
  let n = 0;
  for (const x of v) n += x * x;
  return v.map((x) => x / Math.sqrt(n || 1));
};

describe('event vector arm (in-memory copy)', () => {
  for (const dim of [64, 60])
    it(`scores only what scope and filters admit, follows appends, and forgets erased episodes and old models (${dim}-d: ${dim % 16 ? 'JavaScript loop' : 'SIMD kernel'})`, async () => {
      DIM = dim;
      const t = tempCore();
      try {
        const ev = attachEventVectors(t.core, embed);
        const db = t.core.store.db;
        const start = async (namespace: string, title: string) =>
          (await t.core.call(R.episodesStart, { namespace, title, startedAt: '2024-01-01T00:00:00Z' })).episode;
        const a = await start('project.a', 'a');
        const b = await start('project.b', 'b');
        const inB = await t.core.call(R.eventsAppend, {
          episodeId: b.id,
          events: [{ kind: 'user', text: 'websocket reconnect flaky', at: '2024-01-01T00:00:00Z' }],
        });
        const inA = await t.core.call(R.eventsAppend, {
          episodeId: a.id,
          events: [
            { kind: 'user', text: 'websocket reconnect flaky', at: '2024-01-01T00:00:00Z' },
            { kind: 'agent', text: 'websocket reconnect fixed', at: '2024-01-02T00:00:00Z' },
            { kind: 'note', text: 'websocket reconnect token', at: '2024-01-03T00:00:00Z', secret: true },
          ],
        });
        await until('event vectors', () => ev.watermark() >= inA.position);
        const q = embed('websocket reconnect flaky');
        const A = { root: 'project.a', includeUser: false };
        const posA = inA.results.map((r) => r.position);
        const arm = (extra: object = {}) => eventVectorArm(db, q, { scope: A, limit: 10, ...extra }).map((h) => h.pos);
        assert.deepEqual(arm().sort(), posA, 'project.a only');
        assert.equal(arm()[0], posA[0], 'the same words first');
        assert.equal(eventVectorArm(db, q, { limit: 10 }).length, 4, 'unscoped: every event');
        assert.deepEqual(
          eventVectorArm(db, q, { limit: 10, scope: { root: 'project.b', includeUser: false } }).map((h) => h.pos),
          [inB.results[0].position],
        );
        assert.deepEqual(arm({ kinds: ['agent'] }), [posA[1]]);
        assert.deepEqual(arm({ since: Date.parse('2024-01-02T00:00:00Z') }).sort(), [posA[1], posA[2]]);
        assert.deepEqual(arm({ before: Date.parse('2024-01-02T00:00:00Z') }), [posA[0]]);
        assert.deepEqual(arm({ excludeSecrets: true }), [posA[0], posA[1]]);
        assert.deepEqual(arm({ episodeId: b.id }), []);
        assert.deepEqual(arm({ sources: ['ci'] }), []);
        assert.deepEqual(arm({ limit: 1 }), [posA[0]]);

        // An event embedded after the first scan is found by the next.
        const more = await t.core.call(R.eventsAppend, {
          episodeId: a.id,
          events: [{ kind: 'user', text: 'websocket reconnect flaky again' }],
        });
        await until('event vectors', () => ev.watermark() >= more.position);
        assert.ok(arm().includes(more.results[0].position));

        // A deleted namespace's episodes are out of every scan; an erased episode's events too.
        await t.core.call(R.namespacesDelete, { path: 'project.b' });
        assert.deepEqual(
          eventVectorArm(db, q, { limit: 10 })
            .map((h) => h.pos)
            .includes(inB.results[0].position),
          false,
        );
        await t.core.call(R.episodesErase, { id: a.id });
        assert.deepEqual(eventVectorArm(db, q, { limit: 10 }), []);

        // The copy is dropped with an erased episode: a newer episode may take its rowid and must not inherit its events.
        const d = await start('project.a', 'd');
        const inD = await t.core.call(R.eventsAppend, { episodeId: d.id, events: [{ kind: 'user', text: 'websocket reconnect flaky' }] });
        await until('event vectors', () => ev.watermark() >= inD.position);
        assert.deepEqual(arm(), [inD.results[0].position]);
        await t.core.call(R.episodesErase, { id: d.id });
        await start('project.a', 'e');
        assert.deepEqual(arm(), []);

        // A model change drops every vector: nothing is scored until the new model's vectors are written.
        const c = await start('project.a', 'c');
        const inC = await t.core.call(R.eventsAppend, { episodeId: c.id, events: [{ kind: 'user', text: 'websocket reconnect' }] });
        await until('event vectors', () => ev.watermark() >= inC.position);
        assert.equal(eventVectorArm(db, q, { scope: A, limit: 10 }).length, 1);
        await ev.stop();
        resetEventVectors(db, 'another-model');
        assert.deepEqual(eventVectorArm(db, q, { scope: A, limit: 10 }), []);
      } finally {
        t.close();
      }
    });
});
