/** The dashboard's edit form, conflict merge, error-field mapping and diff, checked against the real daemon. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { UpsertParams } from '../../daemon/src/protocol/types';
import { describeState, lineDiff } from '../../webview/src/diff';
import { conflictingFields, formFieldOf, FormError, formFromMemory, mergeForms, parseAnchor, upsertFromForm } from '../../webview/src/form';
import { rejectsWith, tempCore } from '../helpers';

describe('webview edit form', () => {
  it('round-trips every field of a memory through the form and the daemon', async () => {
    const c = tempCore();
    try {
      const m = (
        await c.core.call(R.upsert, {
          namespace: 'project.a',
          key: 'k',
          value: 'line one\nline two',
          kind: 'decision',
          tags: ['a', 'b'],
          importance: 0.7,
          confidence: 0.4,
          validFrom: '2026-01-01T00:00:00.000Z',
          expiresAt: '2027-01-01T00:00:00.000Z',
          anchors: [{ path: 'src/x.ts', startLine: 3, endLine: 9, symbol: 'fn' }],
          properties: { ticket: 'T-1', n: 2 },
        })
      ).memory;
      const form = formFromMemory(m);
      assert.equal(form.anchors, 'src/x.ts:3-9#fn');
      const params = upsertFromForm(form, m, m.version);
      assert.ok(UpsertParams.safeParse(params).success);
      const r = await c.core.call(R.upsert, params);
      assert.equal(r.changed, false, 'an untouched form saves nothing new');
      const edited = await c.core.call(R.upsert, upsertFromForm({ ...form, value: 'line one\nline 2', tags: 'a, c' }, m, m.version));
      assert.deepEqual([edited.memory.version, edited.memory.tags, edited.memory.value], [2, ['a', 'c'], 'line one\nline 2']);
      const h = await c.core.call(R.history, { id: m.id });
      assert.equal(h.entries[0].actor, 'dashboard', 'the edit is recorded with its actor');
      // a stale form conflicts
      await rejectsWith(c.core.call(R.upsert, upsertFromForm(form, m, m.version)), 'VersionConflict');
      // daemon validation errors name a field the form shows
      const bad = await rejectsWith(c.core.call(R.upsert, upsertFromForm({ ...form, validFrom: 'tomorrow' }, m, 2)), 'InvalidParams');
      assert.equal(formFieldOf(bad.field as string), 'validFrom');
      const badNum = await rejectsWith(c.core.call(R.upsert, upsertFromForm({ ...form, importance: 'high' }, m, 2)), 'InvalidParams');
      assert.equal(formFieldOf(badNum.field as string), 'importance');
      const badAnchor = await rejectsWith(c.core.call(R.upsert, upsertFromForm({ ...form, anchors: 'src/y.ts:0' }, m, 2)), 'InvalidParams');
      assert.equal(formFieldOf(badAnchor.field as string), 'anchors');
    } finally {
      c.close();
    }
  });

  it('reports form-side problems on their field', () => {
    const m = { namespace: 'n', key: 'k' };
    const base = {
      value: 'v',
      kind: 'fact',
      tags: '',
      importance: '0.5',
      confidence: '1',
      validFrom: '',
      validTo: '',
      expiresAt: '',
      anchors: '',
      properties: '',
    };
    assert.throws(
      () => upsertFromForm({ ...base, properties: '{oops' }, m, 1),
      (e: unknown) => e instanceof FormError && e.field === 'properties',
    );
    assert.throws(
      () => upsertFromForm({ ...base, properties: '[1]' }, m, 1),
      (e: unknown) => e instanceof FormError && e.field === 'properties',
    );
    assert.equal(formFieldOf('namespace'), undefined);
    assert.equal(formFieldOf(undefined), undefined);
    assert.equal(formFieldOf('properties.ticket'), 'properties');
    assert.deepEqual(parseAnchor('a/b.ts'), { path: 'a/b.ts' });
    assert.deepEqual(parseAnchor('a/b.ts:7'), { path: 'a/b.ts', startLine: 7 });
  });

  it('lists conflicting fields and merges per-field choices', () => {
    const theirs = {
      id: 'i',
      namespace: 'n',
      key: 'k',
      value: 'theirs',
      summary: null,
      kind: 'fact' as const,
      tags: ['t'],
      importance: 0.5,
      confidence: 1,
      source: 's',
      properties: {},
      anchors: [],
      createdAt: '',
      updatedAt: '',
      validFrom: null,
      validTo: null,
      expiresAt: null,
      lastAccessedAt: null,
      accessCount: 0,
      version: 3,
      status: 'active' as const,
      supersededBy: null,
      deletedAt: null,
      deletedBy: null,
    };
    const mine = { ...formFromMemory(theirs), value: 'mine', kind: 'note' };
    assert.deepEqual(conflictingFields(mine, theirs), ['value', 'kind']);
    const merged = mergeForms(mine, theirs, { kind: 'theirs' });
    assert.deepEqual([merged.value, merged.kind], ['mine', 'fact']);
    assert.deepEqual(conflictingFields(mergeForms(mine, theirs, { value: 'theirs', kind: 'theirs' }), theirs), []);
  });

  it('diffs two versions line by line', () => {
    assert.deepEqual(lineDiff('a\nb\nc', 'a\nB\nc\nd'), [
      { op: 'same', text: 'a' },
      { op: 'del', text: 'b' },
      { op: 'add', text: 'B' },
      { op: 'same', text: 'c' },
      { op: 'add', text: 'd' },
    ]);
    assert.deepEqual(lineDiff('', 'x'), [
      { op: 'del', text: '' },
      { op: 'add', text: 'x' },
    ]);
    assert.equal(describeState(null), '');
    assert.match(describeState({ value: 'v', tags: ['a'] }), /^value: v\nkind: null\ntags: \["a"\]/);
  });
});
