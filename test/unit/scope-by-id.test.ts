/**
 * Scope without a scope parameter: every path that names a memory by id (or by key) honours the caller's
 * scope when one is given — get, history, delete, restore, forget, purge, upsert's `supersedes` and its
 * namespace, link, unlink, neighbors — and the LSP hover / anchor tracking of a document stays inside the
 * document's project. Each out-of-scope attempt must fail with NotFound (or InvalidParams for a namespace
 * outside the scope) and leave the other project's memory exactly as it was.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Memory, Scope } from '../../daemon/src/protocol/types';
import { LspDocuments } from '../../daemon/src/server/lsp';
import { rejectsWith, tempCore } from '../helpers';

let t: ReturnType<typeof tempCore>;
let mine: Memory;
let mine2: Memory;
let theirs: Memory;
let theirsDeleted: Memory;
const A: Scope = { root: 'project.a', includeUser: true };

before(async () => {
  t = tempCore();
  mine = (
    await t.core.call(R.upsert, {
      namespace: 'project.a',
      key: 'k',
      value: 'mine',
      anchors: [{ path: 'src/x.ts', startLine: 2, endLine: 3 }],
    })
  ).memory;
  mine2 = (await t.core.call(R.upsert, { namespace: 'project.a', key: 'k2', value: 'mine too' })).memory;
  theirs = (
    await t.core.call(R.upsert, {
      namespace: 'other.a',
      key: 'k',
      value: 'their secret plan',
      anchors: [{ path: 'src/x.ts', startLine: 2, endLine: 3 }],
    })
  ).memory;
  const d = (await t.core.call(R.upsert, { namespace: 'other.a', key: 'gone', value: 'deleted elsewhere' })).memory;
  theirsDeleted = (await t.core.call(R.delete, { id: d.id })).memory;
});
after(() => t.close());

async function unchanged(): Promise<void> {
  const now = await t.core.call(R.get, { id: theirs.id });
  assert.equal(now.version, theirs.version, 'the other project’s memory must not change');
  assert.equal(now.status, 'active');
  assert.equal(now.deletedAt, null);
}

describe('by-id paths honour the caller’s scope', () => {
  it('memory/get by id and by key', async () => {
    await rejectsWith(t.core.call(R.get, { id: theirs.id, scope: A }), 'NotFound', 'id');
    await rejectsWith(t.core.call(R.get, { namespace: 'other.a', key: 'k', scope: A }), 'NotFound', 'key');
    assert.equal((await t.core.call(R.get, { id: mine.id, scope: A })).value, 'mine');
    assert.equal((await t.core.call(R.get, { namespace: 'project.a', key: 'k', scope: A })).value, 'mine');
  });

  it('memory/history by id and by key returns nothing of another namespace', async () => {
    await rejectsWith(t.core.call(R.history, { id: theirs.id, scope: A }), 'NotFound', 'id');
    await rejectsWith(t.core.call(R.history, { namespace: 'other.a', key: 'k', scope: A }), 'NotFound', 'key');
    const own = await t.core.call(R.history, { id: mine.id, scope: A });
    assert.equal(own.entries[0].memoryId, mine.id);
    // without a scope the admin view still answers
    assert.equal((await t.core.call(R.history, { id: theirs.id })).entries[0].memoryId, theirs.id);
  });

  it('memory/delete, forget, restore and purge refuse a memory outside the scope', async () => {
    await rejectsWith(t.core.call(R.delete, { id: theirs.id, scope: A }), 'NotFound', 'id');
    await rejectsWith(t.core.call(R.delete, { namespace: 'other.a', key: 'k', scope: A }), 'NotFound', 'key');
    await rejectsWith(t.core.call(R.forget, { id: theirs.id, scope: A }), 'NotFound', 'id');
    await rejectsWith(t.core.call(R.restore, { id: theirsDeleted.id, scope: A }), 'NotFound', 'id');
    await rejectsWith(t.core.call(R.purge, { id: theirsDeleted.id, scope: A }), 'NotFound', 'id');
    await unchanged();
    assert.ok(
      (await t.core.call(R.get, { id: theirsDeleted.id, includeDeleted: true })).deletedAt,
      'still deleted, not restored or purged',
    );
  });

  it('memory/upsert: supersedes and namespace must lie in the scope', async () => {
    await rejectsWith(
      t.core.call(R.upsert, { namespace: 'project.a', key: 'new', value: 'replaces theirs', supersedes: theirs.id, scope: A }),
      'NotFound',
      'supersedes',
    );
    await rejectsWith(
      t.core.call(R.upsert, { namespace: 'other.a', key: 'x', value: 'written elsewhere', scope: A }),
      'InvalidParams',
      'namespace',
    );
    await rejectsWith(
      t.core.call(R.upsert, { namespace: 'project.a', key: 'x', value: 'v', scope: { root: 'Bad Ns' } }),
      'InvalidNamespace',
    );
    await unchanged();
    await rejectsWith(t.core.call(R.get, { namespace: 'project.a', key: 'new' }), 'NotFound');
    // inside the scope it works, including `user`
    const r = await t.core.call(R.upsert, { namespace: 'project.a', key: 'k3', value: 'replaces mine2', supersedes: mine2.id, scope: A });
    assert.equal((await t.core.call(R.get, { id: mine2.id, includeDeleted: true })).supersededBy, r.memory.id);
    await t.core.call(R.upsert, { namespace: 'user.prefs', key: 'p', value: 'tabs', scope: A });
  });

  it('memory/upsertBatch items carry their own scope', async () => {
    const r = await t.core.call(R.upsertBatch, {
      items: [{ namespace: 'project.a', key: 'b1', value: 'v', supersedes: theirs.id, scope: A }],
    });
    assert.equal(r.results[0].ok, false);
    await unchanged();
  });

  it('memory/link, unlink and neighbors refuse an endpoint outside the scope', async () => {
    await rejectsWith(t.core.call(R.link, { from: mine.id, to: theirs.id, type: 'relates_to', scope: A }), 'NotFound', 'to');
    await rejectsWith(t.core.call(R.unlink, { from: theirs.id, to: mine.id, type: 'relates_to', scope: A }), 'NotFound', 'from');
    await rejectsWith(t.core.call(R.neighbors, { id: theirs.id, scope: A }), 'NotFound', 'id');
  });
});

describe('hover and anchor tracking honour the document’s project', () => {
  const uri = 'file:///work/space/src/x.ts';
  const hoverAt = (lsp: LspDocuments, line: number) => lsp.hover(uri, { line, character: 0 })?.contents.value ?? null;

  it('shows only the project’s memories anchored to the same relative path', () => {
    const lsp = new LspDocuments(t.store);
    lsp.initialize({ rootUri: 'file:///work/space', initializationOptions: { projectNamespace: 'project.a' } });
    const v = hoverAt(lsp, 1);
    assert.ok(v && v.includes('mine'), String(v));
    assert.ok(!v!.includes('their secret plan'), 'another project’s memory leaked into the hover');
    assert.ok(!v!.includes('other.a'));
  });

  it('derives the project from the workspace folder when the client gives none', () => {
    const lsp = new LspDocuments(t.store);
    lsp.initialize({ rootUri: 'file:///work/space' }); // no git: project.space
    assert.deepEqual(lsp.scopeFor(uri), { root: 'project.space', includeUser: true });
    assert.equal(hoverAt(lsp, 1), null, 'neither project.a nor other.a is this folder’s project');
  });

  it('moves only the project’s anchors on an edit', async () => {
    const lsp = new LspDocuments(t.store);
    lsp.initialize({ rootUri: 'file:///work/space', initializationOptions: { projectNamespace: 'project.a' } });
    (lsp as unknown as { shiftAnchors(u: string, c: unknown): void }).shiftAnchors(uri, {
      range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
      text: 'x\n',
    });
    assert.equal((await t.core.call(R.get, { id: mine.id })).anchors[0].startLine, 3);
    assert.equal((await t.core.call(R.get, { id: theirs.id })).anchors[0].startLine, 2, 'the other project’s anchor moved');
  });

  it('ignores a malformed projectNamespace and falls back to the derived one', () => {
    const lsp = new LspDocuments(t.store);
    lsp.initialize({ rootUri: 'file:///work/space', initializationOptions: { projectNamespace: '../../etc', includeUser: false } });
    assert.deepEqual(lsp.scopeFor(uri), { root: 'project.space', includeUser: false });
  });
});
