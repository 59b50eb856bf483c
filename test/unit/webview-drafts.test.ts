/**
 * The dashboard never loses a user's work: an unsaved edit lives in the webview's state (vscode.setState), comes
 * back after the panel was hidden or the window reloaded, and is saved against the version it was made from. Plus
 * what the dashboard asks before destroying something, and the small wording rules of issue 24.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { HostRequests } from '../../daemon/src/protocol/webview';
import { deleteQuestion, discardQuestion, forgetQuestion, rejectQuestion } from '../../webview/src/confirm';
import { formFromMemory, upsertFromForm } from '../../webview/src/form';
import {
  emptyChips,
  exactTime,
  initialState,
  MAX_DRAFTS,
  noResultsHint,
  overviewTotals,
  relativeTime,
  restoreState,
  resultSummary,
  withDraft,
} from '../../webview/src/state';
import { rejectsWith, tempCore } from '../helpers';

/** What vscode.setState keeps and getState hands back after a reload: a JSON copy. */
const reload = (s: unknown) => restoreState(JSON.parse(JSON.stringify(s)));

describe('webview drafts', () => {
  it('keeps an unsaved edit across a reload of the webview and saves it against the version it was made from', async () => {
    const c = tempCore();
    try {
      const m = (await c.core.call(R.upsert, { namespace: 'project.a', key: 'rule', value: 'round half-even', importance: 0.5 })).memory;
      const stored = formFromMemory(m);
      const form = { ...stored, value: 'round half-even; edited in the dashboard', importance: '0.9' };
      const s = {
        ...initialState(),
        selectedId: m.id,
        drafts: withDraft({}, m.id, { label: 'project.a/rule', form, stored, base: m.version }),
      };
      const back = reload(s);
      assert.deepEqual(back.drafts[m.id], { label: 'project.a/rule', base: 1, form, changed: ['value', 'importance'] });
      assert.equal(back.selectedId, m.id);
      // saved from the restored draft: the edit lands
      const saved = await c.core.call(R.upsert, upsertFromForm(back.drafts[m.id].form, m, back.drafts[m.id].base));
      assert.equal(saved.memory.value, 'round half-even; edited in the dashboard');
      assert.equal(saved.memory.importance, 0.9);
      // a draft restored after someone else wrote meanwhile conflicts instead of overwriting their change
      const theirs = await c.core.call(R.upsert, { namespace: 'project.a', key: 'rule', value: 'round half-up (CLI)' });
      const stale = reload({ ...s, drafts: withDraft({}, m.id, { label: 'project.a/rule', form, stored, base: saved.memory.version }) });
      await rejectsWith(c.core.call(R.upsert, upsertFromForm(stale.drafts[m.id].form, m, stale.drafts[m.id].base)), 'VersionConflict');
      assert.equal((await c.core.call(R.get, { id: m.id })).version, theirs.memory.version);
    } finally {
      c.close();
    }
  });

  it('drops a draft once it matches the stored form again, or when it is saved or discarded', () => {
    const stored = {
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
    const d = withDraft({}, 'a', { label: 'ns/a', form: { ...stored, value: 'w' }, stored, base: 3 });
    assert.deepEqual(Object.keys(d), ['a']);
    assert.deepEqual(withDraft(d, 'a', { label: 'ns/a', form: { ...stored }, stored, base: 3 }), {}, 'typed back to the stored text');
    assert.deepEqual(withDraft(d, 'a', null), {}, 'saved or discarded');
    // many drafts: the newest MAX_DRAFTS are kept
    let many = {};
    for (let i = 0; i < MAX_DRAFTS + 5; i++)
      many = withDraft(many, `m${i}`, { label: `ns/m${i}`, form: { ...stored, value: `x${i}` }, stored, base: 1 });
    const keys = Object.keys(reload({ drafts: many }).drafts);
    assert.equal(keys.length, MAX_DRAFTS);
    assert.equal(keys.at(-1), `m${MAX_DRAFTS + 4}`);
    assert.ok(!keys.includes('m0'), 'the oldest went first');
  });

  it('restores only well-formed drafts from whatever getState returned', () => {
    const form = {
      value: 'v',
      kind: 'fact',
      tags: '',
      importance: '1',
      confidence: '1',
      validFrom: '',
      validTo: '',
      expiresAt: '',
      anchors: '',
      properties: '',
    };
    const r = restoreState({
      drafts: {
        good: { label: 'ns/good', base: 2, form, changed: ['value', 'bogus'] },
        noBase: { label: 'ns/x', form },
        badForm: { label: 'ns/y', base: 1, form: { value: 3 } },
        noLabel: { base: 1, form },
      },
    });
    assert.deepEqual(Object.keys(r.drafts), ['good']);
    assert.deepEqual(r.drafts.good.changed, ['value']);
    assert.deepEqual(restoreState({ drafts: [1, 2] }).drafts, {});
    assert.deepEqual(initialState().drafts, {});
  });
});

describe('webview questions before destroying', () => {
  const m = { namespace: 'project.a', key: 'rule' };
  it('asks before Delete, Forget and Reject, and Forget says it is permanent for the value as the extension does', () => {
    const f = forgetQuestion(m);
    assert.equal(f.message, 'Forget "rule"?');
    assert.equal(f.confirm, 'Forget');
    // the extension's own Forget command (extension/src/commands.ts) explains it with these words
    assert.ok(
      f.detail?.includes('Cairn deletes project.a/rule and refuses to store this value in project.a again (agents cannot re-learn it).'),
    );
    assert.match(f.detail!, /permanent/);
    assert.match(deleteQuestion(m).detail!, /undo/);
    assert.doesNotMatch(deleteQuestion(m).detail!, /unsaved/);
    assert.match(deleteQuestion(m, true).detail!, /unsaved changes to it are discarded too/);
    const one = rejectQuestion([m]);
    assert.deepEqual([one.message, one.confirm], ['Reject "rule"?', 'Reject']);
    const bulk = rejectQuestion(Array.from({ length: 7 }, (_, i) => ({ namespace: 'project.a', key: `k${i}` })));
    assert.deepEqual([bulk.message, bulk.confirm], ['Reject 7 proposed memories?', 'Reject 7']);
    assert.match(bulk.detail!, /project\.a\/k4 and 2 more/);
    const d = discardQuestion('project.a/rule', ['value', 'tags'], 'The memory closes.');
    assert.equal(d.message, 'Discard your unsaved changes to "rule"?');
    assert.equal(d.detail, 'You changed value, tags of project.a/rule and did not save. The memory closes.');
    for (const q of [f, one, bulk, d, deleteQuestion(m)])
      assert.ok(HostRequests['host/confirm'].params.safeParse(q).success, 'a valid host/confirm');
  });
});

describe('webview wording', () => {
  it('says "first 100" at the page cap, labels an empty query "newest first", and hints what to try on no results', () => {
    assert.equal(resultSummary({ count: 100, limit: 100, ms: 12, mode: 'hybrid', listing: false }), 'First 100 results in 12 ms (hybrid)');
    assert.equal(resultSummary({ count: 7, limit: 100, ms: 3, mode: 'fts', listing: false }), '7 results in 3 ms (full text)');
    assert.equal(resultSummary({ count: 1, limit: 100, ms: 3, mode: 'hybrid', listing: true }), '1 result in 3 ms (newest first)');
    assert.equal(
      resultSummary({ count: 0, limit: 100, ms: 3, mode: 'hybrid', listing: false, degraded: 'fts-only' }),
      'No results in 3 ms (hybrid, degraded: fts-only)',
    );
    const st = {
      ...initialState(),
      query: 'rounding rule for invoices',
      mode: 'fts' as const,
      chips: { ...emptyChips(), kinds: ['fact'] },
    };
    assert.equal(
      noResultsHint(st),
      'Try to clear the filters, use fewer words, switch to Hybrid to match by meaning or search Everything instead of one scope.',
    );
    assert.equal(noResultsHint({ ...initialState(), query: 'x', scope: 'all' }), 'Try other words, or a shorter query.');
    assert.match(noResultsHint({ ...initialState(), scope: 'all' }), /^Nothing is stored here yet/);
  });

  it('shows times relative to now, with the exact time for the tooltip', () => {
    const now = Date.parse('2026-03-10T12:00:00Z');
    assert.equal(relativeTime('2026-03-10T11:59:50Z', now), 'just now');
    assert.equal(relativeTime('2026-03-10T11:55:00Z', now), '5 min ago');
    assert.equal(relativeTime('2026-03-10T09:00:00Z', now), '3 h ago');
    assert.equal(relativeTime('2026-03-09T10:00:00Z', now), 'yesterday');
    assert.equal(relativeTime('2026-03-06T12:00:00Z', now), '4 days ago');
    assert.equal(relativeTime('2026-01-01T00:00:00Z', now), '2026-01-01');
    assert.equal(relativeTime('2026-03-12T12:00:00Z', now), 'in 2 days');
    assert.equal(relativeTime('not a time', now), 'not a time');
    assert.equal(exactTime('2026-03-10T11:55:00.123Z'), '2026-03-10 11:55:00 UTC');
  });

  it('heads the overview with counts that agree with its tables', async () => {
    const c = tempCore();
    try {
      for (const k of ['a', 'b', 'c']) await c.core.call(R.upsert, { namespace: 'project.a', key: k, value: `value ${k}` });
      await c.core.call(R.upsert, { namespace: 'project.a', key: 'p', value: 'proposed', status: 'proposed' });
      const gone = await c.core.call(R.upsert, { namespace: 'project.a', key: 'gone', value: 'deleted one' });
      await c.core.call(R.delete, { id: gone.memory.id });
      await c.core.call(R.upsert, { namespace: 'user', key: 'u', value: 'out of scope' });
      const o = await c.core.call(R.overview, { scope: { root: 'project.a', includeUser: false } });
      const t = overviewTotals(o);
      assert.deepEqual(t, { live: 4, deleted: 1 });
      const sum = (rows: { name: string; count: number }[]) => rows.filter((r) => r.name !== 'deleted').reduce((a, r) => a + r.count, 0);
      assert.equal(sum(o.byKind), t.live);
      assert.equal(sum(o.byStatus), t.live);
      const status = await c.core.call(R.status, {});
      assert.notEqual(status.counts.memories, t.live, 'the store-wide count is another number, so the headline must not use it');
    } finally {
      c.close();
    }
  });
});
