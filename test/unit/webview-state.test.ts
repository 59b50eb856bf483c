/** The dashboard webview's state: scope and chips -> protocol params, restore, snippets, paging, change effects, debounce. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Filter, SearchParams } from '../../daemon/src/protocol/types';
import {
  changeEffects,
  debounce,
  realTimers,
  emptyChips,
  filterFor,
  includeFor,
  initialState,
  pageCount,
  pageOf,
  restoreState,
  scopeFor,
  searchParams,
  splitList,
  splitSnippet,
  toggle,
} from '../../webview/src/state';

describe('webview state', () => {
  it('maps each scope choice to a protocol scope', () => {
    assert.deepEqual(scopeFor('project', 'project.app'), { root: 'project.app' });
    assert.deepEqual(scopeFor('project', null), { root: 'user', includeUser: false });
    assert.deepEqual(scopeFor('user', 'project.app'), { root: 'user', includeUser: false });
    assert.deepEqual(scopeFor('team', 'project.app'), { root: 'team', includeUser: false });
    assert.equal(scopeFor('all', 'project.app'), undefined);
  });

  it('turns filter chips into a filter tree the protocol accepts', () => {
    assert.equal(filterFor(emptyChips()), undefined);
    assert.deepEqual(filterFor({ ...emptyChips(), kinds: ['decision'] }), { field: 'kind', op: 'in', value: ['decision'] });
    const all = filterFor({
      kinds: ['fact', 'note'],
      statuses: ['proposed'],
      sources: ['cli'],
      tags: ['billing'],
      from: '2026-01-01',
      to: '2026-01-31',
    });
    assert.deepEqual(all, {
      and: [
        { field: 'kind', op: 'in', value: ['fact', 'note'] },
        { field: 'source', op: 'in', value: ['cli'] },
        { field: 'status', op: 'in', value: ['proposed'] },
        { field: 'tags', op: 'hasAny', value: ['billing'] },
        { field: 'updatedAt', op: 'gte', value: '2026-01-01T00:00:00.000Z' },
        { field: 'updatedAt', op: 'lte', value: '2026-01-31T23:59:59.999Z' },
      ],
    });
    assert.ok(Filter.safeParse(all).success, 'the protocol schema accepts the tree');
    assert.deepEqual(includeFor({ ...emptyChips(), statuses: ['proposed', 'superseded'] }), { proposed: true, superseded: true });
    assert.equal(includeFor({ ...emptyChips(), statuses: ['active'] }), undefined);
  });

  it('builds search params that validate against the protocol', () => {
    const s = { ...initialState(), query: '  rounding ', mode: 'fts' as const, explain: true, chips: { ...emptyChips(), tags: ['x'] } };
    const p = searchParams(s, { projectNamespace: 'project.app' });
    assert.deepEqual(p, {
      query: 'rounding',
      mode: 'fts',
      limit: 100,
      scope: { root: 'project.app' },
      filter: { field: 'tags', op: 'hasAny', value: ['x'] },
      explain: true,
    });
    assert.ok(SearchParams.safeParse(p).success);
    const everything = searchParams({ ...initialState(), scope: 'all' }, { projectNamespace: null });
    assert.equal('scope' in everything, false);
    assert.ok(SearchParams.safeParse(everything).success);
  });

  it('restores any saved state into a valid one', () => {
    assert.deepEqual(restoreState(undefined), initialState());
    assert.deepEqual(restoreState('garbage'), initialState());
    const r = restoreState({
      tab: 'review',
      query: 'q',
      mode: 'vector',
      scope: 'nowhere',
      page: -1,
      selectedId: 7,
      explain: 'yes',
      chips: { kinds: ['fact', 3], from: 'yesterday', to: '2026-02-03' },
    });
    assert.equal(r.tab, 'review');
    assert.equal(r.query, 'q');
    assert.equal(r.mode, 'hybrid', 'an unknown mode falls back');
    assert.equal(r.scope, 'project');
    assert.equal(r.page, 0);
    assert.equal(r.selectedId, null);
    assert.equal(r.explain, false);
    assert.deepEqual(r.chips, { kinds: ['fact'], statuses: [], sources: [], tags: [], from: '', to: '2026-02-03' });
    const full = { ...initialState(), tab: 'import' as const, selectedId: 'abc', page: 2, explain: true };
    assert.deepEqual(restoreState(JSON.parse(JSON.stringify(full))), full, 'a saved state comes back as it was');
  });

  it('splits snippets into highlighted and plain text segments', () => {
    assert.deepEqual(splitSnippet('round «half» even, «banker» rule'), [
      { text: 'round ', hit: false },
      { text: 'half', hit: true },
      { text: ' even, ', hit: false },
      { text: 'banker', hit: true },
      { text: ' rule', hit: false },
    ]);
    assert.deepEqual(
      splitSnippet('<img src=x onerror=alert(1)>'),
      [{ text: '<img src=x onerror=alert(1)>', hit: false }],
      'markup stays text',
    );
    assert.deepEqual(splitSnippet(''), []);
  });

  it('pages results and clamps the page', () => {
    const items = Array.from({ length: 45 }, (_, i) => i);
    assert.equal(pageCount(45), 3);
    assert.equal(pageCount(0), 1);
    assert.deepEqual(pageOf(items, 2), [40, 41, 42, 43, 44]);
    assert.deepEqual(pageOf(items, 9), [40, 41, 42, 43, 44], 'a page past the end shows the last one');
    assert.deepEqual(pageOf([], 3), []);
  });

  it('knows what a store change refreshes', () => {
    const c = { position: 3, id: 'm1', namespace: 'project.a', key: 'k', op: 'update' };
    assert.deepEqual(changeEffects(c, 'm1'), { search: true, selected: true, review: true, overview: true });
    assert.equal(changeEffects(c, 'm2').selected, false);
    assert.equal(changeEffects(c, null).selected, false);
    assert.deepEqual(changeEffects({ ...c, op: 'access' }, 'm1'), { search: false, selected: false, review: false, overview: false });
  });

  it('toggles chips and splits lists', () => {
    assert.deepEqual(toggle(['a'], 'b'), ['a', 'b']);
    assert.deepEqual(toggle(['a', 'b'], 'a'), ['b']);
    assert.deepEqual(splitList(' a, b ,,a,c '), ['a', 'b', 'c']);
  });

  it('debounces bursts into one call with the last arguments', () => {
    const pending = new Map<number, () => void>();
    let next = 1;
    const timers = {
      set: (fn: () => void) => {
        const id = next++;
        pending.set(id, fn);
        return id;
      },
      clear: (id: unknown) => void pending.delete(id as number),
    };
    const calls: string[] = [];
    const d = debounce((q: string) => calls.push(q), 200, timers);
    d('r');
    d('ro');
    d('rou');
    assert.equal(pending.size, 1, 'only the last timer is armed');
    for (const [id, fn] of [...pending]) {
      pending.delete(id);
      fn();
    }
    assert.deepEqual(calls, ['rou']);
    d('x');
    d.cancel();
    assert.equal(pending.size, 0);
  });

  it('uses the real timers as plain functions (a browser throws "Illegal invocation" otherwise)', async () => {
    const t = realTimers;
    // Called detached from any object, as a browser requires of setTimeout/clearTimeout.
    const set = t.set;
    const clear = t.clear;
    await new Promise<void>((resolve) => set.call(undefined, resolve, 1));
    clear.call(
      undefined,
      set.call(undefined, () => assert.fail('cleared timer fired'), 1),
    );
    const fired: number[] = [];
    const d = debounce((n: number) => fired.push(n), 5);
    d(1);
    d(2);
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(fired, [2]);
  });
});
