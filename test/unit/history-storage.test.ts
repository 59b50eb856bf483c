/**
 * History storage (schema 4): a history state whose value is its memory row's value reads it from the row instead of
 * storing it again. Every version must still read back exactly: from a store written by the schema-3 build (the
 * fixture and what that build read back), after later writes, through export/import, purge and erase.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { HistoryEntry, Memory } from '../../daemon/src/protocol/types';
import { Core } from '../../daemon/src/server/core';
import { decodeState, encodeState, inlineValue, readsRowValue, toRowValueForm } from '../../daemon/src/store/history-codec';
import { SCHEMA_VERSION } from '../../daemon/src/store/schema';
import { Store } from '../../daemon/src/store/store';
import { rejectsWith, tempDir } from '../helpers';

const FIXTURES = path.join(__dirname, '..', 'fixtures');

function copyV3(): string {
  const dir = tempDir();
  const file = path.join(dir, 'cairn.db');
  fs.copyFileSync(path.join(FIXTURES, 'cairn-v3.db'), file);
  fs.copyFileSync(path.join(FIXTURES, 'cairn-v3.db.keys'), `${file}.keys`);
  return file;
}

const expected = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'cairn-v3-expected.json'), 'utf8')) as {
  history: Record<string, HistoryEntry[]>;
  export: unknown[];
  audit: HistoryEntry[];
};

/** Every live memory's whole history, by id. */
async function allHistory(store: Store, core: Core): Promise<Record<string, HistoryEntry[]>> {
  const out: Record<string, HistoryEntry[]> = {};
  const ids = store.db
    .prepare('SELECT DISTINCT h.memory_id AS id FROM history h JOIN memories m ON m.id = h.memory_id ORDER BY 1')
    .all() as {
    id: string;
  }[];
  for (const { id } of ids) out[id] = (await core.call(R.history, { id, limit: 1000 })).entries;
  return out;
}

const storedStates = (store: Store) =>
  store.db.prepare('SELECT seq, state FROM history WHERE state IS NOT NULL ORDER BY seq').all() as { seq: number; state: string }[];

describe('history storage: schema 3 → 4', () => {
  it('migrates a store written by the schema-3 build; every version, the export and the audit read back byte-identical', async () => {
    const file = copyV3();
    const Database = require('better-sqlite3');
    const raw = new Database(file, { readonly: true });
    assert.equal(raw.pragma('user_version', { simple: true }), 3);
    const before = raw.prepare('SELECT sum(length(state)) AS n FROM history').get() as { n: number };
    raw.close();
    const store = new Store(file);
    const core = new Core(store);
    try {
      assert.equal(store.schemaVersion, SCHEMA_VERSION);
      assert.ok(SCHEMA_VERSION >= 4);
      assert.ok(Object.keys(expected.history).length >= 25, 'the fixture has history');
      assert.equal(JSON.stringify(await allHistory(store, core)), JSON.stringify(expected.history));
      // The export's header says when and from which schema; every record after it is the same.
      const records = (await core.call(R.exportRecords, {})).records;
      assert.deepEqual(records[0], {
        ...(expected.export[0] as object),
        exportedAt: (records[0] as { exportedAt: string }).exportedAt,
        schemaVersion: SCHEMA_VERSION,
      });
      assert.equal(JSON.stringify(records.slice(1)), JSON.stringify(expected.export.slice(1)));
      assert.ok(records.length > 60, `${records.length} records`);
      assert.equal(JSON.stringify((await core.call(R.audit, { limit: 1000 })).entries), JSON.stringify(expected.audit));
      // The newest state of each memory (and each state with the row's value) no longer holds the value.
      const states = storedStates(store);
      const byRow = states.filter((s) => readsRowValue(s.state));
      const live = store.db.prepare('SELECT count(*) AS c FROM memories').get() as { c: number };
      assert.ok(byRow.length >= live.c, `${byRow.length} states read the row's value, ${live.c} memories`);
      assert.ok(
        byRow.every((s) => !JSON.parse(s.state).value),
        'no row-value state stores a value',
      );
      const after = store.db.prepare('SELECT sum(length(state)) AS n FROM history').get() as { n: number };
      assert.ok(after.n < before.n * 0.8, `states ${before.n} → ${after.n} bytes`);
      // The first version of `retry` had the value it has now (it came back): it reads it from the row too.
      const retry = Object.values(expected.history).find((h) => h[0].state?.key === 'retry')!;
      const firstSeq = retry[retry.length - 1].seq;
      assert.ok(readsRowValue(states.find((s) => s.seq === firstSeq)!.state));
    } finally {
      store.close();
    }
  });

  it('after migration, changing a value writes it into the states that read it from the row: no version changes', async () => {
    const file = copyV3();
    const Database = require('better-sqlite3');
    const raw = new Database(file, { readonly: true });
    const mark = (raw.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'history'`).get() as { seq: number }).seq;
    raw.close();
    const store = new Store(file);
    const core = new Core(store);
    try {
      assert.ok(store.db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'history_memory'`).get(), 'the history index is back');
      assert.equal((store.db.prepare(`SELECT count(*) AS c FROM sqlite_master WHERE name LIKE 'history_v%'`).get() as { c: number }).c, 0);
      const retry = Object.values(expected.history).find((h) => h[0].state?.key === 'retry')!;
      const id = retry[0].memoryId;
      const u = await core.call(R.upsert, { namespace: 'project.fix', key: 'retry', value: 'The client retries 7 times' });
      assert.equal(u.memory.version, retry[0].version + 1);
      const now = (await core.call(R.history, { id, limit: 1000 })).entries;
      assert.equal(now[0].seq, mark + 1, 'history seq numbers continue after the rebuilt table');
      assert.equal(JSON.stringify(now.slice(1)), JSON.stringify(retry), 'every earlier version is unchanged');
      assert.deepEqual(now[0].state, u.memory);
      assert.equal(now[0].previous!.value, 'The client retries 3 times');
      // Only the newest state reads the row's value now; the earlier ones hold theirs.
      const rows = store.db.prepare('SELECT state FROM history WHERE memory_id = ? ORDER BY seq').all(id) as { state: string }[];
      assert.deepEqual(
        rows.map((r) => readsRowValue(r.state)),
        rows.map((_, i) => i === rows.length - 1),
      );
      // The rest of the store is as it was.
      const rest = await allHistory(store, core);
      delete rest[id];
      const want = { ...expected.history };
      delete want[id];
      assert.equal(JSON.stringify(rest), JSON.stringify(want));
    } finally {
      store.close();
    }
  });
});

