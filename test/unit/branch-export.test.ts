/**
 * Memory branches in export and import (docs/branches.md): an export carries every branch, its rows and the history
 * of its writes (a backup by export loses nothing a branch holds); importing it into an empty store gives the same
 * branches, reads, diffs and history; importing again adds nothing; a paged export carries the same records; the
 * preview counts them; a scoped export and import keep to the scope.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { ExportRecord } from '../../daemon/src/protocol/types';
import { tempCore } from '../helpers';

type C = ReturnType<typeof tempCore>;
const ofType = (rs: ExportRecord[], t: string) => rs.filter((r) => r.type === t);

describe('memory branches: export and import', () => {
  let a: C;
  let b: C;
  beforeEach(async () => {
    a = tempCore();
    b = tempCore();
    await a.core.call(R.upsertBatch, {
      items: [
        { namespace: 'project.app', key: 'db', value: 'the database is postgres' },
        { namespace: 'project.app', key: 'style', value: 'tabs for indentation' },
        { namespace: 'project.web', key: 'css', value: 'tailwind everywhere' },
      ],
    });
    await a.core.call(R.branchCreate, { name: 'feature', root: 'project.app' });
    await a.core.call(R.upsert, {
      namespace: 'project.app',
      key: 'db',
      value: 'the database is sqlite',
      branch: 'feature',
      actor: 'agent',
      reason: 'try',
    });
    await a.core.call(R.upsert, { namespace: 'project.app', key: 'cache', value: 'redis caches sessions', branch: 'feature' });
    await a.core.call(R.delete, { namespace: 'project.app', key: 'style', branch: 'feature', reason: 'gone' });
    // A closed branch keeps only its history.
    await a.core.call(R.branchCreate, { name: 'old', root: 'project.web' });
    await a.core.call(R.upsert, { namespace: 'project.web', key: 'css', value: 'plain css', branch: 'old' });
    await a.core.call(R.branchDiscard, { name: 'old' });
  });
  afterEach(() => {
    a.close();
    b.close();
  });

  it('round-trips branches, their rows and history into an empty store; a second import adds nothing', async () => {
    const records = (await a.core.call(R.exportRecords, {})).records;
    assert.equal(ofType(records, 'branch').length, 2);
    assert.equal(ofType(records, 'branchMemory').length, 3);
    assert.equal(ofType(records, 'branchHistory').length, 4);

    const preview = await b.core.call(R.importPreview, { records });
    assert.deepEqual([preview.records.branches, preview.records.branchRows, preview.records.branchHistory], [2, 3, 4]);

    const imp = await b.core.call(R.importRecords, { records });
    assert.deepEqual([imp.branches, imp.branchRows, imp.skipped], [2, 3, 0]);
    assert.equal(imp.history, ofType(records, 'history').length + 4);

    const list = (await b.core.call(R.branchList, { all: true })).branches.map((x) => [x.name, x.status, x.writes]);
    assert.deepEqual(list.sort(), [
      ['feature', 'open', 3],
      ['old', 'discarded', 0],
    ]);
    assert.equal((await b.core.call(R.get, { namespace: 'project.app', key: 'db', branch: 'feature' })).value, 'the database is sqlite');
    assert.equal((await b.core.call(R.get, { namespace: 'project.app', key: 'db' })).value, 'the database is postgres');
    const hits = await b.core.call(R.search, { query: 'redis sessions', mode: 'fts', branch: 'feature' });
    assert.equal(hits.hits[0]?.memory.key, 'cache', "the branch rows' full text is indexed");
    const diff = (o: C) =>
      o.core.call(R.branchDiff, { name: 'feature' }).then((d) => d.changes.map((c) => [c.key, c.change, c.baseVersion, c.conflict]));
    assert.deepEqual(await diff(b), await diff(a));
    const h = (await b.core.call(R.history, { namespace: 'project.app', key: 'db', branch: 'feature' })).entries;
    assert.deepEqual([h[0].actor, h[0].reason, h[0].state?.value], ['agent', 'try', 'the database is sqlite']);
    assert.equal(
      (await b.core.call(R.history, { namespace: 'project.web', key: 'css', branch: 'old' })).entries[0].state?.value,
      'plain css',
    );

    // The same records again: nothing is written or duplicated.
    const twice = await b.core.call(R.importRecords, { records });
    assert.deepEqual([twice.branches, twice.branchRows, twice.history, twice.memories], [0, 0, 0, 0]);
    const again = (await b.core.call(R.exportRecords, {})).records;
    assert.equal(ofType(again, 'branchMemory').length, 3);
    assert.equal(ofType(again, 'branchHistory').length, 4);
    // And the imported branch merges like the original.
    const m = await b.core.call(R.branchMerge, { name: 'feature' });
    assert.deepEqual([m.merged, m.applied], [true, 3]);
  });

  it('a paged export carries the same branch records; without history, only open branches and rows', async () => {
    const whole = (await a.core.call(R.exportRecords, {})).records;
    const paged: ExportRecord[] = [];
    let cursor: string | undefined;
    do {
      const page = await a.core.call(R.exportPage, { limit: 2, ...(cursor ? { cursor } : {}) });
      paged.push(...page.records);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const strip = (rs: ExportRecord[]) => rs.filter((r) => r.type.startsWith('branch'));
    assert.deepEqual(strip(paged), strip(whole));
    const bare = (await a.core.call(R.exportRecords, { includeHistory: false })).records;
    assert.deepEqual(
      ofType(bare, 'branch').map((r) => (r as Extract<ExportRecord, { type: 'branch' }>).branch.name),
      ['feature'],
    );
    assert.equal(ofType(bare, 'branchMemory').length, 3);
    assert.equal(ofType(bare, 'branchHistory').length, 0);
  });

  it('keeps to the scope; an open branch whose name is taken here is skipped with its rows', async () => {
    const scoped = (await a.core.call(R.exportRecords, { scope: { root: 'project.web', includeUser: false } })).records;
    assert.deepEqual(
      ofType(scoped, 'branch').map((r) => (r as Extract<ExportRecord, { type: 'branch' }>).branch.name),
      ['old'],
    );
    assert.equal(ofType(scoped, 'branchMemory').length, 0);

    const records = (await a.core.call(R.exportRecords, {})).records;
    const refused = await b.core
      .call(R.importRecords, { records, scope: { root: 'project.web', includeUser: false } })
      .catch((e: Error) => e);
    assert.ok(refused instanceof Error, 'records outside the scope are refused before anything is written');
    assert.equal((await b.core.call(R.branchList, { all: true })).branches.length, 0);

    await b.core.call(R.branchCreate, { name: 'feature', root: 'project' });
    const imp = await b.core.call(R.importRecords, { records });
    assert.equal(imp.branches, 1, 'only the closed branch');
    assert.equal(imp.branchRows, 0);
    assert.equal(imp.skipped, 1 + 3 + 3, 'the branch, its rows and its history entries');
    assert.equal((await b.core.call(R.branchList, {})).branches[0].root, 'project', 'the branch here is untouched');
  });
});
