/**
 * The scope rule on the store-wide methods: a caller that gives a scope never sees or touches memories outside it —
 * memory/erase (by id, by key, by root), store/import and store/importPreview (records outside the scope are
 * refused before anything is written or looked up; history, links and rejected values naming out-of-scope memories
 * are skipped), and, as guards, store/export, store/exportPage, store/overview and store/audit.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests } from '../../daemon/src/protocol/methods';
import type { ExportRecord } from '../../daemon/src/protocol/types';
import { rejectsWith, tempCore } from '../helpers';

const scopeA = { root: 'project.a', includeUser: false };

async function seeded() {
  const t = tempCore();
  const a = await t.core.call(Requests.upsert, { namespace: 'project.a', key: 'mine', value: 'alpha inside the scope' });
  const b = await t.core.call(Requests.upsert, { namespace: 'project.b', key: 'theirs', value: 'bravo outside the scope' });
  await t.core.call(Requests.upsert, { namespace: 'project.b.sub', key: 'deep', value: 'bravo deeper' });
  await t.core.call(Requests.link, { from: a.memory.id, to: b.memory.id, type: 'relates_to' });
  return { t, a: a.memory, b: b.memory };
}

describe('memory/erase honours the caller scope', () => {
  it('by id, by key and by root: out of scope is NotFound and nothing is erased; in scope works', async () => {
    const { t, a, b } = await seeded();
    try {
      await rejectsWith(t.core.call(Requests.erase, { id: b.id, scope: scopeA }), 'NotFound', 'id');
      await rejectsWith(t.core.call(Requests.erase, { namespace: 'project.b', key: 'theirs', scope: scopeA }), 'NotFound', 'key');
      await rejectsWith(t.core.call(Requests.erase, { root: 'project.b', scope: scopeA }), 'NotFound', 'root');
      // A root that contains the scope reaches outside it.
      await rejectsWith(t.core.call(Requests.erase, { root: 'project', scope: scopeA }), 'NotFound', 'root');
      // A scope listing one namespace does not cover its sub-namespaces.
      await rejectsWith(t.core.call(Requests.erase, { root: 'project.b', scope: { namespaces: ['project.b'] } }), 'NotFound', 'root');
      assert.equal((await t.core.call(Requests.get, { id: b.id })).value, 'bravo outside the scope');
      assert.equal((await t.core.call(Requests.get, { namespace: 'project.b.sub', key: 'deep' })).value, 'bravo deeper');
      const r = await t.core.call(Requests.erase, { id: a.id, scope: scopeA });
      assert.equal(r.erased, 1);
      await rejectsWith(t.core.call(Requests.get, { id: a.id, includeDeleted: true }), 'NotFound');
    } finally {
      t.close();
    }
  });
});

describe('store/import and store/importPreview honour the caller scope', () => {
  it('a record outside the scope is refused before anything is written or looked up', async () => {
    const { t } = await seeded();
    try {
      const all = (await t.core.call(Requests.exportRecords, { includeHistory: true })).records;
      const other = tempCore();
      try {
        const before = other.core.status().counts.memories;
        const data = await rejectsWith(other.core.call(Requests.importRecords, { records: all, scope: scopeA }), 'InvalidParams');
        assert.match(String(data.field), /^records\[\d+\]$/);
        assert.equal(other.core.status().counts.memories, before, 'nothing was written');
        // The preview refuses the same way (it would otherwise tell which out-of-scope memories exist, and their versions).
        const pdata = await rejectsWith(t.core.call(Requests.importPreview, { records: all, scope: scopeA }), 'InvalidParams');
        assert.equal(pdata.field, data.field);
        // Records inside the scope import.
        const inside = (await t.core.call(Requests.exportRecords, { scope: scopeA, includeHistory: true })).records;
        const r = await other.core.call(Requests.importRecords, { records: inside, scope: scopeA });
        assert.equal(r.memories, 1);
        const preview = await other.core.call(Requests.importPreview, { records: inside, scope: scopeA });
        assert.equal(preview.counts.unchanged, 1);
      } finally {
        other.close();
      }
    } finally {
      t.close();
    }
  });

  it('history, links and rejected values that name out-of-scope memories or namespaces are skipped', async () => {
    const { t, a, b } = await seeded();
    try {
      const bNs = (await t.core.call(Requests.exportRecords, {})).records.find(
        (r) => r.type === 'namespace' && r.path === 'project.b',
      ) as Extract<ExportRecord, { type: 'namespace' }>;
      const historyBefore = (await t.core.call(Requests.history, { id: b.id })).entries.length;
      const forged: ExportRecord[] = [
        { type: 'header', format: 'cairn-export', version: 1, exportedAt: new Date().toISOString(), schemaVersion: 1 },
        {
          type: 'history',
          entry: {
            seq: 1,
            memoryId: b.id,
            op: 'update',
            actor: 'intruder',
            reason: 'forged',
            at: new Date().toISOString(),
            version: 9,
            previous: null,
            state: null,
            detail: null,
          },
        },
        { type: 'link', link: { from: a.id, to: b.id, type: 'contradicts', createdAt: new Date().toISOString(), actor: 'intruder' } },
        { type: 'rejected', namespaceId: bNs.id, valueHash: 'k1:forged', memoryId: null, actor: 'intruder', at: new Date().toISOString() },
      ];
      const r = await t.core.call(Requests.importRecords, { records: forged, scope: scopeA });
      assert.equal(r.history, 0);
      assert.equal(r.links, 0);
      assert.equal(r.skipped, 3);
      assert.equal((await t.core.call(Requests.history, { id: b.id })).entries.length, historyBefore);
      const links = await t.core.call(Requests.neighbors, { id: a.id });
      assert.ok(!JSON.stringify(links).includes('contradicts'), 'no forged link');
      // The same records without a scope do apply (the skip is the scope's doing, not a malformed record).
      const unscoped = await t.core.call(Requests.importRecords, { records: forged.slice(0, 3) });
      assert.equal(unscoped.links, 1);
    } finally {
      t.close();
    }
  });
});

describe('guards: the read-only store methods keep to the scope', () => {
  it('export, exportPage, overview and audit show nothing from outside the scope', async () => {
    const { t } = await seeded();
    try {
      const text = (x: unknown) => JSON.stringify(x);
      const exp = await t.core.call(Requests.exportRecords, { scope: scopeA, includeHistory: true });
      assert.ok(text(exp).includes('alpha inside'));
      assert.ok(!text(exp).includes('bravo'), 'export');
      assert.ok(!exp.records.some((r) => r.type === 'link'), 'a link with one end outside is left out');
      let page = await t.core.call(Requests.exportPage, { scope: scopeA, limit: 1 });
      const pages = [page];
      while (page.nextCursor) pages.push((page = await t.core.call(Requests.exportPage, { cursor: page.nextCursor })));
      assert.ok(!text(pages).includes('bravo'), 'exportPage');
      const ov = await t.core.call(Requests.overview, { scope: scopeA });
      assert.deepEqual(
        ov.byNamespace.map((n) => n.name),
        ['project.a'],
      );
      const audit = await t.core.call(Requests.audit, { scope: scopeA });
      assert.ok(audit.entries.length > 0);
      assert.ok(!text(audit).includes('bravo'), 'audit');
    } finally {
      t.close();
    }
  });
});
