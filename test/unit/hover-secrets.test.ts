/**
 * Hovers mask secret memories: a hover is seen by whoever watches the screen and by screen-reading agents, so a
 * memory tagged `secret` (any spelling) shows its key and a note, never its value or summary; others show their text.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { LspDocuments, SECRET_HOVER_NOTE } from '../../daemon/src/server/lsp';
import { tempCore } from '../helpers';

describe('hovers mask memories tagged secret', () => {
  let t: ReturnType<typeof tempCore>;
  const uri = 'file:///work/space/src/deploy.ts';
  before(async () => {
    t = tempCore();
    const anchors = [{ path: 'src/deploy.ts', startLine: 1, endLine: 3 }];
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'deploy-notes', value: 'deploys go through the blue pipeline', anchors });
    await t.core.call(R.upsert, {
      namespace: 'project.a',
      key: 'deploy-password',
      value: 'the staging password is hunter2-kumquat',
      tags: ['ops', 'secret'],
      anchors,
    });
    const legacy = await t.core.call(R.upsert, { namespace: 'project.a', key: 'old-token', value: 'legacy token tangerine-77', anchors });
    // Stored in an older spelling, as a store written before tags were normalized holds it.
    t.store.db
      .prepare('UPDATE memories SET tags = ?, summary = ? WHERE id = ?')
      .run('[" Secret"]', 'summary naming tangerine-77', legacy.memory.id);
  });
  after(() => t.close());

  it('shows the key and the note, never the value or summary, and the ordinary memory in full', () => {
    const lsp = new LspDocuments(t.store);
    lsp.initialize({ rootUri: 'file:///work/space', initializationOptions: { projectNamespace: 'project.a' } });
    const v = lsp.hover(uri, { line: 0, character: 0 })!.contents.value;
    assert.ok(v.includes('deploys go through the blue pipeline'), v);
    assert.ok(v.includes('deploy\\-password') || v.includes('deploy-password'), v);
    assert.ok(v.includes('old\\-token') || v.includes('old-token'), v);
    assert.ok(!v.includes('hunter2'), v);
    assert.ok(!v.includes('tangerine'), v);
    assert.equal(v.split(SECRET_HOVER_NOTE).length - 1, 2, v);
    assert.match(v, /command:cairn\.openMemory/);
  });
});
