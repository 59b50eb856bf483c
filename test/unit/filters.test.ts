/** Filter trees: semantics of every leaf and combinator, the same on list and search, precise errors. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Filter } from '../../daemon/src/protocol/types';
import { rejectsWith, tempCore } from '../helpers';

let t: ReturnType<typeof tempCore>;
before(async () => {
  t = tempCore();
  let now = Date.parse('2026-03-01T00:00:00Z');
  t.store.now = () => now;
  const put = (key: string, extra: object) => t.core.call(R.upsert, { namespace: 'project.f', key, value: `kiwi note ${key}`, ...extra });
  await put('a', {
    kind: 'decision',
    tags: ['db', 'infra'],
    importance: 0.9,
    source: 'agent:copilot',
    properties: { priority: 3, team: 'core', done: true },
    anchors: [{ path: 'src/db.ts', startLine: 3 }],
  });
  now += 86_400_000;
  await put('b', {
    kind: 'fact',
    tags: ['db'],
    importance: 0.2,
    source: 'user',
    properties: { priority: 1 },
    expiresAt: '2027-01-01T00:00:00Z',
  });
  now += 86_400_000;
  await put('c', {
    kind: 'preference',
    tags: [],
    importance: 0.5,
    source: 'agent:claude',
    validFrom: '2026-01-01T00:00:00Z',
    validTo: '2026-12-31T00:00:00Z',
    anchors: [{ path: 'test/x.ts' }],
  });
});
after(() => t.close());

async function keys(filter: Filter): Promise<string[]> {
  const l = (await t.core.call(R.list, { filter })).items.map((m) => m.key).sort();
  const s = (await t.core.call(R.search, { query: 'kiwi', mode: 'fts', filter })).hits.map((h) => h.memory.key).sort();
  assert.deepEqual(s, l, 'search and list agree on the filter');
  return l;
}

describe('filter semantics', () => {
  const cases: [string, Filter, string[]][] = [
    ['kind eq', { field: 'kind', op: 'eq', value: 'decision' }, ['a']],
    ['kind in', { field: 'kind', op: 'in', value: ['fact', 'preference'] }, ['b', 'c']],
    ['source prefix', { field: 'source', op: 'prefix', value: 'agent:' }, ['a', 'c']],
    ['tags has', { field: 'tags', op: 'has', value: 'db' }, ['a', 'b']],
    ['tags hasAll', { field: 'tags', op: 'hasAll', value: ['db', 'infra'] }, ['a']],
    ['tags hasNone', { field: 'tags', op: 'hasNone', value: ['db'] }, ['c']],
    ['importance gte', { field: 'importance', op: 'gte', value: 0.5 }, ['a', 'c']],
    ['createdAt lt', { field: 'createdAt', op: 'lt', value: '2026-03-02T12:00:00Z' }, ['a', 'b']],
    ['expiresAt exists', { field: 'expiresAt', op: 'exists', value: true }, ['b']],
    [
      'not expiresAt lt includes memories without expiry',
      { not: { field: 'expiresAt', op: 'lt', value: '2030-01-01T00:00:00Z' } },
      ['a', 'c'],
    ],
    ['validAt', { field: 'validAt', op: 'eq', value: '2026-02-01T00:00:00Z' }, ['a', 'b', 'c']],
    ['validAt outside', { field: 'validAt', op: 'eq', value: '2025-06-01T00:00:00Z' }, ['a', 'b']],
    ['anchors.path eq', { field: 'anchors.path', op: 'eq', value: 'src/db.ts' }, ['a']],
    ['anchors.path prefix', { field: 'anchors.path', op: 'prefix', value: 'test/' }, ['c']],
    ['anchors.path exists false', { field: 'anchors.path', op: 'exists', value: false }, ['b']],
    ['property number', { property: 'priority', op: 'gt', value: 1 }, ['a']],
    ['property string', { property: 'team', op: 'eq', value: 'core' }, ['a']],
    ['property boolean', { property: 'done', op: 'eq', value: true }, ['a']],
    ['property exists', { property: 'priority', op: 'exists', value: true }, ['a', 'b']],
    [
      'and/or/not',
      {
        and: [
          {
            or: [
              { field: 'kind', op: 'eq', value: 'fact' },
              { field: 'kind', op: 'eq', value: 'decision' },
            ],
          },
          { not: { field: 'tags', op: 'has', value: 'infra' } },
        ],
      },
      ['b'],
    ],
  ];
  for (const [name, f, expected] of cases) it(name, async () => assert.deepEqual(await keys(f), expected));
});

describe('invalid filters name the bad node', () => {
  const bad: [string, unknown, string][] = [
    ['unknown field', { field: 'colour', op: 'eq', value: 'red' }, 'filter'],
    [
      'bad op inside and',
      {
        and: [
          { field: 'kind', op: 'eq', value: 'fact' },
          { field: 'kind', op: 'like', value: 'f%' },
        ],
      },
      'filter.and[1]',
    ],
    ['extra key', { field: 'kind', op: 'eq', value: 'fact', x: 1 }, 'filter'],
    ['empty and', { and: [] }, 'filter.and'],
    ['bad date', { field: 'createdAt', op: 'lt', value: 'yesterday' }, 'filter.value'],
  ];
  for (const [name, f, field] of bad) {
    it(name, async () => {
      const d = await rejectsWith(t.core.request('memory/list', { filter: f }), 'InvalidFilter');
      assert.ok(String(d.field).startsWith(field), `field ${String(d.field)} should start with ${field}`);
    });
  }
  it('tags has with a list', async () => {
    await rejectsWith(t.core.call(R.list, { filter: { field: 'tags', op: 'has', value: ['a', 'b'] } }), 'InvalidFilter', 'filter.value');
  });
  it('depth limit', async () => {
    let f: Filter = { field: 'kind', op: 'eq', value: 'fact' };
    for (let i = 0; i < 20; i++) f = { not: f };
    await rejectsWith(t.core.call(R.list, { filter: f }), 'InvalidFilter');
  });
});
