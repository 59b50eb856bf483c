/**
 * Team memory reaches the rest of the product: injection and LSP hovers find team
 * memories when the scope covers them; import, erase and export refuse (typed, nothing done)
 * what would reach both stores, and all keep working for local ones (team-only imports:
 * import.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { teamMismatch } from '../../daemon/src/team/roots';
import { rejectsWith } from '../helpers';
import { startPg, type PgServer } from './pg-server';
import { teamDaemon, type TeamDaemon } from './team-daemon';

describe('team memory reaches injection; import, erase and export refuse what spans both stores', () => {
  let pg: PgServer;
  let t: TeamDaemon;
  before(async () => {
    pg = await startPg();
    const db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.grant(db, 'alice', 'team', 'admin');
    await pg.grant(db, 'alice', 'project.shared', 'admin');
    t = await teamDaemon(pg.url('alice', db), { roots: ['team', 'project.shared'] });
  });
  after(async () => {
    await t?.stop();
    await pg?.stop();
  });

  it('injection searches the team store inside the scope and never outside it', async () => {
    const team = await t.client.call(R.upsert, {
      namespace: 'project.shared',
      key: 'deploy',
      value: 'Deploys go out through the blue-green pipeline on Tuesdays',
    });
    const local = await t.client.call(R.upsert, {
      namespace: 'project.mine',
      key: 'deploy',
      value: 'My sandbox deploys through the blue-green pipeline by hand',
    });
    await t.client.call(R.upsert, {
      namespace: 'team.other',
      key: 'deploy',
      value: 'The other team deploys through the blue-green pipeline nightly',
    });
    const both = await t.client.call(R.injectBlock, {
      prompt: 'how do blue-green pipeline deploys work',
      scope: { namespaces: ['project.shared', 'project.mine'], includeUser: false },
    });
    assert.deepEqual([...both.memoryIds].sort(), [team.memory.id, local.memory.id].sort());
    assert.match(both.block, /Tuesdays/);
    const onlyTeam = await t.client.call(R.injectBlock, {
      prompt: 'blue-green pipeline deploys',
      scope: { root: 'project.shared', includeUser: false },
    });
    assert.deepEqual(onlyTeam.memoryIds, [team.memory.id]);
  });

  it('erase refuses a root holding both local and team memory, typed, and leaves it in place; local erase still works', async () => {
    const m = await t.client.call(R.upsert, { namespace: 'project.shared.erase', key: 'k', value: 'A team memory under project' });
    const e = await rejectsWith(t.client.call(R.erase, { root: 'project' }), 'InvalidState', 'root'); // holds project.shared
    assert.equal(e.store, 'team');
    await assert.rejects(t.client.call(R.erase, { root: 'project' }), /nothing was done/);
    assert.equal((await t.client.call(R.get, { id: m.memory.id })).version, 1);
    await rejectsWith(t.client.call(R.erase, { id: '01900000-0000-7000-8000-000000000000' }), 'NotFound');
    const l = await t.client.call(R.upsert, { namespace: 'project.mine.tmp', key: 'x', value: 'a local memory to erase' });
    const r = await t.client.call(R.erase, { id: l.memory.id });
    assert.equal(r.receipt.format, 'cairn-erasure-receipt');
    assert.ok(!('store' in r.receipt), 'a local receipt');
    await rejectsWith(t.client.call(R.get, { id: l.memory.id }), 'NotFound');
    // Team memory is erased by the team database, with its receipt (test/team/admin.test.ts has the rest).
    const tr = await t.client.call(R.erase, { id: m.memory.id });
    assert.ok('store' in tr.receipt && tr.receipt.store === 'team');
    await rejectsWith(t.client.call(R.get, { id: m.memory.id }), 'NotFound');
  });

  it('export refuses a scope covering local and team namespaces (and the whole store); a local scope exports, and a team one from the team database', async () => {
    for (const scope of [
      undefined,
      { root: 'project', includeUser: false },
      { namespaces: ['project.mine', 'project.shared'], includeUser: false },
    ]) {
      const e = await rejectsWith(t.client.call(R.exportRecords, scope ? { scope } : {}), 'InvalidState', 'scope');
      assert.equal(e.store, 'team');
      await rejectsWith(t.client.call(R.exportPage, scope ? { scope } : {}), 'InvalidState', 'scope');
    }
    const ok = await t.client.call(R.exportRecords, { scope: { root: 'project.mine', includeUser: false } });
    const mems = ok.records.filter((r) => r.type === 'memory');
    assert.ok(mems.length >= 1 && mems.every((r) => r.type === 'memory' && r.memory.namespace.startsWith('project.mine')));
    const page = await t.client.call(R.exportPage, { scope: { root: 'project.mine', includeUser: false } });
    assert.ok(page.records.length > 0);
    const team = await t.client.call(R.exportRecords, { scope: { root: 'team', includeUser: false } });
    const teamMems = team.records.filter((r) => r.type === 'memory');
    assert.ok(teamMems.length >= 1 && teamMems.every((r) => r.type === 'memory' && r.memory.namespace.startsWith('team.')));
  });

  it('import refuses records holding both local and team namespaces before writing any; local records import', async () => {
    const ok = await t.client.call(R.exportRecords, { scope: { root: 'project.mine', includeUser: false } });
    const ns = ok.records.find((r) => r.type === 'namespace')!;
    const mem = ok.records.find((r) => r.type === 'memory')!;
    assert.ok(ns.type === 'namespace' && mem.type === 'memory');
    const teamNs = { ...ns, id: 'ns-team-x', path: 'team.imported' };
    const teamMem = {
      ...mem,
      namespaceId: 'ns-team-x',
      memory: { ...mem.memory, id: '01900000-0000-7000-8000-0000000000aa', namespace: 'team.imported', key: 'imp' },
    };
    const localNs = { ...ns, id: 'ns-local-x', path: 'project.imported' };
    const localMem = {
      ...mem,
      namespaceId: 'ns-local-x',
      memory: { ...mem.memory, id: '01900000-0000-7000-8000-0000000000bb', namespace: 'project.imported', key: 'imp' },
    };
    const records = [localNs, localMem, teamNs, teamMem];
    for (const call of [() => t.client.call(R.importRecords, { records }), () => t.client.call(R.importPreview, { records })]) {
      const e = await rejectsWith(call(), 'InvalidState', 'records[2]');
      assert.equal(e.store, 'team');
    }
    await rejectsWith(t.client.call(R.get, { namespace: 'project.imported', key: 'imp' }), 'NotFound');
    await rejectsWith(t.client.call(R.get, { namespace: 'team.imported', key: 'imp' }), 'NotFound');
    await t.client.call(R.importRecords, { records: [localNs, localMem] });
    assert.equal((await t.client.call(R.get, { namespace: 'project.imported', key: 'imp' })).value, mem.memory.value);
  });

  it("hovers show team memories anchored to the file when the project root is a team root, and no other project's", async () => {
    const root = '/nonexistent-ws';
    await t.client.connection.sendRequest('initialize', {
      processId: null,
      rootUri: `file://${root}`,
      capabilities: {},
      initializationOptions: { projectNamespace: 'project.shared' },
    });
    await t.client.call(R.upsert, {
      namespace: 'project.shared',
      key: 'retry',
      value: 'Retries back off exponentially',
      anchors: [{ path: 'src/http.ts', startLine: 3, endLine: 5 }],
    });
    await t.client.call(R.upsert, {
      namespace: 'team.elsewhere',
      key: 'retry',
      value: 'Another team retries linearly',
      anchors: [{ path: 'src/http.ts', startLine: 3, endLine: 5 }],
    });
    const uri = `file://${root}/src/http.ts`;
    const hit = (await t.client.connection.sendRequest('textDocument/hover', {
      textDocument: { uri },
      position: { line: 3, character: 0 },
    })) as { contents: { value: string } } | null;
    assert.ok(hit && hit.contents.value.includes('back off exponentially'), JSON.stringify(hit));
    assert.ok(!hit.contents.value.includes('linearly'));
    assert.equal(
      await t.client.connection.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: 20, character: 0 } }),
      null,
    );
  });

  it('store/status names the team database (no password), its roots and role; the extension compares its settings with it', async () => {
    const st = await t.client.call(R.status, {});
    assert.ok(st.team);
    assert.deepEqual({ ...st.team, url: undefined }, { url: undefined, roots: ['team', 'project.shared'], user: 'alice', connected: true });
    assert.equal(st.team.url, pg.url('alice', st.team.url.split('/').pop()!));
    assert.equal(teamMismatch({ url: st.team.url, roots: 'project.shared, team' }, st.team), null);
    assert.match(teamMismatch({ url: st.team.url, roots: 'team' }, st.team) ?? '', /serves team roots/);
  });
});