describe('history storage: every version stays exact through any sequence of operations', () => {
  it('a seeded random run of upserts, reads, supersedes, deletes, restores, purges and imports never changes a written history entry', async () => {
    const dir = tempDir();
    const store = new Store(path.join(dir, 'cairn.db'));
    const core = new Core(store);
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const values = ['alpha value', 'beta value', 'gamma “value” ✓', 'alpha value', 'delta\nvalue'];
    const seen = new Map<number, string>(); // seq → the entry as first read
    try {
      for (let step = 0; step < 400; step++) {
        const key = `k${rnd(6)}`;
        const row = store.db.prepare(`SELECT id, deleted_at FROM memories m WHERE key = ?`).get(key) as
          { id: string; deleted_at: number | null } | undefined;
        const action = rnd(10);
        try {
          if (action < 5 || !row)
            await core.call(R.upsert, {
              namespace: 'project.fuzz',
              key,
              value: values[rnd(values.length)],
              ...(rnd(2) ? { tags: [`t${rnd(3)}`] } : {}),
              ...(rnd(3) === 0 ? { importance: rnd(10) / 10 } : {}),
            });
          else if (action === 5) await core.call(R.get, { id: row.id, includeDeleted: true });
          else if (action === 6) await core.call(R.delete, { id: row.id });
          else if (action === 7 && row.deleted_at !== null) await core.call(R.restore, { id: row.id });
          else if (action === 8 && row.deleted_at !== null) await core.call(R.purge, { id: row.id });
          else if (action === 9) {
            const other = store.db.prepare(`SELECT id FROM memories WHERE key != ? AND deleted_at IS NULL LIMIT 1`).get(key) as
              { id: string } | undefined;
            if (other)
              await core.call(R.upsert, {
                namespace: 'project.fuzz',
                key: `s${step}`,
                value: values[rnd(values.length)],
                supersedes: other.id,
              });
          }
        } catch (e) {
          // Refusals by the write rules (a deleted key written again, a superseded one restored) are expected.
          if (!(e instanceof Error && 'code' in e)) throw e;
        }
        // Every entry read so far reads back the same; a purged memory's entries are gone with it.
        for (const [id, entries] of Object.entries(await allHistory(store, core))) {
          for (const e of entries) {
            const text = JSON.stringify(e);
            const was = seen.get(e.seq);
            if (was !== undefined) assert.equal(text, was, `step ${step}: history row ${e.seq} of ${id} changed`);
            else seen.set(e.seq, text);
          }
        }
      }
      const states = storedStates(store);
      assert.ok(states.some((s) => readsRowValue(s.state)) && states.some((s) => !readsRowValue(s.state)), 'both forms were exercised');
      // The invariant itself: a state that reads the row's value is only ever on a memory whose value it is.
      const broken = store.db
        .prepare(`SELECT h.seq FROM history h LEFT JOIN memories m ON m.id = h.memory_id WHERE h.state GLOB '{"$":3[,}]*' AND m.id IS NULL`)
        .all();
      assert.deepEqual(broken, []);

      // Export → import into an empty store: the same history.
      const records = (await core.call(R.exportRecords, {})).records;
      const dir2 = tempDir();
      const store2 = new Store(path.join(dir2, 'cairn.db'));
      try {
        const core2 = new Core(store2);
        await core2.call(R.importRecords, { records });
        const a = await allHistory(store, core);
        const b = await allHistory(store2, core2);
        assert.deepEqual(
          Object.values(b).map((h) => h.map(({ seq: _s, ...e }) => e)),
          Object.values(a).map((h) => h.map(({ seq: _s, ...e }) => e)),
        );
      } finally {
        store2.close();
        fs.rmSync(dir2, { recursive: true, force: true });
      }
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('history codec: the row-value form', () => {
  const m: Memory = {
    id: '0194b3a0-0000-7000-8000-0000000000a1',
    namespace: 'project.x',
    key: 'k',
    value: 'a "quoted" value ✓\n',
    summary: null,
    kind: 'fact',
    tags: ['a'],
    importance: 0.5,
    confidence: 1,
    source: 'user',
    properties: {},
    anchors: [],
    createdAt: '2026-01-15T10:00:00.000Z',
    updatedAt: '2026-01-15T10:00:00.000Z',
    validFrom: null,
    validTo: null,
    expiresAt: null,
    lastAccessedAt: null,
    accessCount: 0,
    version: 1,
    status: 'active',
    supersededBy: null,
    deletedAt: null,
    deletedBy: null,
  };
  const facts = { memoryId: m.id, version: 1, at: Date.parse(m.createdAt) };

  it('leaves the value out and reads it from the row, in the same field order', () => {
    const text = encodeState(m, facts, true);
    assert.ok(readsRowValue(text), text);
    assert.ok(!text.includes('quoted'), text);
    const back = decodeState(text, facts, m.value);
    assert.equal(JSON.stringify(back), JSON.stringify(m));
  });

  it('refuses to read a row-value state without the row', () => {
    const text = encodeState(m, facts, true);
    assert.throws(() => decodeState(text, facts), /missing memory row/);
    assert.throws(() => decodeState(text, facts, null), /missing memory row/);
  });

  it('inlineValue writes the value in: the same memory without the row; a state that holds its value is unchanged', () => {
    const text = encodeState(m, facts, true);
    const inlined = inlineValue(text, m.value);
    assert.ok(!readsRowValue(inlined));
    assert.equal(JSON.stringify(decodeState(inlined, facts)), JSON.stringify(m));
    const plain = encodeState(m, facts);
    assert.equal(inlineValue(plain, 'another value'), plain);
    assert.equal(inlined.length, plain.length);
  });

  it('toRowValueForm converts only a compact state holding exactly the row value', () => {
    const plain = encodeState(m, facts);
    const conv = toRowValueForm(plain, m.value)!;
    assert.equal(conv, encodeState(m, facts, true));
    assert.equal(toRowValueForm(plain, `${m.value} `), null, 'another value stays');
    assert.equal(toRowValueForm(JSON.stringify(m), m.value), null, 'a state written before compact states stays');
    assert.equal(toRowValueForm(conv, m.value), null, 'already converted');
  });

  it('a value that only looks like the marker is not mistaken for it', () => {
    const text = encodeState({ ...m, value: '{"$":3}' }, facts);
    assert.ok(!readsRowValue(text));
    assert.equal(decodeState(text, facts).value, '{"$":3}');
  });
});

describe('memory rows: no value hash stored', () => {
  it('new and imported rows hold none, and a forgotten value is still refused (by its keyed hash)', async () => {
    const dir = tempDir();
    const store = new Store(path.join(dir, 'cairn.db'));
    const core = new Core(store);
    try {
      const a = await core.call(R.upsert, { namespace: 'project.h', key: 'style', value: 'Use TABS for indentation' });
      await core.call(R.upsert, { namespace: 'project.h', key: 'other', value: 'a value to import' });
      const records = (await core.call(R.exportRecords, {})).records;
      await core.call(R.forget, { id: a.memory.id, reason: 'we use spaces' });
      await rejectsWith(
        core.call(R.upsert, { namespace: 'project.h', key: 'k2', value: 'use tabs for   indentation' }),
        'RejectedValue',
        'value',
      );
      const hashes = store.db.prepare('SELECT value_hash FROM memories').pluck().all();
      assert.deepEqual(hashes, ['', '']);
      const dir2 = tempDir();
      const store2 = new Store(path.join(dir2, 'cairn.db'));
      try {
        await new Core(store2).call(R.importRecords, { records });
        assert.deepEqual(store2.db.prepare('SELECT value_hash FROM memories').pluck().all(), ['', '']);
      } finally {
        store2.close();
        fs.rmSync(dir2, { recursive: true, force: true });
      }
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
