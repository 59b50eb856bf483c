/**
 * Git-aware memory (issue 26, docs/protocol.md#git-aware-memory), through the daemon's Core over real git repositories
 * made with the git CLI: a write records its git branch and commit; a reader's checkout sees the base branch's
 * memories everywhere, its own branch's, and another branch's once merged (merge commit, fast-forward, squash, rebase,
 * or marked merged), never an unmerged or abandoned branch's — inside both search arms before the limit, in list and
 * in get.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { proposeTool } from '../../daemon/src/mcp/episode-tools';
import type { ToolContext } from '../../daemon/src/mcp/tools';
import { isUnder } from '../../daemon/src/protocol/namespace';
import type * as T from '../../daemon/src/protocol/types';
import type { GitContext } from '../../daemon/src/protocol/types';
import { FUSION } from '../../daemon/src/retrieval/fusion';
import type { VecModel } from '../../daemon/src/store/vectors';
import { LspDocuments } from '../../daemon/src/server/lsp';
import { pathToFileURL } from 'node:url';
import { commit, sh } from '../git-fixture';
import { rejectsWith, tempCore, tempDir } from '../helpers';

type C = ReturnType<typeof tempCore>;
const NS = 'project.repo';

describe('git-aware memory', () => {
  let c: C;
  let repo: string;
  const here = (): GitContext => {
    const head = sh(repo, 'rev-parse', 'HEAD');
    let branch: string | undefined;
    try {
      branch = sh(repo, 'symbolic-ref', '--quiet', '--short', 'HEAD');
    } catch {
      branch = undefined;
    }
    return { repo, head, ...(branch ? { branch } : {}), namespace: NS };
  };
  const write = async (key: string, value = `note ${key} about the parser`) => {
    const g = here();
    return c.core.call(R.upsert, { namespace: NS, key, value, git: { branch: g.branch!, commit: g.head } });
  };
  /** The keys visible from the current checkout through list, full-text search and (when set up) get. */
  const listed = async () =>
    (await c.core.call(R.list, { scope: { root: NS, includeUser: false }, git: here() })).items.map((m) => m.key).sort();
  const searched = async (query = 'parser') =>
    (await c.core.call(R.search, { query, mode: 'fts', limit: 50, scope: { root: NS, includeUser: false }, git: here() })).hits
      .map((h) => h.memory.key)
      .sort();
  const seen = async () => {
    const l = await listed();
    assert.deepEqual(await searched(), l, 'search and list agree');
    return l;
  };

  beforeEach(() => {
    c = tempCore();
    repo = tempDir();
    sh(repo, 'init', '-q', '-b', 'main');
    commit(repo, 'base.txt', 'first');
  });
  afterEach(() => {
    c.close();
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it('records the branch and commit of each version, and shows them in get, list and search', async () => {
    const m1 = sh(repo, 'rev-parse', 'HEAD');
    const w = await write('a');
    assert.deepEqual(w.memory.version, 1);
    assert.deepEqual(w.memory.git, { branch: 'main', commit: m1 }, 'the write answers with its record');
    assert.deepEqual((await c.core.call(R.get, { id: w.memory.id })).git, { branch: 'main', commit: m1 });
    sh(repo, 'checkout', '-q', '-b', 'feat');
    const f1 = commit(repo, 'f.txt', 'one');
    await c.core.call(R.upsert, { namespace: NS, key: 'a', value: 'changed on feat', git: { branch: 'feat', commit: f1 } });
    const got = await c.core.call(R.get, { namespace: NS, key: 'a' });
    assert.equal(got.version, 2);
    assert.deepEqual(got.git, { branch: 'feat', commit: f1 });
    assert.deepEqual((await c.core.call(R.list, { scope: { root: NS } })).items[0].git, { branch: 'feat', commit: f1 });
    // A write without git has no record; the older versions' records stay in the table.
    const plain = await c.core.call(R.upsert, { namespace: NS, key: 'b', value: 'no git here' });
    assert.equal(plain.memory.git, undefined);
    assert.equal((await c.core.call(R.get, { id: plain.memory.id })).git, undefined);
    const rows = c.store.db.prepare('SELECT count(*) AS n FROM memory_git').get() as { n: number };
    assert.equal(rows.n, 2);
  });

  it('refuses a malformed git record or reader context with InvalidParams naming the field', async () => {
    await rejectsWith(
      c.core.call(R.upsert, { namespace: NS, key: 'k', value: 'v', git: { branch: 'main', commit: 'abc' } }),
      'InvalidParams',
      'git.commit',
    );
    await rejectsWith(
      c.core.call(R.upsert, { namespace: NS, key: 'k', value: 'v', git: { branch: 'bad name', commit: 'a'.repeat(40) } }),
      'InvalidParams',
      'git.branch',
    );
    await rejectsWith(c.core.call(R.list, { git: { repo, head: 'HEAD' } }), 'InvalidParams', 'git.head');
    await rejectsWith(c.core.call(R.search, { query: 'x', git: { repo: '', head: 'a'.repeat(40) } }), 'InvalidParams', 'git.repo');
  });

  it('a memory proposed from events records its git branch: hidden on main until the branch is merged', async () => {
    const ep = (await c.core.call(R.episodesStart, { namespace: NS, title: 'session on feat' })).episode;
    const [ev] = (await c.core.call(R.eventsAppend, { episodeId: ep.id, events: [{ kind: 'user', text: 'the parser needs a flag' }] }))
      .results;
    await write('on-main');
    sh(repo, 'checkout', '-q', '-b', 'feat');
    const f1 = commit(repo, 'f.txt', 'one');
    const proposed = await c.core.call(R.episodesPropose, {
      events: [ev.position],
      key: 'parser-flag',
      value: 'the parser takes a flag',
      git: { branch: 'feat', commit: f1 },
    });
    assert.equal(proposed.memory.status, 'proposed');
    assert.deepEqual(proposed.memory.git, { branch: 'feat', commit: f1 }, 'the proposal answers with its record');
    const id = proposed.memory.id;
    const review = {
      scope: { root: NS, includeUser: false },
      include: { proposed: true },
      filter: { field: 'status' as const, op: 'eq' as const, value: 'proposed' },
    };
    const inReview = async () => (await c.core.call(R.list, { ...review, git: here() })).items.map((m) => m.key);
    assert.deepEqual(await inReview(), ['parser-flag'], 'its own branch sees it');
    assert.deepEqual((await c.core.call(R.get, { id, git: here() })).git, { branch: 'feat', commit: f1 });

    sh(repo, 'checkout', '-q', 'main');
    assert.deepEqual(await inReview(), [], 'hidden on main while feat is unmerged');
    await rejectsWith(c.core.call(R.get, { id, git: here() }), 'NotFound', 'id');
    assert.deepEqual(await seen(), ['on-main']);

    sh(repo, 'merge', '-q', '--no-ff', '-m', 'merge feat', 'feat');
    assert.deepEqual(await inReview(), ['parser-flag'], 'visible once feat is merged');
    assert.equal((await c.core.call(R.get, { id, git: here() })).key, 'parser-flag');
    // Without a git record a proposal is visible everywhere, as a write without one is.
    const plain = await c.core.call(R.episodesPropose, { events: [ev.position], key: 'plain', value: 'no git here' });
    assert.equal(plain.memory.git, undefined);
  });

  it('an agent proposing through MCP records its checkout where the proposal lands (project namespace only)', async () => {
    const ep = (await c.core.call(R.episodesStart, { namespace: NS, title: 'agent session' })).episode;
    const away = (await c.core.call(R.episodesStart, { namespace: 'user', title: 'personal' })).episode;
    const append = async (id: string) =>
      (await c.core.call(R.eventsAppend, { episodeId: id, events: [{ kind: 'agent', text: 'a finding' }] })).results[0].position;
    const [here1, there] = [await append(ep.id), await append(away.id)];
    sh(repo, 'checkout', '-q', '-b', 'feat');
    const f1 = commit(repo, 'f.txt', 'one');
    const ctx: ToolContext = {
      call: ((def: { method: string }, params: unknown) => c.core.request(def.method, params)) as ToolContext['call'],
      scope: { root: 'project', source: 'option' },
      actor: () => 'agent:test',
      reviewAgentWrites: true,
      git: { read: () => here(), write: (ns) => (isUnder(ns, NS) ? { branch: 'feat', commit: f1 } : undefined) },
    };
    const propose = async (args: Record<string, unknown>) =>
      ((await proposeTool.run(args as never, ctx)).structured as T.EpisodeProposeResult).memory;
    assert.deepEqual((await propose({ events: [here1], key: 'a', value: 'in the session namespace' })).git, { branch: 'feat', commit: f1 });
    assert.equal((await propose({ events: [there], key: 'b', value: 'lands in user' })).git, undefined);
    assert.equal((await propose({ events: [there], namespace: NS, key: 'c', value: 'named' })).git?.branch, 'feat');
  });

  it('refuses a malformed git record on a proposal with InvalidParams naming the field, writing nothing', async () => {
    const ep = (await c.core.call(R.episodesStart, { namespace: NS, title: 's' })).episode;
    const [ev] = (await c.core.call(R.eventsAppend, { episodeId: ep.id, events: [{ kind: 'user', text: 'x' }] })).results;
    const propose = (git: unknown) => c.core.call(R.episodesPropose, { events: [ev.position], key: 'k', value: 'v', git } as never);
    await rejectsWith(propose({ branch: 'main', commit: 'abc' }), 'InvalidParams', 'git.commit');
    await rejectsWith(propose({ branch: 'bad name', commit: 'a'.repeat(40) }), 'InvalidParams', 'git.branch');
    await rejectsWith(propose({ branch: 'main', commit: 'a'.repeat(40), repo }), 'InvalidParams', 'git.repo');
    const n = c.store.db.prepare('SELECT count(*) AS n FROM memories').get() as { n: number };
    assert.equal(n.n, 0);
  });

  it('hides an unmerged branch, notes written before its first commit included, and shows it after a merge commit', async () => {
    await write('on-main');
    sh(repo, 'checkout', '-q', '-b', 'feat');
    await write('feat-before-commit'); // at main's commit: belongs to feat's coming work
    commit(repo, 'f.txt', 'one');
    await write('feat-after-commit');
    assert.deepEqual(await seen(), ['feat-after-commit', 'feat-before-commit', 'on-main'], 'its own branch sees everything');

    sh(repo, 'checkout', '-q', 'main');
    assert.deepEqual(await seen(), ['on-main']);
    const hidden = (await c.core.call(R.get, { namespace: NS, key: 'feat-after-commit' })).id;
    await rejectsWith(c.core.call(R.get, { id: hidden, git: here() }), 'NotFound', 'id');
    await rejectsWith(c.core.call(R.get, { namespace: NS, key: 'feat-before-commit', git: here() }), 'NotFound', 'key');
    // Without a git context nothing is hidden.
    assert.equal((await c.core.call(R.list, { scope: { root: NS } })).items.length, 3);
    // The rule covers the checkout's project namespace only: another project's records are not this repository's.
    await c.core.call(R.upsert, { namespace: 'project.elsewhere', key: 'x', value: 'x', git: { branch: 'feat', commit: 'f'.repeat(40) } });
    const everywhere = await c.core.call(R.list, { git: here() });
    assert.deepEqual(everywhere.items.map((m) => m.key).sort(), ['on-main', 'x']);
    // By default that namespace is the repository's own project namespace (from its folder name here).
    const derived = { ...here(), namespace: undefined };
    assert.equal((await c.core.call(R.list, { git: derived })).items.length, 4);

    commit(repo, 'm.txt', 'main moves on');
    await write('main-later');
    sh(repo, 'checkout', '-q', 'feat');
    assert.deepEqual(await seen(), ['feat-after-commit', 'feat-before-commit', 'main-later', 'on-main'], 'the base is visible everywhere');

    sh(repo, 'checkout', '-q', 'main');
    sh(repo, 'merge', '-q', '--no-ff', '-m', 'merge feat', 'feat');
    assert.deepEqual(await seen(), ['feat-after-commit', 'feat-before-commit', 'main-later', 'on-main']);
    assert.equal((await c.core.call(R.get, { id: hidden, git: here() })).key, 'feat-after-commit');
  });

  it('a fast-forward merge, and a branch deleted after it, show its memories', async () => {
    sh(repo, 'checkout', '-q', '-b', 'ff');
    commit(repo, 'ff.txt', 'one');
    await write('ff-note');
    sh(repo, 'checkout', '-q', 'main');
    assert.deepEqual(await seen(), []);
    sh(repo, 'merge', '-q', '--ff-only', 'ff');
    sh(repo, 'branch', '-q', '-d', 'ff');
    assert.deepEqual(await seen(), ['ff-note']);
  });

  it('recognises a squash merge by patch, also once the branch is deleted (its last tip seen)', async () => {
    sh(repo, 'checkout', '-q', '-b', 'sq');
    await write('sq-before');
    commit(repo, 'sq.txt', 'one');
    commit(repo, 'sq.txt', 'two');
    await write('sq-after');
    sh(repo, 'checkout', '-q', 'main');
    commit(repo, 'other.txt', 'main moves on');
    assert.deepEqual(await seen(), []);
    sh(repo, 'merge', '-q', '--squash', 'sq');
    sh(repo, 'commit', '-q', '-m', 'squashed sq');
    assert.deepEqual(await seen(), ['sq-after', 'sq-before']);
    sh(repo, 'branch', '-q', '-D', 'sq');
    assert.deepEqual(await seen(), ['sq-after', 'sq-before'], 'the tip seen at the write stands for the deleted branch');
  });

  it('recognises a rebased branch by patch id after its commits were rewritten', async () => {
    sh(repo, 'checkout', '-q', '-b', 'rb');
    commit(repo, 'rb.txt', 'one');
    await write('rb-note'); // recorded at the pre-rebase commit
    sh(repo, 'checkout', '-q', 'main');
    commit(repo, 'other.txt', 'main moves on');
    sh(repo, 'checkout', '-q', 'rb');
    sh(repo, 'rebase', '-q', 'main');
    sh(repo, 'checkout', '-q', 'main');
    assert.deepEqual(await seen(), [], 'rebased but not merged');
    sh(repo, 'merge', '-q', '--ff-only', 'rb');
    assert.deepEqual(await seen(), ['rb-note']);
  });

  it('keeps an abandoned branch hidden, and an explicit mark shows it until taken back', async () => {
    sh(repo, 'checkout', '-q', '-b', 'gone');
    commit(repo, 'g.txt', 'one');
    await write('gone-note');
    sh(repo, 'checkout', '-q', 'main');
    sh(repo, 'branch', '-q', '-D', 'gone');
    commit(repo, 'other.txt', 'main moves on');
    assert.deepEqual(await seen(), []);
    const m = await c.core.call(R.gitMarkMerged, { branch: 'gone', actor: 'dev' });
    assert.deepEqual(m, { branch: 'gone', merged: true, wasMerged: false });
    assert.deepEqual(await seen(), ['gone-note']);
    assert.deepEqual(await c.core.call(R.gitMarkMerged, { branch: 'gone', merged: false }), {
      branch: 'gone',
      merged: false,
      wasMerged: true,
    });
    assert.deepEqual(await seen(), []);
  });

  it('a configured base branch is visible everywhere; a detached HEAD sees only merged work', async () => {
    sh(repo, 'checkout', '-q', '-b', 'develop');
    commit(repo, 'd.txt', 'one');
    await write('dev-note');
    sh(repo, 'checkout', '-q', 'main');
    sh(repo, 'checkout', '-q', '-b', 'topic');
    commit(repo, 't.txt', 'one');
    assert.deepEqual(await listed(), []);
    const withBase = { ...here(), base: 'develop' };
    assert.deepEqual(
      (await c.core.call(R.list, { scope: { root: NS }, git: withBase })).items.map((x) => x.key),
      ['dev-note'],
    );
    sh(repo, 'checkout', '-q', '--detach', 'develop');
    assert.equal(here().branch, undefined);
    assert.deepEqual(await listed(), ['dev-note'], 'an ancestor of the detached HEAD, its branch merged there');
  });

  it('leaves hidden memories out inside both arms before the limit (a hidden best match never takes a place)', async () => {
    await write('visible', 'the parser handles commas');
    sh(repo, 'checkout', '-q', '-b', 'feat');
    commit(repo, 'f.txt', 'one');
    await write('hidden', 'parser parser parser handles commas commas');
    sh(repo, 'checkout', '-q', 'main');
    const fts = await c.core.call(R.search, { query: 'parser commas', mode: 'fts', limit: 1, git: here() });
    assert.deepEqual(
      fts.hits.map((h) => h.memory.key),
      ['visible'],
    );
    const all = await c.core.call(R.search, { query: 'parser commas', mode: 'fts', limit: 1 });
    assert.deepEqual(
      all.hits.map((h) => h.memory.key),
      ['hidden'],
      'without git the hidden one ranks first',
    );

    const DIM = 8;
    const model: VecModel = c.store.transaction(() => c.store.vectors.ensure('git-test', DIM));
    c.store.vectors.load(model);
    const rows = c.store.db.prepare('SELECT rowid, key FROM memories').all() as { rowid: number; key: string }[];
    const near = new Float32Array(DIM).fill(1);
    const far = new Float32Array(DIM).fill(1);
    far[0] = -1;
    c.store.transaction(() => rows.forEach((r, i) => c.store.vectors.put(model, r.rowid, r.key === 'hidden' ? near : far, i)));
    c.core.hooks.vectors = {
      unavailable: () => null,
      fusion: () => FUSION.builtin,
      search: async (_q, q) => c.store.vectors.knn(model, near, q),
    };
    const vec = await c.core.call(R.search, { query: 'x', mode: 'vector', limit: 1, git: here() });
    assert.deepEqual(
      vec.hits.map((h) => h.memory.key),
      ['visible'],
    );
    const hy = await c.core.call(R.search, { query: 'parser commas', limit: 5, git: here() });
    assert.deepEqual(
      hy.hits.map((h) => h.memory.key),
      ['visible'],
    );
    // Injection searches with the reader's checkout too.
    const block = await c.core.call(R.injectBlock, { prompt: 'parser commas', scope: { root: NS }, git: here() });
    assert.ok(block.block.includes('the parser handles commas'));
    assert.ok(!block.block.includes('parser parser parser'));
  });

  it('hovers read the checkout of the document’s repository and leave unmerged branches out (unless the client turns it off)', async () => {
    const anchored = (key: string) => ({
      namespace: NS,
      key,
      value: `hover note ${key}`,
      anchors: [{ path: 'src/x.ts', startLine: 1, endLine: 3 }],
    });
    const g = () => ({ branch: here().branch!, commit: here().head });
    await c.core.call(R.upsert, { ...anchored('main-hover'), git: g() });
    sh(repo, 'checkout', '-q', '-b', 'feat');
    commit(repo, 'f.txt', 'one');
    await c.core.call(R.upsert, { ...anchored('feat-hover'), git: g() });
    const uri = pathToFileURL(path.join(repo, 'src', 'x.ts')).href;
    const hover = async (opts: Record<string, unknown> = {}) => {
      const lsp = new LspDocuments(c.store);
      lsp.initialize({ rootUri: pathToFileURL(repo).href, initializationOptions: { projectNamespace: NS, ...opts } });
      lsp.gitHidden = (dir, scope) => c.core.git.hiddenIn(dir, scope);
      return (await lsp.hoverAll(uri, { line: 0, character: 0 }))?.contents.value ?? '';
    };
    fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
    let v = await hover();
    assert.ok(v.includes('feat-hover') && v.includes('main-hover'), v);
    sh(repo, 'checkout', '-q', 'main');
    const t0 = Date.now();
    c.store.now = () => t0 + 5000; // the hover's checkout is read again once 1 s has passed
    v = await hover();
    assert.ok(v.includes('main-hover') && !v.includes('feat-hover'), v);
    v = await hover({ gitVisibility: false });
    assert.ok(v.includes('feat-hover'), 'turned off by the client, nothing is hidden');
  });

  it('deleted stays deleted whatever the checkout, and answers are cached per HEAD', async () => {
    sh(repo, 'checkout', '-q', '-b', 'feat');
    commit(repo, 'f.txt', 'one');
    await write('gone');
    await write('kept');
    await c.core.call(R.delete, { namespace: NS, key: 'gone' });
    sh(repo, 'checkout', '-q', 'main');
    sh(repo, 'merge', '-q', '--no-ff', '-m', 'merge', 'feat');
    assert.deepEqual(await seen(), ['kept']);
    const withDeleted = await c.core.call(R.list, { scope: { root: NS }, include: { deleted: true }, git: here() });
    assert.deepEqual(withDeleted.items.map((m) => m.key).sort(), ['gone', 'kept']);

    sh(repo, 'checkout', '-q', '-b', 'feat2');
    commit(repo, 'g.txt', 'one');
    await write('f2');
    sh(repo, 'checkout', '-q', 'main');
    await seen();
    const before = c.core.git.oracle.spawned;
    await seen();
    await seen();
    assert.ok(c.core.git.oracle.spawned - before <= 2, `at most the refs listing again, got ${c.core.git.oracle.spawned - before}`);
  });
});
