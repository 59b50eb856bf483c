/**
 * `cairn mcp` through a real MCP client over stdio: the tool list, every tool,
 * scope isolation, agent-write review, and error cases returned as tool errors.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Requests } from '../../daemon/src/protocol/methods';
import { tempDir } from '../helpers';
import {
  call,
  daemonClient,
  daemonInfo,
  fails,
  fakeRepo,
  killAndWait,
  ok,
  pidAlive,
  rmDir,
  startMcp,
  stopDaemon,
  textOf,
  type McpSession,
} from './harness';

const TOOL_NAMES = [
  'cairn_search',
  'cairn_remember',
  'cairn_recall',
  'cairn_forget',
  'cairn_list',
  'cairn_link',
  'cairn_neighbors',
  'cairn_status',
  'cairn_events_search',
  'cairn_episodes_search',
  'cairn_events_timeline',
  'cairn_events_expand',
  'cairn_propose_from_events',
];

describe('cairn mcp (review off: agent writes are active)', () => {
  let dir: string;
  let s: McpSession;
  const PROJECT = 'project.web-app';

  before(async () => {
    dir = tempDir('cairn-mcp-');
    // The project namespace comes from the origin remote's repository name, not the folder name.
    const repo = fakeRepo(dir, 'checkout-folder', 'git@github.com:acme/Web-App.git');
    const sub = path.join(repo, 'src', 'deep');
    fs.mkdirSync(sub, { recursive: true });
    s = await startMcp({ dir, cwd: sub, env: { CAIRN_REVIEW_AGENT_WRITES: '0' } });
  });

  after(async () => {
    await s?.close();
    await stopDaemon(path.join(dir, 'cairn.db'));
    rmDir(dir);
  });

  test('lists the tools, each with a description and an object input schema', async () => {
    const { tools } = await s.client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
    for (const t of tools) {
      assert.ok((t.description ?? '').length > 60, `${t.name} has a real description`);
      assert.equal(t.inputSchema.type, 'object');
      assert.ok(!JSON.stringify(t.inputSchema).includes('$ref'), `${t.name}: self-contained schema`);
    }
    const remember = tools.find((t) => t.name === 'cairn_remember')!;
    assert.deepEqual([...(remember.inputSchema.required ?? [])].sort(), ['key', 'value']);
    const props = remember.inputSchema.properties as Record<string, { enum?: string[] }>;
    assert.deepEqual(props.kind.enum, ['fact', 'preference', 'decision', 'procedure', 'episode', 'note']);
    assert.equal(tools.find((t) => t.name === 'cairn_search')!.annotations?.readOnlyHint, true);
    assert.equal(tools.find((t) => t.name === 'cairn_forget')!.annotations?.destructiveHint, true);
  });

  test('the server started a daemon for the store and says what it serves', async () => {
    const { data, text } = await ok(s, 'cairn_status');
    assert.equal(data.path, s.db);
    assert.equal(data.session.root, PROJECT);
    assert.equal(data.session.rootSource, 'git-remote');
    assert.equal(data.session.review, false);
    assert.equal(data.session.actor, 'agent:cairn-test-client');
    assert.match(text, /scope project\.web-app/);
    const info = daemonInfo(s.db);
    assert.ok(info && pidAlive(info.pid), 'a daemon owns the store');
    assert.equal(data.daemon.pid, info!.pid);
  });

  test('remember, then recall by key and by id, search and list', async () => {
    const r = await ok(s, 'cairn_remember', {
      key: 'test-command',
      value: 'Run the integration tests with `npm run test:integration`; they need Docker running.',
      kind: 'procedure',
      tags: ['testing'],
      importance: 0.8,
      anchors: [{ path: 'package.json', startLine: 12, endLine: 14 }],
    });
    const m = r.data.memory;
    assert.equal(m.namespace, PROJECT);
    assert.equal(m.status, 'active');
    assert.equal(m.source, 'agent:cairn-test-client');
    assert.equal(m.kind, 'procedure');
    assert.match(r.text, /Saved new memory project\.web-app\/test-command/);

    const byKey = await ok(s, 'cairn_recall', { key: 'test-command' });
    assert.equal(byKey.data.memory.id, m.id);
    assert.match(byKey.text, /npm run test:integration/);
    assert.match(byKey.text, /anchor: package\.json:12-14/);
    const byId = await ok(s, 'cairn_recall', { id: m.id });
    assert.equal(byId.data.memory.key, 'test-command');

    const found = await ok(s, 'cairn_search', { query: 'integration tests docker' });
    assert.equal(found.data.hits[0].memory.id, m.id);
    assert.match(found.text, /1\. project\.web-app\/test-command — procedure/);
    assert.deepEqual(found.data.scope, { root: PROJECT, includeUser: true });

    const kinds = await ok(s, 'cairn_search', { query: 'integration tests', kinds: ['decision'] });
    assert.equal(kinds.data.hits.length, 0);
    assert.match(kinds.text, /No memories match/);

    const listed = await ok(s, 'cairn_list', { tags: ['testing'] });
    assert.deepEqual(
      listed.data.items.map((x: { id: string }) => x.id),
      [m.id],
    );

    // Same key again: an update, not a duplicate.
    const upd = await ok(s, 'cairn_remember', {
      key: 'test-command',
      value: 'Run `npm run test:integration` (needs Docker).',
      kind: 'procedure',
      ifVersion: 1,
    });
    assert.equal(upd.data.memory.id, m.id);
    assert.equal(upd.data.memory.version, 2);
    assert.match(upd.text, /Updated memory/);
    await fails(s, 'cairn_remember', { key: 'test-command', value: 'stale write', ifVersion: 1 }, 'VersionConflict');
  });

  test('user memories are in scope; recall by key falls back to the user namespace', async () => {
    const r = await ok(s, 'cairn_remember', {
      namespace: 'user.preferences',
      key: 'indentation',
      value: 'The user prefers two-space indentation.',
      kind: 'preference',
    });
    assert.equal(r.data.memory.namespace, 'user.preferences');
    await ok(s, 'cairn_remember', { namespace: 'user', key: 'editor', value: 'The user edits with vim keybindings.', kind: 'preference' });
    const recalled = await ok(s, 'cairn_recall', { key: 'editor' });
    assert.equal(recalled.data.memory.namespace, 'user');
    const found = await ok(s, 'cairn_search', { query: 'indentation' });
    assert.ok(found.data.hits.some((h: { memory: { key: string } }) => h.memory.key === 'indentation'));
    const noUser = await ok(s, 'cairn_search', { query: 'indentation', scope: { includeUser: false } });
    assert.equal(noUser.data.hits.length, 0);
  });

  test('search scope isolation: another project’s memories are invisible and out of reach', async () => {
    const direct = await daemonClient(s.db);
    try {
      const other = await direct.call(Requests.upsert, {
        namespace: 'project.other',
        key: 'zebra-secret',
        value: 'The zebra deployment password rotates weekly.',
      });
      const prefix = await direct.call(Requests.upsert, {
        namespace: 'project.web-app-legacy',
        key: 'zebra-legacy',
        value: 'Legacy zebra notes.',
      });
      const mine = await direct.call(Requests.upsert, {
        namespace: `${PROJECT}.infra`,
        key: 'zebra-infra',
        value: 'The zebra cluster runs in eu-west-1.',
      });

      const found = await ok(s, 'cairn_search', { query: 'zebra' });
      const ids = found.data.hits.map((h: { memory: { id: string } }) => h.memory.id);
      assert.deepEqual(ids, [mine.memory.id], 'only this project’s subtree (not a string-prefix sibling, not another project)');
      for (const mode of ['fts', 'hybrid', 'vector']) {
        const r = await call(s, 'cairn_search', { query: 'zebra', mode });
        if (r.isError) continue; // vector search without embeddings may be refused; it must never leak
        assert.ok(!textOf(r).includes('project.other') && !textOf(r).includes('legacy'), `mode ${mode} leaks nothing`);
      }
      const listed = await ok(s, 'cairn_list', { limit: 100 });
      assert.ok(
        listed.data.items.every(
          (m: { namespace: string }) =>
            m.namespace === 'user' || m.namespace.startsWith('user.') || m.namespace === PROJECT || m.namespace.startsWith(PROJECT + '.'),
        ),
      );

      // By id, by namespace, through an explicit scope, through a link: all refused.
      await fails(s, 'cairn_recall', { id: other.memory.id }, 'NotFound');
      await fails(s, 'cairn_recall', { namespace: 'project.other', key: 'zebra-secret' }, 'InvalidParams', 'namespace');
      await fails(s, 'cairn_search', { query: 'zebra', scope: { root: 'project.other' } }, 'InvalidParams', 'scope.root');
      await fails(s, 'cairn_list', { scope: { namespaces: [PROJECT, 'project.web-app-legacy'] } }, 'InvalidParams', 'scope.namespaces[1]');
      await fails(s, 'cairn_forget', { id: other.memory.id }, 'NotFound');
      await fails(s, 'cairn_remember', { namespace: 'project.other', key: 'x', value: 'y' }, 'InvalidParams', 'namespace');
      await fails(s, 'cairn_link', { from: mine.memory.id, to: other.memory.id, type: 'relates_to' }, 'NotFound', 'to');
      await fails(s, 'cairn_neighbors', { id: prefix.memory.id }, 'NotFound', 'id');
      // Superseding a memory of another project through remember's `supersedes` is refused, and nothing is written.
      await fails(
        s,
        'cairn_remember',
        { key: 'zebra-replacement', value: 'Replaces the other project’s note.', supersedes: other.memory.id },
        'NotFound',
        'supersedes',
      );
      await fails(s, 'cairn_recall', { key: 'zebra-replacement' }, 'NotFound');
      // The other project's memory is untouched.
      const still = await direct.call(Requests.get, { id: other.memory.id });
      assert.equal(still.deletedAt, null);
      assert.equal(still.status, 'active');
      assert.equal(still.version, other.memory.version);
    } finally {
      await direct.close();
    }
  });

  test('an invalid namespace is a tool error naming InvalidNamespace and the field', async () => {
    const { text } = await fails(
      s,
      'cairn_remember',
      { namespace: 'Project.Web App', key: 'k', value: 'v' },
      'InvalidNamespace',
      'namespace',
    );
    assert.match(text, /lowercase dotted segments/);
    await fails(s, 'cairn_search', { query: 'x', scope: { root: 'project..x' } }, 'InvalidNamespace', 'scope.root');
    await fails(s, 'cairn_recall', { namespace: 'bad*', key: 'k' }, 'InvalidNamespace', 'namespace');
  });

  test('forget: a missing key is NotFound; a forgotten value is refused when written again', async () => {
    await fails(s, 'cairn_forget', { key: 'no-such-key' }, 'NotFound', 'key');
    await fails(s, 'cairn_forget', { id: '00000000-0000-0000-0000-000000000000' }, 'NotFound');
    const r = await ok(s, 'cairn_remember', { key: 'wrong-fact', value: 'The API listens on port 9999.' });
    const f = await ok(s, 'cairn_forget', { key: 'wrong-fact', reason: 'the port is 8080' });
    assert.equal(f.data.memory.id, r.data.memory.id);
    assert.ok(f.data.memory.deletedAt);
    assert.match(f.text, /Forgot project\.web-app\/wrong-fact/);
    await fails(s, 'cairn_recall', { key: 'wrong-fact' }, 'NotFound');
    const again = await fails(s, 'cairn_remember', { key: 'wrong-fact-2', value: 'The API listens on port 9999.' }, 'RejectedValue');
    assert.match(again.text, /Do not store it again/);
    await fails(s, 'cairn_remember', { key: 'wrong-fact', value: 'The API listens on port 8080.' }, 'Deleted');
  });

  test('link and neighbors', async () => {
    const a = (await ok(s, 'cairn_remember', { key: 'use-postgres', value: 'We use PostgreSQL 16 for all services.', kind: 'decision' }))
      .data.memory;
    const b = (
      await ok(s, 'cairn_remember', {
        key: 'migrations',
        value: 'Schema migrations run with sqitch against PostgreSQL.',
        kind: 'procedure',
      })
    ).data.memory;
    const l = await ok(s, 'cairn_link', { from: b.id, to: a.id, type: 'depends_on' });
    assert.equal(l.data.created, true);
    assert.match(l.text, /Linked/);
    assert.match((await ok(s, 'cairn_link', { from: b.id, to: a.id, type: 'depends_on' })).text, /Already linked/);
    await fails(s, 'cairn_link', { from: a.id, to: a.id, type: 'relates_to' }, 'InvalidState');
    const n = await ok(s, 'cairn_neighbors', { id: a.id });
    assert.equal(n.data.neighbors.length, 1);
    assert.equal(n.data.neighbors[0].memory.id, b.id);
    assert.equal(n.data.neighbors[0].direction, 'in');
    assert.match(n.text, /project\.web-app\/migrations/);
    const out = await ok(s, 'cairn_neighbors', { id: a.id, direction: 'out' });
    assert.equal(out.data.neighbors.length, 0);
    assert.match(out.text, /no linked memories/);
  });

  test('bad arguments are tool errors naming the field; the server keeps serving', async () => {
    await fails(s, 'cairn_remember', { key: 'k' }, 'InvalidParams', 'value');
    await fails(s, 'cairn_remember', { key: 'k', value: 'v', colour: 'red' }, 'InvalidParams', 'colour');
    await fails(s, 'cairn_remember', { key: 'k', value: 'v', importance: 7 }, 'InvalidParams', 'importance');
    await fails(s, 'cairn_remember', { key: 'k', value: 'v', kind: 'rumour' }, 'InvalidParams', 'kind');
    await fails(
      s,
      'cairn_remember',
      { key: 'k', value: 'v', anchors: [{ path: 'a.ts', startLine: 0 }] },
      'InvalidParams',
      'anchors[0].startLine',
    );
    await fails(s, 'cairn_search', { query: 'x', limit: 0 }, 'InvalidParams', 'limit');
    await fails(s, 'cairn_search', { query: 'x', filter: { field: 'importance', op: 'near', value: 1 } }, 'InvalidFilter');
    await fails(s, 'cairn_recall', {}, 'InvalidParams', 'id');
    await fails(s, 'cairn_recall', { id: 'x', key: 'y' }, 'InvalidParams', 'id');
    await fails(s, 'cairn_remember', { key: 'big', value: 'x'.repeat(70 * 1024) }, 'ValueTooLarge');
    const r = await s.client.callTool({ name: 'cairn_teleport', arguments: {} });
    assert.equal(r.isError, true);
    assert.match(textOf(r as never), /NotFound.*cairn_search/s);
    // Still serving.
    assert.equal((await ok(s, 'cairn_status')).data.session.root, PROJECT);
  });

  test('reconnects (restarting the daemon) when the daemon goes away', async () => {
    const before = daemonInfo(s.db)!;
    await killAndWait(before.pid);
    const { data } = await ok(s, 'cairn_recall', { key: 'use-postgres' });
    assert.equal(data.memory.key, 'use-postgres');
    const now = daemonInfo(s.db)!;
    assert.notEqual(now.pid, before.pid);
    assert.ok(pidAlive(now.pid));
  });
});

describe('cairn mcp (default review on)', () => {
  let dir: string;
  let s: McpSession;

  before(async () => {
    dir = tempDir('cairn-mcp-');
    const repo = fakeRepo(dir, 'My Service'); // no remote: the folder name
    s = await startMcp({ dir, cwd: repo, clientName: 'Claude Code' });
  });

  after(async () => {
    await s?.close();
    await stopDaemon(path.join(dir, 'cairn.db'));
    rmDir(dir);
  });

  test('agent writes are proposed, recorded as agent:<client>, and hidden from search unless asked for', async () => {
    const r = await ok(s, 'cairn_remember', {
      key: 'lint',
      value: 'Run eslint with --max-warnings 0 before committing.',
      kind: 'procedure',
    });
    assert.equal(r.data.memory.namespace, 'project.my-service');
    assert.equal(r.data.memory.status, 'proposed');
    assert.equal(r.data.memory.source, 'agent:Claude Code');
    assert.match(r.text, /proposed/);
    assert.equal((await ok(s, 'cairn_search', { query: 'eslint' })).data.hits.length, 0);
    const withProposed = await ok(s, 'cairn_search', { query: 'eslint', includeProposed: true });
    assert.equal(withProposed.data.hits.length, 1);
    assert.match(withProposed.text, /awaiting the user’s review/);
    assert.equal((await ok(s, 'cairn_list', { includeProposed: true })).data.items.length, 1);
    assert.equal((await ok(s, 'cairn_recall', { key: 'lint' })).data.memory.status, 'proposed');
    const st = await ok(s, 'cairn_status');
    assert.equal(st.data.session.review, true);
    assert.equal(st.data.counts.proposed, 1);
  });

  test('history records the agent as the actor', async () => {
    const direct = await daemonClient(s.db);
    try {
      const h = await direct.call(Requests.history, { namespace: 'project.my-service', key: 'lint' });
      assert.equal(h.entries[0].actor, 'agent:Claude Code');
    } finally {
      await direct.close();
    }
  });
});

describe('cairn mcp with a client that shares its workspace roots', () => {
  test('the project comes from the client’s first root, not the server’s working directory, and follows root changes', async () => {
    const dir = tempDir('cairn-mcp-');
    const elsewhere = fakeRepo(dir, 'server-cwd', 'git@example.com:acme/Wrong-Project.git');
    const a = fakeRepo(dir, 'clone-a', 'git@example.com:acme/Right-Project.git');
    const b = fakeRepo(dir, 'clone-b', 'https://example.com/acme/Second.git');
    let roots = [a, b];
    const s = await startMcp({ dir, cwd: elsewhere, roots: () => roots, env: { CAIRN_REVIEW_AGENT_WRITES: '0' } });
    try {
      const st = await ok(s, 'cairn_status');
      assert.equal(st.data.session.root, 'project.right-project');
      assert.equal(st.data.session.dir, a);
      assert.match(st.text, /git remote of .*clone-a/);
      assert.equal(
        (await ok(s, 'cairn_remember', { key: 'k', value: 'in the right project' })).data.memory.namespace,
        'project.right-project',
      );

      roots = [b];
      await s.client.sendRootsListChanged();
      assert.equal((await ok(s, 'cairn_status')).data.session.root, 'project.second');
      assert.equal((await ok(s, 'cairn_search', { query: 'right project' })).data.hits.length, 0, 'the first project is out of scope now');
    } finally {
      await s.close();
      await stopDaemon(s.db);
      rmDir(dir);
    }
  });

  test('--root wins over the client’s roots', async () => {
    const dir = tempDir('cairn-mcp-');
    const a = fakeRepo(dir, 'clone-a', 'git@example.com:acme/Right-Project.git');
    const s = await startMcp({ dir, cwd: a, roots: () => [a], args: ['--root', 'team.fixed'] });
    try {
      assert.equal((await ok(s, 'cairn_status')).data.session.root, 'team.fixed');
    } finally {
      await s.close();
      await stopDaemon(s.db);
      rmDir(dir);
    }
  });
});

describe('cairn mcp --root', () => {
  test('an explicit root bounds the session and is the default namespace; a malformed root stops the server', async () => {
    const dir = tempDir('cairn-mcp-');
    const s = await startMcp({
      dir,
      args: ['--root', 'team.platform'],
      env: { CAIRN_REVIEW_AGENT_WRITES: '0', CAIRN_SCOPE_ROOT: 'ignored.by.flag' },
    });
    try {
      const r = await ok(s, 'cairn_remember', { key: 'oncall', value: 'On-call rotates on Mondays.' });
      assert.equal(r.data.memory.namespace, 'team.platform');
      await ok(s, 'cairn_remember', { namespace: 'team.platform.db', key: 'backup', value: 'Backups run nightly.' });
      await fails(s, 'cairn_remember', { namespace: 'team', key: 'k', value: 'v' }, 'InvalidParams', 'namespace');
      const st = await ok(s, 'cairn_status');
      assert.equal(st.data.session.root, 'team.platform');
      assert.equal(st.data.session.rootSource, 'option');
    } finally {
      await s.close();
      await stopDaemon(s.db);
    }
    // CAIRN_SCOPE_ROOT malformed: the server refuses to start (stderr says why), it does not serve a wrong scope.
    await assert.rejects(startMcp({ dir, env: { CAIRN_SCOPE_ROOT: 'Not Valid' } }));
    rmDir(dir);
  });
});
