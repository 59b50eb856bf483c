/**
 * Bad input never becomes an Internal error: every method, fed malformed and
 * randomly generated params, either succeeds or fails with a typed,
 * documented code, and the store stays usable.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CairnError } from '../../daemon/src/protocol/errors';
import { Requests } from '../../daemon/src/protocol/methods';
import { rng } from '../../bench/corpus';
import { tempCore } from '../helpers';

let t: ReturnType<typeof tempCore>;
before(async () => {
  t = tempCore();
  await t.core.call(Requests.upsert, { namespace: 'project.fuzz', key: 'seed', value: 'a seed memory' });
});
after(() => t.close());

const fixed: unknown[] = [
  undefined,
  null,
  0,
  -1,
  1e308,
  'text',
  '',
  true,
  [],
  [1, 2],
  {},
  { id: null },
  { id: 'x'.repeat(10_000) },
  { namespace: '\u0000', key: '\uD800', value: '\uFFFF' },
  { namespace: 'user', key: 'k', value: 'v', anchors: [{ path: '' }] },
  { query: 'x', filter: { and: [{ or: [] }] } },
  { query: 'x', scope: { root: '..' } },
  { records: [null, 1, 'x', {}] },
  { position: -5 },
  { position: 1e20 },
  { limit: 1e9 },
  { cursor: '%%%' },
  { from: 'a', to: 'a', type: 'relates_to' },
  { prompt: 'x', k: 0 },
  { title: 'x', scope: { namespaces: ['*'] } },
];

function randomValue(r: () => number, depth = 0): unknown {
  const k = Math.floor(r() * (depth > 2 ? 6 : 8));
  switch (k) {
    case 0:
      return null;
    case 1:
      return Math.floor(r() * 2000) - 1000;
    case 2:
      return r() < 0.5;
    case 3:
      return ['user', 'project.a', '', 'A B', '%', 'x'.repeat(300), '2026-01-01T00:00:00Z', 'not-a-date'][Math.floor(r() * 8)];
    case 4:
      return r() * 1e6;
    case 5:
      return undefined;
    case 6:
      return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default: {
      const keys = [
        'namespace',
        'key',
        'value',
        'id',
        'query',
        'scope',
        'filter',
        'limit',
        'mode',
        'include',
        'tags',
        'anchors',
        'properties',
        'position',
        'timeoutMs',
        'records',
        'from',
        'to',
        'type',
        'prompt',
        'taskId',
        'title',
        'field',
        'op',
        'root',
      ];
      return Object.fromEntries(
        Array.from({ length: Math.floor(r() * 5) }, () => [keys[Math.floor(r() * keys.length)], randomValue(r, depth + 1)]),
      );
    }
  }
}

describe('bad input is refused with typed errors, never Internal', () => {
  for (const def of Object.values(Requests)) {
    if (def.method === 'initialize' || def.method === 'shutdown' || def.method === 'index/rebuild') continue;
    it(def.method, async () => {
      const r = rng(def.method.length * 7919);
      const inputs = [...fixed, ...Array.from({ length: 60 }, () => randomValue(r))];
      for (const params of inputs) {
        try {
          await t.core.request(def.method, params);
        } catch (e) {
          assert.ok(e instanceof CairnError, `${def.method} ${JSON.stringify(params)?.slice(0, 200)} threw ${(e as Error)?.stack}`);
          assert.notEqual(e.data.name, 'Internal', `${def.method} ${JSON.stringify(params)?.slice(0, 200)}: ${e.message}`);
        }
      }
      assert.equal(
        (await t.core.call(Requests.get, { namespace: 'project.fuzz', key: 'seed' })).value,
        'a seed memory',
        'store still usable',
      );
    });
  }
});
