/**
 * Episodes with team memory attached (docs/episodes.md#team): episodes live in the local store only, so every
 * episodes and events method refuses team namespaces (a namespace, or a scope of team namespaces only) with a typed
 * InvalidState before doing anything, import refuses episode records of team namespaces, and local episodes keep
 * working, in mixed scopes too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { rejectsWith } from '../helpers';
import { startPg, type PgServer } from './pg-server';
import { teamDaemon, type TeamDaemon } from './team-daemon';

describe('episodes on a daemon with team memory attached', () => {
  let pg: PgServer;
  let t: TeamDaemon;
  before(async () => {
    pg = await startPg();
    const db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.grant(db, 'alice', 'team', 'admin');
    t = await teamDaemon(pg.url('alice', db), { roots: ['team'] });
  });
  after(async () => {
    await t?.stop();
    await pg?.stop();
  });

  it('refuses team namespaces, typed, in every method; serves local episodes in a mixed scope', async () => {
    const start = await rejectsWith(t.client.call(R.episodesStart, { namespace: 'team.web', title: 'x' }), 'InvalidState', 'namespace');
    assert.equal(start.store, 'team');
    const ep = (await t.client.call(R.episodesStart, { namespace: 'project.mine', title: 'local session' })).episode;
    const pos = (await t.client.call(R.eventsAppend, { episodeId: ep.id, events: [{ kind: 'note', text: 'the heron release note' }] }))
      .results[0].position;
    const team = { root: 'team', includeUser: false };
    for (const call of [
      () => t.client.call(R.episodesList, { scope: team }),
      () => t.client.call(R.eventsSearch, { query: 'heron', scope: team }),
      () => t.client.call(R.episodesGet, { id: ep.id, scope: { namespaces: ['team.web'] } }),
      () => t.client.call(R.eventsExpand, { position: pos, scope: team }),
      () => t.client.call(R.episodesTimeline, { anchor: pos, scope: team }),
      () => t.client.call(R.episodesErase, { id: ep.id, scope: team }),
    ]) {
      const data = await rejectsWith(call(), 'InvalidState', 'scope');
      assert.equal(data.store, 'team');
    }
    const mixed = { namespaces: ['team.web', 'project.mine'], includeUser: false };
    const hits = (await t.client.call(R.eventsSearch, { query: 'heron', scope: mixed })).hits;
    assert.deepEqual(
      hits.map((h) => h.position),
      [pos],
    );
    const block = await t.client.call(R.injectBlock, { prompt: 'heron release', scope: mixed, events: 2 });
    assert.deepEqual(
      block.events?.map((e) => e.position),
      [pos],
    );
  });

  it('import refuses episode records of team namespaces before writing any', async () => {
    const ep = (await t.client.call(R.episodesStart, { namespace: 'project.mine', title: 'to export', id: 'export-me-1' })).episode;
    await t.client.call(R.eventsAppend, { episodeId: ep.id, events: [{ kind: 'note', text: 'exported note' }] });
    const { records } = await t.client.call(R.exportRecords, { scope: { root: 'project.mine', includeUser: false } });
    const epRec = records.find((r) => r.type === 'episode')!;
    assert.ok(epRec.type === 'episode');
    const teamEp = { ...epRec, episode: { ...epRec.episode, id: 'team-episode-1', namespace: 'team.web' } };
    for (const call of [
      () => t.client.call(R.importRecords, { records: [teamEp] }),
      () => t.client.call(R.importPreview, { records: [teamEp] }),
    ]) {
      const e = await rejectsWith(call(), 'InvalidState', 'records[0]');
      assert.equal(e.store, 'team');
    }
    await rejectsWith(t.client.call(R.episodesGet, { id: 'team-episode-1' }), 'NotFound');
  });
});
