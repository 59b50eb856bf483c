/**
 * Episodic memory on the SQLite store, through the Core: idempotent append, the total order of events, scope in
 * every arm and on every path by id, secrets kept from agents, erasure of an episode, time phrases in search,
 * proposals with provenance, and the typed errors of bad input.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type * as T from '../../daemon/src/protocol/types';
import type { Core } from '../../daemon/src/server/core';
import type { TeamRouter } from '../../daemon/src/team/router';
import { attachEventVectors as attachVectors } from '../event-vectors-fixture';
import { rejectsWith, tempCore, until } from '../helpers';

const A = { root: 'project.a', includeUser: false };
const B = { root: 'project.b', includeUser: false };

async function episode(core: Core, namespace: string, title = 'session', extra: Partial<T.EpisodeStartParams> = {}) {
  return (await core.call(R.episodesStart, { namespace, title, ...extra })).episode;
}

describe('episodes and events', () => {
  it('appends idempotently per (episode, seq), in one total order across episodes', async () => {
    const t = tempCore();
    try {
      const e1 = await episode(t.core, 'project.a');
      const e2 = await episode(t.core, 'project.a');
      const a = await t.core.call(R.eventsAppend, {
        episodeId: e1.id,
        events: [
          { seq: 0, kind: 'user', text: 'first' },
          { seq: 1, kind: 'agent', text: 'second' },
        ],
      });
      const b = await t.core.call(R.eventsAppend, { episodeId: e2.id, events: [{ kind: 'note', text: 'other episode' }] });
      const c = await t.core.call(R.eventsAppend, { episodeId: e1.id, events: [{ kind: 'user', text: 'third (seq assigned)' }] });
      assert.deepEqual(
        [...a.results, ...b.results, ...c.results].map((r) => r.position),
        [1, 2, 3, 4],
      );
      assert.deepEqual(c.results[0].seq, 2);
      assert.equal(b.results[0].seq, 0);
      // A retried batch (same seqs) appends nothing and answers the stored positions; a changed text does not overwrite.
      const retry = await t.core.call(R.eventsAppend, {
        episodeId: e1.id,
        events: [
          { seq: 0, kind: 'user', text: 'first' },
          { seq: 1, kind: 'agent', text: 'something else' },
          { seq: 5, kind: 'note', text: 'new one' },
        ],
      });
      assert.deepEqual(
        retry.results.map((r) => [r.seq, r.position, r.created]),
        [
          [0, 1, false],
          [1, 2, false],
          [5, 5, true],
        ],
      );
      const got = await t.core.call(R.episodesGet, { id: e1.id });
      assert.deepEqual(
        got.events.map((e) => [e.seq, e.text]),
        [
          [0, 'first'],
          [1, 'second'],
          [2, 'third (seq assigned)'],
          [5, 'new one'],
        ],
      );
      assert.equal(got.episode.events, 4);
      // Paging through an episode's events.
      const p1 = await t.core.call(R.episodesGet, { id: e1.id, limit: 3 });
      assert.equal(p1.nextSeq, 2);
      const p2 = await t.core.call(R.episodesGet, { id: e1.id, limit: 3, afterSeq: p1.nextSeq! });
      assert.deepEqual(
        p2.events.map((e) => e.seq),
        [5],
      );
      assert.equal(p2.nextSeq, null);
      // Starting a client-chosen id again returns the stored episode.
      const s1 = await t.core.call(R.episodesStart, { id: 'session-0001', namespace: 'project.a', title: 'x' });
      const s2 = await t.core.call(R.episodesStart, { id: 'session-0001', namespace: 'project.a', title: 'y' });
      assert.equal(s1.created, true);
      assert.equal(s2.created, false);
      assert.equal(s2.episode.title, 'x');
      await rejectsWith(t.core.call(R.episodesStart, { id: 'session-0001', namespace: 'project.b', title: 'x' }), 'InvalidState', 'id');
    } finally {
      t.close();
    }
  });

  it('refuses bad input with typed errors, and events after the end of an episode', async () => {
    const t = tempCore();
    try {
      const e = await episode(t.core, 'project.a');
      await rejectsWith(t.core.call(R.episodesStart, { namespace: 'Project..A', title: 'x' }), 'InvalidNamespace', 'namespace');
      await rejectsWith(t.core.request(R.episodesStart.method, { namespace: 'project.a' }), 'InvalidParams', 'title');
      await rejectsWith(
        t.core.request(R.eventsAppend.method, { episodeId: e.id, events: [{ kind: 'Not A Kind', text: 'x' }] }),
        'InvalidParams',
        'events[0].kind',
      );
      await rejectsWith(t.core.request(R.eventsAppend.method, { episodeId: e.id, events: [] }), 'InvalidParams', 'events');
      await rejectsWith(
        t.core.request(R.eventsAppend.method, { episodeId: e.id, events: [{ kind: 'note', text: 'x', at: 'yesterday' }] }),
        'InvalidParams',
        'events[0].at',
      );
      await rejectsWith(
        t.core.call(R.eventsAppend, { episodeId: 'no-such-episode', events: [{ kind: 'note', text: 'x' }] }),
        'NotFound',
        'episodeId',
      );
      await rejectsWith(t.core.call(R.episodesEnd, { id: e.id, endedAt: '2000-01-01T00:00:00Z' }), 'InvalidParams', 'endedAt');
      await rejectsWith(t.core.call(R.episodesList, { cursor: 'bogus' }), 'InvalidParams', 'cursor');
      await rejectsWith(t.core.call(R.eventsExpand, { position: 1, before: 1, windowMinutes: 5 }), 'NotFound', 'position');
      await t.core.call(R.eventsAppend, { episodeId: e.id, events: [{ seq: 0, kind: 'note', text: 'x' }] });
      await rejectsWith(t.core.call(R.eventsExpand, { position: 1, before: 1, windowMinutes: 5 }), 'InvalidParams', 'windowMinutes');
      const ended = await t.core.call(R.episodesEnd, { id: e.id });
      assert.ok(ended.endedAt);
      await rejectsWith(
        t.core.call(R.eventsAppend, { episodeId: e.id, events: [{ kind: 'note', text: 'late' }] }),
        'InvalidState',
        'events[0]',
      );
      // ...but a retry of an event stored before the end still answers its position.
      const retry = await t.core.call(R.eventsAppend, { episodeId: e.id, events: [{ seq: 0, kind: 'note', text: 'x' }] });
      assert.deepEqual(retry.results[0], { seq: 0, position: 1, created: false });
    } finally {
      t.close();
    }
  });

  it('refuses team namespaces with a typed error before writing anything', async () => {
    const t = tempCore();
    try {
      t.core.team = { claims: () => false, isTeam: (ns: string) => ns === 'team' || ns.startsWith('team.') } as unknown as TeamRouter;
      const data = await rejectsWith(t.core.call(R.episodesStart, { namespace: 'team.web', title: 'x' }), 'InvalidState', 'namespace');
      assert.equal(data.store, 'team');
      assert.equal((await t.core.call(R.episodesList, {})).episodes.length, 0);
    } finally {
      t.close();
    }
  });

  it('keeps every arm and every path by id inside the scope, before ranking', async () => {
    const t = tempCore();
    try {
      const ev = attachVectors(t.core);
      const a = await episode(t.core, 'project.a', 'a session');
      const b = await episode(t.core, 'project.b', 'b session');
      // project.b holds many better matches; a scoped top-1 must still find project.a's event.
      await t.core.call(R.eventsAppend, {
        episodeId: b.id,
        events: Array.from({ length: 30 }, (_, i) => ({ kind: 'user', text: `flaky websocket reconnect test flaky websocket ${i}` })),
      });
      const mine = await t.core.call(R.eventsAppend, {
        episodeId: a.id,
        events: [
          { kind: 'user', text: 'the websocket test is flaky on reconnect' },
          { kind: 'agent', text: 'unrelated words about parsers' },
        ],
      });
      await until('event vectors', () => ev.watermark() >= mine.position);
      for (const mode of ['fts', 'vector', 'hybrid'] as const) {
        const r = await t.core.call(R.eventsSearch, { query: 'flaky websocket reconnect', scope: A, mode, limit: 1 });
        assert.equal(r.mode, mode);
        assert.equal(r.degraded, undefined);
        assert.equal(r.hits.length, 1, mode);
        assert.equal(r.hits[0].position, mine.results[0].position, mode);
        assert.equal(r.hits[0].episode.namespace, 'project.a');
        const all = await t.core.call(R.eventsSearch, { query: 'flaky websocket reconnect', scope: A, mode, limit: 50 });
        assert.ok(
          all.hits.every((h) => h.episode.namespace === 'project.a'),
          mode,
        );
      }
      const inB = 1; // b's first event
      await rejectsWith(t.core.call(R.eventsExpand, { position: inB, scope: A }), 'NotFound', 'position');
      await rejectsWith(t.core.call(R.episodesTimeline, { anchor: inB, scope: A }), 'NotFound', 'anchor');
      await rejectsWith(t.core.call(R.episodesGet, { id: b.id, scope: A }), 'NotFound', 'id');
      await rejectsWith(t.core.call(R.episodesEnd, { id: b.id, scope: A }), 'NotFound', 'id');
      await rejectsWith(t.core.call(R.episodesErase, { id: b.id, scope: A }), 'NotFound', 'id');
      await rejectsWith(
        t.core.call(R.eventsAppend, { episodeId: b.id, events: [{ kind: 'note', text: 'x' }], scope: A }),
        'NotFound',
        'episodeId',
      );
      await rejectsWith(t.core.call(R.episodesPropose, { events: [inB], key: 'k', value: 'v', scope: A }), 'NotFound', 'events[0]');
      await rejectsWith(t.core.call(R.episodesStart, { namespace: 'project.b', title: 'x', scope: A }), 'NotFound', 'namespace');
      // The timeline around a's event never lists b's events, although they are nearer in time.
      const tl = await t.core.call(R.episodesTimeline, { anchor: mine.results[1].position, scope: A, before: 10, after: 10 });
      assert.deepEqual(
        tl.entries.map((e) => e.position),
        mine.results.map((r) => r.position),
      );
      assert.deepEqual(
        (await t.core.call(R.episodesList, { scope: B })).episodes.map((e) => e.id),
        [b.id],
      );
      // A deleted namespace hides its episodes from every read.
      await t.core.call(R.namespacesDelete, { path: 'project.b' });
      // (a's second event matches too, through the text of the event before it: events_fts's `prev` column)
      assert.deepEqual(
        (await t.core.call(R.eventsSearch, { query: 'flaky websocket', mode: 'fts' })).hits.map((h) => h.position),
        mine.results.map((r) => r.position),
      );
      await rejectsWith(t.core.call(R.episodesGet, { id: b.id }), 'NotFound', 'id');
      await ev.stop();
    } finally {
      t.close();
    }
  });

  it('tags credentials secret on append and keeps them from agents (excludeSecrets)', async () => {
    const t = tempCore();
    try {
      const e = await episode(t.core, 'project.a');
      const r = await t.core.call(R.eventsAppend, {
        episodeId: e.id,
        events: [
          { kind: 'command', text: 'export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE for the deploy' },
          { kind: 'note', text: 'the deploy uses the staging bucket' },
          { kind: 'note', text: 'the deploy password is in the vault', secret: true },
        ],
      });
      assert.equal(r.results[0].warnings?.[0].code, 'credential');
      assert.equal(r.results[1].warnings, undefined);
      const user = await t.core.call(R.eventsSearch, { query: 'deploy', mode: 'fts' });
      assert.equal(user.hits.length, 3);
      assert.deepEqual(
        user.hits
          .filter((h) => h.event.secret)
          .map((h) => h.position)
          .sort(),
        [1, 3],
      );
      const agent = await t.core.call(R.eventsSearch, { query: 'deploy', mode: 'fts', excludeSecrets: true, expand: 2 });
      assert.deepEqual(
        agent.hits.map((h) => h.position),
        [2],
      );
      assert.deepEqual(
        agent.hits[0].context!.map((x) => x.position),
        [2],
      );
      assert.deepEqual(
        (await t.core.call(R.episodesGet, { id: e.id, excludeSecrets: true })).events.map((x) => x.position),
        [2],
      );
      assert.deepEqual(
        (await t.core.call(R.eventsExpand, { position: 2, excludeSecrets: true })).events.map((x) => x.position),
        [2],
      );
      assert.deepEqual(
        (await t.core.call(R.episodesTimeline, { anchor: 2, excludeSecrets: true })).entries.map((x) => x.position),
        [2],
      );
      await rejectsWith(t.core.call(R.eventsExpand, { position: 1, excludeSecrets: true }), 'NotFound', 'position');
      await rejectsWith(t.core.call(R.episodesTimeline, { anchor: 3, excludeSecrets: true }), 'NotFound', 'anchor');
      await rejectsWith(
        t.core.call(R.episodesPropose, { events: [2, 1], key: 'k', value: 'v', excludeSecrets: true }),
        'NotFound',
        'events[1]',
      );
    } finally {
      t.close();
    }
  });

  it('reads time phrases against the newest event in scope, or the reference given, and says how', async () => {
    const t = tempCore();
    try {
      const old = await episode(t.core, 'project.a', 'april', { startedAt: '2023-04-20T09:00:00Z' });
      const recent = await episode(t.core, 'project.a', 'may', { startedAt: '2023-05-09T09:00:00Z' });
      await t.core.call(R.eventsAppend, {
        episodeId: old.id,
        events: [{ kind: 'user', text: 'we chose postgres for the queue', at: '2023-04-20T09:00:00Z' }],
      });
      await t.core.call(R.eventsAppend, {
        episodeId: recent.id,
        events: [
          { kind: 'user', text: 'we chose redis for the queue', at: '2023-05-09T09:00:00Z' },
          { kind: 'agent', text: 'done with the cache', at: '2023-05-10T12:00:00Z' },
        ],
      });
      // The newest event (10 May) is the reference: "yesterday" is 9 May, whatever the clock says.
      const y = await t.core.call(R.eventsSearch, { query: 'queue yesterday', mode: 'fts' });
      assert.deepEqual(
        y.hits.map((h) => h.event.text),
        ['we chose redis for the queue'],
      );
      assert.equal(y.time?.phrase, 'yesterday');
      assert.equal(y.time?.referenceFrom, 'newest-event');
      assert.equal(y.time?.since, '2023-05-09T00:00:00.000Z');
      assert.match(y.time!.reading, /2023-05-09/);
      const april = await t.core.call(R.eventsSearch, { query: 'what did we choose for the queue in April', mode: 'fts' });
      assert.deepEqual(
        april.hits.map((h) => h.event.text),
        ['we chose postgres for the queue'],
      );
      // A reference given by the caller wins; the phrase narrows, never widens, a range given.
      const given = await t.core.call(R.eventsSearch, { query: 'queue last month', reference: '2023-05-15T00:00:00Z', mode: 'fts' });
      assert.equal(given.time?.referenceFrom, 'param');
      assert.deepEqual(
        given.hits.map((h) => h.event.text),
        ['we chose postgres for the queue'],
      );
      const narrowed = await t.core.call(R.eventsSearch, { query: 'queue in May', since: '2023-05-11T00:00:00Z', mode: 'fts' });
      assert.equal(narrowed.hits.length, 0);
      const matchedByPrev = await t.core.call(R.eventsSearch, { query: 'queue in May', since: '2023-05-10T00:00:00Z', mode: 'fts' });
      assert.deepEqual(
        matchedByPrev.hits.map((h) => h.event.text),
        ['done with the cache'], // found through the event before it, which names the queue
      );
      // Only a phrase: the events of the range, newest first; timePhrases: false searches the words as given.
      const onlyPhrase = await t.core.call(R.eventsSearch, { query: 'in May' });
      assert.deepEqual(
        onlyPhrase.hits.map((h) => h.event.text),
        ['done with the cache', 'we chose redis for the queue'],
      );
      const literal = await t.core.call(R.eventsSearch, { query: 'queue yesterday', mode: 'fts', timePhrases: false });
      assert.equal(literal.time, undefined);
      assert.deepEqual(
        literal.hits.map((h) => h.event.text).sort(),
        ['done with the cache', 'we chose postgres for the queue', 'we chose redis for the queue'], // all of them: no date range
      );
      await rejectsWith(t.core.request(R.eventsSearch.method, { query: 'x', reference: 'last tuesday' }), 'InvalidParams', 'reference');
      // Time range and other filters on the events and their episodes.
      const filtered = await t.core.call(R.eventsSearch, { query: 'queue cache', kinds: ['agent'], mode: 'fts' });
      assert.deepEqual(
        filtered.hits.map((h) => h.event.kind),
        ['agent'],
      );
      assert.equal((await t.core.call(R.eventsSearch, { query: 'queue', sources: ['ci'], mode: 'fts' })).hits.length, 0);
    } finally {
      t.close();
    }
  });

  it('lists episodes by time, task, source and branch, in pages', async () => {
    const t = tempCore();
    try {
      for (let i = 0; i < 5; i++)
        await episode(t.core, 'project.a', `e${i}`, {
          startedAt: `2023-05-0${i + 1}T00:00:00Z`,
          source: i % 2 ? 'ci' : 'agent:x',
          branch: i < 2 ? 'main' : 'feature',
          ...(i === 3 ? { taskId: 'task-1' } : {}),
        });
      const titles = async (p: T.EpisodeListParams) => (await t.core.call(R.episodesList, p)).episodes.map((e) => e.title);
      assert.deepEqual(await titles({}), ['e4', 'e3', 'e2', 'e1', 'e0']);
      assert.deepEqual(await titles({ source: 'ci' }), ['e3', 'e1']);
      assert.deepEqual(await titles({ branch: 'main' }), ['e1', 'e0']);
      assert.deepEqual(await titles({ taskId: 'task-1' }), ['e3']);
      assert.deepEqual(await titles({ since: '2023-05-02T00:00:00Z', before: '2023-05-04T00:00:00Z' }), ['e2', 'e1']);
      const p1 = await t.core.call(R.episodesList, { limit: 2 });
      const p2 = await t.core.call(R.episodesList, { limit: 2, cursor: p1.nextCursor! });
      assert.deepEqual(
        [...p1.episodes, ...p2.episodes].map((e) => e.title),
        ['e4', 'e3', 'e2', 'e1'],
      );
      const first = (await t.core.call(R.episodesList, { limit: 1 })).episodes[0];
      await t.core.call(R.episodesEnd, { id: first.id });
      assert.deepEqual(await titles({ open: true }), ['e3', 'e2', 'e1', 'e0']);
    } finally {
      t.close();
    }
  });

  it('expands an event in its episode (counts or a time window) and proposes a memory with provenance', async () => {
    const t = tempCore();
    try {
      const e = await episode(t.core, 'project.a');
      const base = Date.parse('2023-05-10T10:00:00Z');
      await t.core.call(R.eventsAppend, {
        episodeId: e.id,
        events: Array.from({ length: 10 }, (_, i) => ({ kind: 'note', text: `step ${i}`, at: new Date(base + i * 60_000).toISOString() })),
      });
      const ex = await t.core.call(R.eventsExpand, { position: 5, before: 2, after: 1 });
      assert.deepEqual(
        ex.events.map((x) => x.text),
        ['step 2', 'step 3', 'step 4', 'step 5'],
      );
      assert.equal(ex.anchor, 5);
      const win = await t.core.call(R.eventsExpand, { position: 5, windowMinutes: 1 });
      assert.deepEqual(
        win.events.map((x) => x.text),
        ['step 3', 'step 4', 'step 5'],
      );
      const old = await t.core.call(R.upsert, { namespace: 'project.a', key: 'steps', value: 'there are nine steps' });
      const p = await t.core.call(R.episodesPropose, {
        events: [5, 6, 5],
        key: 'step-count',
        value: 'there are ten steps',
        supersedes: old.memory.id,
      });
      assert.equal(p.memory.status, 'proposed');
      assert.equal(p.memory.namespace, 'project.a');
      assert.deepEqual(p.sourceEvents, [5, 6]);
      assert.equal(p.memory.properties.sourceEvents, '5,6');
      assert.equal(p.memory.properties.sourceEpisodes, e.id);
      // In the review queue: listed only with proposed included.
      assert.equal(
        (await t.core.call(R.list, { scope: A })).items.some((m) => m.id === p.memory.id),
        false,
      );
      assert.equal(
        (await t.core.call(R.list, { scope: A, include: { proposed: true } })).items.some((m) => m.id === p.memory.id),
        true,
      );
    } finally {
      t.close();
    }
  });

  it('index/wait brings the events full text up to the newest event; store/status counts episodes and events', async () => {
    const t = tempCore();
    try {
      const e = await episode(t.core, 'project.a');
      await t.core.call(R.eventsAppend, {
        episodeId: e.id,
        events: [
          { kind: 'note', text: 'hello' },
          { kind: 'note', text: 'world' },
        ],
      });
      const w = await t.core.call(R.indexWait, { position: 0 });
      assert.deepEqual(w.events, { position: 2, fts: 2, vector: null, reached: true });
      const row = t.store.db.prepare(`SELECT watermark FROM index_state WHERE name = 'events_fts'`).get() as { watermark: number };
      assert.equal(row.watermark, 2);
      const st = await t.core.call(R.status, {});
      assert.deepEqual(st.episodes, { episodes: 1, events: 2, position: 2 });
      assert.deepEqual(
        st.indexes.filter((i) => i.name.startsWith('events')),
        [{ name: 'events_fts', watermark: 2, behind: 0 }], // no events_vec: nothing embeds events in this process
      );
    } finally {
      t.close();
    }
  });
});

/** Occurrences of a marker in the raw bytes of the store files. */
function copiesOnDisk(db: string, needle: string): number {
  let n = 0;
  for (const f of [db, db + '-wal', db + '-shm']) {
    if (!fs.existsSync(f)) continue;
    const buf = fs.readFileSync(f);
    for (let i = buf.indexOf(needle); i !== -1; i = buf.indexOf(needle, i + 1)) n++;
  }
  return n;
}

