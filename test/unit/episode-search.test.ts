/**
 * episodes/search: episodes ranked by their matching events (the best, plus each next one worth half the one
 * before), scope and filters inside the arms, the best events shown per episode, time phrases, degraded full text
 * without vectors, and the typed errors of bad input.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type * as T from '../../daemon/src/protocol/types';
import { episodeScore, rankEpisodes } from '../../daemon/src/retrieval/episode-search';
import type { Core } from '../../daemon/src/server/core';
import { attachEventVectors as attachVectors } from '../event-vectors-fixture';
import { rejectsWith, tempCore, until } from '../helpers';

const A = { root: 'project.a', includeUser: false };

async function episode(core: Core, namespace: string, title: string, extra: Partial<T.EpisodeStartParams> = {}) {
  return (await core.call(R.episodesStart, { namespace, title, ...extra })).episode;
}

describe('episodes/search ranking rule', () => {
  it('scores an episode by its best event plus each next one at half the weight of the one before', () => {
    assert.equal(episodeScore([0.25, 1, 0.5]), 1 + 0.25 + 0.0625);
    assert.equal(episodeScore([]), 0);
    // Two good matches beat one slightly better match (the best-event-only order would put `one` first) ...
    const r = rankEpisodes([
      { pos: 10, ep: 1, score: 1.0 },
      { pos: 20, ep: 2, score: 0.9 },
      { pos: 21, ep: 2, score: 0.8 },
    ]);
    assert.deepEqual(
      r.map((x) => x.ep),
      [2, 1],
    );
    assert.deepEqual(
      r[0].events.map((e) => e.pos),
      [20, 21],
    );
    // ... but many weak matches never outweigh one strong one (the sum is bounded by twice the best).
    const weak = Array.from({ length: 30 }, (_, i) => ({ pos: 100 + i, ep: 3, score: 0.45 }));
    assert.deepEqual(
      rankEpisodes([{ pos: 1, ep: 4, score: 1.0 }, ...weak]).map((x) => x.ep),
      [4, 3],
    );
  });
});

describe('episodes/search', () => {
  it('ranks the episodes in scope by their matching events and shows the best events of each', async () => {
    const t = tempCore();
    try {
      const deploy = await episode(t.core, 'project.a', 'deploy day', { startedAt: '2023-05-09T09:00:00Z' });
      const lunch = await episode(t.core, 'project.a', 'lunch', { startedAt: '2023-05-02T09:00:00Z' });
      const other = await episode(t.core, 'project.b', 'their deploy', { startedAt: '2023-05-09T10:00:00Z' });
      const d = await t.core.call(R.eventsAppend, {
        episodeId: deploy.id,
        events: [
          { kind: 'user', text: 'the canary deploy failed on the staging cluster', at: '2023-05-09T09:00:00Z' },
          { kind: 'agent', text: 'rolled the canary back', at: '2023-05-09T09:01:00Z' },
          { kind: 'command', text: 'kubectl rollout status', at: '2023-05-09T09:02:00Z' },
          { kind: 'note', text: 'the canary deploy passed after the fix', at: '2023-05-09T09:03:00Z' },
        ],
      });
      await t.core.call(R.eventsAppend, {
        episodeId: lunch.id,
        events: [
          { kind: 'user', text: 'where do we eat today', at: '2023-05-02T09:00:00Z' },
          { kind: 'agent', text: 'the canteen, then a deploy of the menu site', at: '2023-05-02T09:01:00Z' },
        ],
      });
      await t.core.call(R.eventsAppend, {
        episodeId: other.id,
        events: Array.from({ length: 10 }, (_, i) => ({ kind: 'user', text: `canary deploy canary deploy ${i}` })),
      });

      // Without an embedding model, hybrid answers from full text and says so.
      const r = await t.core.call(R.episodesSearch, { query: 'canary deploy', scope: A });
      assert.equal(r.mode, 'fts');
      assert.match(r.degraded ?? '', /no embedding model/);
      assert.deepEqual(
        r.episodes.map((e) => e.episode.id),
        [deploy.id, lunch.id],
        'only the scope, the episode with more matches first',
      );
      assert.equal(r.episodes[0].episode.title, 'deploy day');
      assert.equal(r.episodes[0].episode.events, 4);
      assert.equal(r.episodes[0].hits.length, 3);
      assert.ok(r.episodes[0].hits.every((h) => d.results.some((x) => x.position === h.position)));
      assert.ok(r.episodes[0].score > r.episodes[1].score);
      assert.match(r.episodes[0].hits[0].snippet, /canary/);
      assert.equal(r.episodes[0].hits[0].at.slice(0, 10), '2023-05-09');

      const one = await t.core.call(R.episodesSearch, { query: 'canary deploy', scope: A, mode: 'fts', limit: 1, hits: 0 });
      assert.equal(one.mode, 'fts');
      assert.equal(one.degraded, undefined);
      assert.deepEqual(
        one.episodes.map((e) => [e.episode.id, e.hits.length]),
        [[deploy.id, 0]],
      );
      // Filters narrow the events inside the arms: only commands, only one source.
      assert.deepEqual(
        (await t.core.call(R.episodesSearch, { query: 'kubectl rollout', scope: A, kinds: ['command'] })).episodes.map((e) => e.episode.id),
        [deploy.id],
      );
      assert.equal((await t.core.call(R.episodesSearch, { query: 'canary', scope: A, sources: ['ci'] })).episodes.length, 0);
      // A time phrase is read against the newest event in scope (9 May): "last week" is the lunch's week.
      const week = await t.core.call(R.episodesSearch, { query: 'deploy last week', scope: A, mode: 'fts' });
      assert.equal(week.time?.phrase, 'last week');
      assert.deepEqual(
        week.episodes.map((e) => e.episode.id),
        [lunch.id],
      );
      // Only a phrase: the episodes of the range, the one with the newest event first.
      const may = await t.core.call(R.episodesSearch, { query: 'in May', scope: A });
      assert.deepEqual(
        may.episodes.map((e) => e.episode.id),
        [deploy.id, lunch.id],
      );
      assert.deepEqual((await t.core.call(R.episodesSearch, { query: '  ', scope: A })).episodes, []);
    } finally {
      t.close();
    }
  });

  it('fuses both arms when vectors serve, keeps secret events from agents, and refuses bad input with typed errors', async () => {
    const t = tempCore();
    try {
      const ev = attachVectors(t.core);
      const a = await episode(t.core, 'project.a', 'flaky tests');
      const s = await episode(t.core, 'project.a', 'secrets');
      await t.core.call(R.eventsAppend, {
        episodeId: a.id,
        events: [
          { kind: 'user', text: 'the websocket test is flaky on reconnect' },
          { kind: 'agent', text: 'retry the websocket reconnect with backoff' },
        ],
      });
      const last = await t.core.call(R.eventsAppend, {
        episodeId: s.id,
        events: [{ kind: 'note', text: 'websocket reconnect token is in the vault', secret: true }],
      });
      await until('event vectors', () => ev.watermark() >= last.position);
      const all = await t.core.call(R.episodesSearch, { query: 'websocket reconnect', scope: A });
      assert.equal(all.mode, 'hybrid');
      assert.equal(all.degraded, undefined);
      assert.deepEqual(all.episodes.map((e) => e.episode.id).sort(), [a.id, s.id].sort());
      const vec = await t.core.call(R.episodesSearch, { query: 'websocket reconnect', scope: A, mode: 'vector' });
      assert.equal(vec.mode, 'vector');
      assert.equal(vec.episodes[0].episode.id, a.id);
      const agent = await t.core.call(R.episodesSearch, { query: 'websocket reconnect', scope: A, excludeSecrets: true });
      assert.deepEqual(
        agent.episodes.map((e) => e.episode.id),
        [a.id],
      );
      await rejectsWith(t.core.request(R.episodesSearch.method, { query: 'x', limit: 0 }), 'InvalidParams');
      await rejectsWith(t.core.request(R.episodesSearch.method, { query: 'x', limit: 51 }), 'InvalidParams');
      await rejectsWith(t.core.request(R.episodesSearch.method, { query: 'x', hits: 11 }), 'InvalidParams');
      await rejectsWith(t.core.request(R.episodesSearch.method, { query: 'x', since: 'soon' }), 'InvalidParams');
      await rejectsWith(t.core.request(R.episodesSearch.method, { query: 'x', episodeId: a.id }), 'InvalidParams');
      await rejectsWith(
        t.core.request(R.episodesSearch.method, { query: 'x', scope: { root: 'Not A Namespace!' } }),
        'InvalidNamespace',
        'scope.root',
      );
      await ev.stop();
    } finally {
      t.close();
    }
  });

  it('leaves words in most events out of the full-text match while a rarer word remains (the common-term cut-off)', async () => {
    const t = tempCore();
    try {
      const e = await episode(t.core, 'project.a', 'logs');
      await t.core.call(R.eventsAppend, {
        episodeId: e.id,
        events: Array.from({ length: 1100 }, (_, i) => ({ kind: 'tool_result', text: `deploy log line ${i}` })),
      });
      const rare = await t.core.call(R.eventsAppend, {
        episodeId: e.id,
        events: [{ kind: 'note', text: 'a deploy rollback of the canary after the smoke tests failed twice' }],
      });
      // (its own episode: no event before it whose text the index holds with it)
      const other = await episode(t.core, 'project.a', 'other');
      const only = await t.core.call(R.eventsAppend, { episodeId: other.id, events: [{ kind: 'note', text: 'canary' }] });
      // 'deploy' (in 1,101 events) is left out of the disjunction, so the 1,100 log lines are not candidates; the event
      // holding both words still comes before the shorter one holding only 'canary'.
      const both = await t.core.call(R.eventsSearch, { query: 'deploy canary', mode: 'fts', limit: 10 });
      assert.deepEqual(
        both.hits.map((h) => h.position),
        [rare.results[0].position, only.results[0].position],
      );
      assert.ok(both.hits[0].score >= both.hits[1].score);
      // Only common words: the least common still matches.
      const common = await t.core.call(R.eventsSearch, { query: 'deploy', mode: 'fts', limit: 10 });
      assert.equal(common.hits.length, 10);
    } finally {
      t.close();
    }
  });
});
