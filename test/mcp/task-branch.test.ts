/**
 * An MCP session on an agent task with a burner branch (`cairn mcp --task ID`, or $CAIRN_TASK): what the agent
 * remembers and forgets in the project stays on the task's memory branch, its searches, recalls and lists see the
 * branch over the base, and the base (another session) is unchanged until the branch is merged. Writes outside the
 * branch's root (`user`) go to the base. A malformed task id stops the server; a task that is gone fails each call.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { StreamClient } from '../../daemon/src/client/socket-client';
import { CairnError } from '../../daemon/src/protocol/errors';
import { Requests } from '../../daemon/src/protocol/methods';
import { tempDir } from '../helpers';
import { daemonClient, ENTRY, fails, fakeRepo, isolatedEnv, ok, rmDir, startMcp, stopDaemon, TSX_LOADER, type McpSession } from './harness';

const PROJECT = 'project.shop';

describe('cairn mcp: the active task’s burner branch', () => {
  let dir: string;
  let repo: string;
  let base: McpSession;
  let onTask: McpSession;
  let d: StreamClient;
  let taskId: string;
  let branch: string;
  let baseMemoryId: string;

  before(async () => {
    dir = tempDir('cairn-mcp-task-');
    repo = fakeRepo(dir, 'shop', 'https://example.com/acme/shop.git');
    base = await startMcp({ dir, cwd: repo, env: { CAIRN_REVIEW_AGENT_WRITES: '0' } });
    await ok(base, 'cairn_status'); // starts the daemon
    d = await daemonClient(base.db);
    await d.initialize('task-branch-test');
    baseMemoryId = (
      await d.call(Requests.upsert, {
        namespace: PROJECT,
        key: 'deploy-day',
        value: 'Deploys of the shop happen on Tuesdays.',
        actor: 'user',
      })
    ).memory.id;
    const task = await d.call(Requests.tasksCreate, { title: 'move deploys', scope: { root: PROJECT, includeUser: true }, branch: true });
    assert.ok(task.branch);
    taskId = task.id;
    branch = task.branch;
    onTask = await startMcp({ dir, cwd: repo, args: ['--task', taskId], env: { CAIRN_REVIEW_AGENT_WRITES: '0' } });
  });

  after(async () => {
    await d?.close();
    await onTask?.close();
    await base?.close();
    await stopDaemon(path.join(dir, 'cairn.db'));
    rmDir(dir);
  });

  test('cairn_status names the task’s branch', async () => {
    assert.match((await ok(onTask, 'cairn_status')).text, new RegExp(`memory branch: ${branch}`));
    assert.doesNotMatch((await ok(base, 'cairn_status')).text, /memory branch/);
  });

  test('cairn_remember writes on the branch: the task session sees it, the base does not until the merge', async () => {
    const w = await ok(onTask, 'cairn_remember', { key: 'cache-flag', value: 'The shop cache is warmed by the albatross job.' });
    assert.equal(w.data.branch, branch);
    assert.match(w.text, new RegExp(`memory branch ${branch}`));
    await assert.rejects(d.call(Requests.get, { namespace: PROJECT, key: 'cache-flag' }), (e: CairnError) => e.data.name === 'NotFound');
    assert.equal((await d.call(Requests.get, { namespace: PROJECT, key: 'cache-flag', branch })).value, w.data.memory.value);

    const hits = (await ok(onTask, 'cairn_search', { query: 'albatross cache' })).data.hits as { memory: { key: string } }[];
    assert.ok(
      hits.some((h) => h.memory.key === 'cache-flag'),
      'the task session finds its own write',
    );
    const elsewhere = (await ok(base, 'cairn_search', { query: 'albatross cache' })).data.hits as unknown[];
    assert.equal(elsewhere.length, 0, 'another session does not');
    assert.match((await ok(onTask, 'cairn_recall', { key: 'cache-flag' })).text, /albatross/);
    await fails(base, 'cairn_recall', { key: 'cache-flag' }, 'NotFound', 'key');
    const listed = (await ok(onTask, 'cairn_list', {})).data.items as { key: string }[];
    assert.ok(listed.some((m) => m.key === 'cache-flag'));
  });

  test('an update of a base memory shadows it on the branch only', async () => {
    await ok(onTask, 'cairn_remember', { key: 'deploy-day', value: 'Deploys of the shop happen on Thursdays.' });
    assert.match((await ok(onTask, 'cairn_recall', { key: 'deploy-day' })).text, /Thursdays/);
    assert.match((await ok(base, 'cairn_recall', { key: 'deploy-day' })).text, /Tuesdays/);
    const diff = await d.call(Requests.branchDiff, { name: branch });
    assert.deepEqual(diff.changes.map((c) => `${c.change} ${c.key}`).sort(), ['added cache-flag', 'changed deploy-day']);
  });

  test('cairn_forget deletes on the branch: the base keeps the memory and no value is refused there', async () => {
    await d.call(Requests.upsert, { namespace: PROJECT, key: 'old-host', value: 'The shop runs on host kestrel.', actor: 'user' });
    const r = await ok(onTask, 'cairn_forget', { key: 'old-host', reason: 'moved' });
    assert.equal(r.data.branch, branch);
    assert.match(r.text, /base keeps it/);
    await fails(onTask, 'cairn_recall', { key: 'old-host' }, 'NotFound');
    assert.match((await ok(base, 'cairn_recall', { key: 'old-host' })).text, /kestrel/);
    assert.equal((await d.call(Requests.get, { id: baseMemoryId })).value, 'Deploys of the shop happen on Tuesdays.');
  });

  test('a write outside the branch’s root (user) goes to the base', async () => {
    const w = await ok(onTask, 'cairn_remember', { namespace: 'user', key: 'tabs', value: 'The user indents with tabs.' });
    assert.equal(w.data.branch, undefined);
    assert.equal((await d.call(Requests.get, { namespace: 'user', key: 'tabs' })).value, 'The user indents with tabs.');
  });

  test('once the branch is merged, the base has its writes and the session writes to the base', async () => {
    const m = await d.call(Requests.branchMerge, { name: branch });
    assert.equal(m.merged, true);
    assert.match((await ok(base, 'cairn_recall', { key: 'cache-flag' })).text, /albatross/);
    assert.match((await ok(base, 'cairn_recall', { key: 'deploy-day' })).text, /Thursdays/);
    const w = await ok(onTask, 'cairn_remember', { key: 'after-merge', value: 'Written after the merge.' });
    assert.equal(w.data.branch, undefined);
    assert.equal((await d.call(Requests.get, { namespace: PROJECT, key: 'after-merge' })).value, 'Written after the merge.');
  });

  test('a task that no longer exists fails the session’s calls (NotFound, field task) instead of writing to the base', async () => {
    const gone = await d.call(Requests.tasksCreate, { title: 'gone', scope: { root: PROJECT }, branch: true });
    const s = await startMcp({ dir, cwd: repo, env: { CAIRN_TASK: gone.id } });
    try {
      assert.match((await ok(s, 'cairn_status')).text, new RegExp(`memory branch: ${gone.branch}`), 'CAIRN_TASK works as --task');
      await d.call(Requests.tasksDelete, { id: gone.id });
      await fails(s, 'cairn_remember', { key: 'orphan', value: 'never written' }, 'NotFound', 'task');
      await fails(s, 'cairn_search', { query: 'anything' }, 'NotFound', 'task');
      await assert.rejects(d.call(Requests.get, { namespace: PROJECT, key: 'orphan' }), (e: CairnError) => e.data.name === 'NotFound');
    } finally {
      await s.close();
    }
  });

  test('a malformed --task stops the server with InvalidParams naming the option', () => {
    const r = spawnSync(process.execPath, ['--import', TSX_LOADER, ENTRY, '--db', path.join(dir, 'cairn.db'), '--task', 'x'.repeat(65)], {
      env: isolatedEnv(dir),
      cwd: repo,
      input: '',
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /InvalidParams.*--task/s);
  });
});