describe('episodes/erase', () => {
  it('removes the episode, its events, index rows and vectors, leaving no copy of the text on disk', async () => {
    const t = tempCore();
    const db = path.join(t.dir, 'cairn.db');
    const MARK = 'wombatquasarmarker';
    const CORE = 'batquasarma'; // inside the stemmed, prefix-compressed term the full-text index stores
    try {
      const ev = attachVectors(t.core);
      const keep = await episode(t.core, 'project.a', 'keep');
      await t.core.call(R.eventsAppend, {
        episodeId: keep.id,
        events: Array.from({ length: 200 }, (_, i) => ({ kind: 'note', text: `unrelated event ${i} about parsers` })),
      });
      const gone = await episode(t.core, 'project.a', 'gone');
      const r = await t.core.call(R.eventsAppend, {
        episodeId: gone.id,
        events: [
          { kind: 'user', text: `the ${MARK} is here` },
          { kind: 'agent', text: `${MARK} again` },
        ],
      });
      await until('event vectors', () => ev.watermark() >= r.position);
      assert.equal((await t.core.call(R.eventsSearch, { query: MARK, mode: 'fts' })).hits.length, 2);
      t.store.checkpoint();
      assert.ok(copiesOnDisk(db, CORE) > 0);
      const er = await t.core.call(R.episodesErase, { id: gone.id });
      assert.deepEqual({ events: er.events, vectors: er.vectors }, { events: 2, vectors: 2 });
      assert.equal(er.walTruncated, true);
      assert.equal((await t.core.call(R.eventsSearch, { query: MARK, mode: 'fts' })).hits.length, 0);
      await rejectsWith(t.core.call(R.episodesGet, { id: gone.id }), 'NotFound', 'id');
      await rejectsWith(t.core.call(R.eventsExpand, { position: r.position }), 'NotFound', 'position');
      assert.equal(copiesOnDisk(db, CORE), 0);
      // Positions are never reused: the next event gets a new one.
      const next = await t.core.call(R.eventsAppend, { episodeId: keep.id, events: [{ kind: 'note', text: 'after' }] });
      assert.equal(next.results[0].position, r.position + 1);
      assert.equal((await t.core.call(R.episodesGet, { id: keep.id, limit: 0 })).episode.events, 201);
      await ev.stop();
      t.store.close();
      assert.equal(copiesOnDisk(db, CORE), 0);
    } finally {
      t.close();
    }
  });
});
