/**
 * Erasure with proof: memory/erase leaves no copy of the text in the raw
 * store files (.db, -wal, -shm), returns a receipt signed with the store's
 * Ed25519 key, and records the erasure in history without content. Rejected
 * values are keyed hashes; legacy unkeyed ones are honoured and re-keyed.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { keysPath } from '../../daemon/src/store/keys';
import { contentHash, verifyReceipt } from '../../daemon/src/store/receipt';
import { Store } from '../../daemon/src/store/store';
import { normalizedValueHash } from '../../daemon/src/text/hash';
import { Core } from '../../daemon/src/server/core';
import { rejectsWith, tempCore } from '../helpers';

const MARK = 'quokkaxylophonemarker';
/** Occurrences of a marker (and of its stemmed/prefix-compressed core) in the raw bytes of the store files. */
function copiesOnDisk(db: string, needle = 'kkaxylophon'): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of [db, db + '-wal', db + '-shm']) {
    let n = 0;
    if (fs.existsSync(f)) {
      const buf = fs.readFileSync(f);
      for (let i = buf.indexOf(needle); i !== -1; i = buf.indexOf(needle, i + 1)) n++;
    }
    out[path.basename(f)] = n;
  }
  return out;
}

async function fill(core: Core, n: number, ns = 'project.other') {
  await core.call(R.upsertBatch, {
    items: Array.from({ length: n }, (_, i) => ({
      namespace: ns,
      key: `k${i}`,
      value: `unrelated memory number ${i} about parsers and caches`,
    })),
  });
}

describe('memory/erase', () => {
  it('leaves 0 copies of the text in .db, -wal and -shm, before and after close', async () => {
    const t = tempCore();
    const db = path.join(t.dir, 'cairn.db');
    try {
      await fill(t.core, 300);
      const m = await t.core.call(R.upsert, {
        namespace: 'project.a',
        key: `note-${MARK}`,
        value: `the ${MARK} token is 1234`,
        tags: [MARK],
      });
      for (let v = 0; v < 5; v++)
        await t.core.call(R.upsert, {
          namespace: 'project.a',
          key: `note-${MARK}`,
          value: `version ${v}: the ${MARK} token is ${v} ${'pad '.repeat(200)}`,
        });
      const other = await t.core.call(R.upsert, { namespace: 'project.a', key: 'plain', value: 'a plain neighbour' });
      await t.core.call(R.link, { from: m.memory.id, to: other.memory.id, type: 'relates_to' });
      if (t.store.vecAvailable) {
        const model = t.store.vectors.ensure('test-model', 4);
        t.store.transaction(() =>
          t.store.vectors.put(
            model,
            t.store.db.prepare('SELECT rowid FROM memories WHERE id = ?').pluck().get(m.memory.id) as number,
            new Float32Array([1, 0, 0, 0]),
            1,
          ),
        );
      }
      t.store.db.pragma('wal_checkpoint(PASSIVE)'); // put copies into the .db file too
      await fill(t.core, 50, 'project.more');
      const before = copiesOnDisk(db);
      assert.ok(before['cairn.db'] > 0 && before['cairn.db-wal'] > 0, `the marker is on disk before: ${JSON.stringify(before)}`);

      const r = await t.core.call(R.erase, { id: m.memory.id, reason: 'user asked', actor: 'alice' });
      assert.equal(r.erased, 1);
      assert.equal('walTruncated' in r.receipt ? r.receipt.walTruncated : null, true);
      assert.deepEqual(copiesOnDisk(db), { 'cairn.db': 0, 'cairn.db-wal': 0, 'cairn.db-shm': 0 });
      assert.equal(r.receipt.removed.links, 1);
      assert.ok(r.receipt.removed.history >= 6, 'every version is gone');
      if (t.store.vecAvailable) assert.equal(r.receipt.removed.vectors, 1);

      // the store still works and is consistent
      assert.equal(t.store.db.pragma('integrity_check', { simple: true }), 'ok');
      assert.equal((await t.core.call(R.search, { query: 'parsers', mode: 'fts', limit: 5 })).hits.length, 5);
      assert.equal((await t.core.call(R.search, { query: MARK, mode: 'fts' })).hits.length, 0);
      await rejectsWith(t.core.call(R.get, { id: m.memory.id, includeDeleted: true }), 'NotFound');
      // the key is free again (erased, not deleted)
      await t.core.call(R.upsert, { namespace: 'project.a', key: 'reused', value: 'new' });

      // audit: one contentless erase row
      const h = await t.core.call(R.history, { id: m.memory.id });
      assert.equal(h.entries.length, 1);
      assert.equal(h.entries[0].op, 'erase');
      assert.equal(h.entries[0].actor, 'alice');
      assert.equal(h.entries[0].reason, 'user asked');
      assert.equal(h.entries[0].detail?.receipt, r.receipt.id);
      assert.ok(!JSON.stringify(h).includes('kkaxylophon'));

      t.store.close();
      assert.deepEqual(copiesOnDisk(db), { 'cairn.db': 0, 'cairn.db-wal': 0, 'cairn.db-shm': 0 }, 'after stop');
    } finally {
      t.close();
    }
  });

  it('signs a receipt that verifies, names what was erased, and fails when altered', async () => {
    const t = tempCore();
    try {
      const a = await t.core.call(R.upsert, { namespace: 'project.x', key: 'k', value: 'secret plan' });
      const r = await t.core.call(R.erase, { namespace: 'project.x', key: 'k' });
      const rc = r.receipt;
      assert.deepEqual(rc.memories, [{ id: a.memory.id, namespace: 'project.x' }]);
      assert.deepEqual(rc.target, { namespace: 'project.x', key: 'k' });
      assert.equal(rc.actor, 'user');
      assert.equal(
        rc.contentHash,
        contentHash(rc.salt, [{ id: a.memory.id, namespace: 'project.x', key: 'k', value: 'secret plan' }]),
        'whoever holds the content can recompute the hash',
      );
      assert.notEqual(rc.contentHash, contentHash(rc.salt, [{ id: a.memory.id, namespace: 'project.x', key: 'k', value: 'another plan' }]));
      assert.ok(!JSON.stringify(rc).includes('secret plan'));
      assert.equal(verifyReceipt(rc, t.store.keys!.publicKeyB64).ok, true);
      assert.equal(verifyReceipt(rc).ok, true);
      const tampered = { ...rc, actor: 'mallory' };
      const bad = verifyReceipt(tampered, t.store.keys!.publicKeyB64);
      assert.equal(bad.ok, false);
      assert.match(bad.problem!, /signature does not match/);
      assert.equal(verifyReceipt({ ...rc, memories: [] }).ok, false);
      const other = tempCore();
      try {
        const foreign = verifyReceipt(rc, other.store.keys!.publicKeyB64);
        assert.equal(foreign.ok, false, 'a valid signature by another key is not trusted');
        assert.equal(foreign.trustedKey, false);
      } finally {
        other.close();
      }
      assert.equal(verifyReceipt({ format: 'nope' }).ok, false);
      // the key file is private
      const mode = fs.statSync(keysPath(path.join(t.dir, 'cairn.db'))).mode & 0o777;
      assert.equal(mode, 0o600);
    } finally {
      t.close();
    }
  });

  it('erases a namespace subtree with its namespaces, leaving siblings alone', async () => {
    const t = tempCore();
    try {
      await t.core.call(R.upsert, { namespace: 'project.x', key: 'a', value: 'alpha' });
      await t.core.call(R.upsert, { namespace: 'project.x.sub', key: 'b', value: 'beta' });
      const keep = await t.core.call(R.upsert, { namespace: 'project.xy', key: 'c', value: 'gamma' });
      await t.core.call(R.delete, { namespace: 'project.x', key: 'a' });
      const r = await t.core.call(R.erase, { root: 'project.x' });
      assert.equal(r.erased, 2);
      assert.equal(r.receipt.removed.namespaces, 2);
      assert.deepEqual(
        (await t.core.call(R.namespacesList, {})).namespaces.map((n) => n.path),
        ['project.xy'],
      );
      assert.equal((await t.core.call(R.get, { id: keep.memory.id })).value, 'gamma');
      await rejectsWith(t.core.call(R.erase, { root: 'project.x' }), 'NotFound', 'root');
    } finally {
      t.close();
    }
  });

  it('refuses ambiguous or bad targets with typed errors', async () => {
    const t = tempCore();
    try {
      await rejectsWith(t.core.call(R.erase, {}), 'InvalidParams');
      await rejectsWith(t.core.call(R.erase, { id: 'x', root: 'project' }), 'InvalidParams');
      await rejectsWith(t.core.call(R.erase, { namespace: 'project' }), 'InvalidParams', 'key');
      await rejectsWith(t.core.call(R.erase, { id: 'nope' }), 'NotFound', 'id');
      await rejectsWith(t.core.call(R.erase, { root: 'Bad..NS' }), 'InvalidNamespace', 'root');
      await rejectsWith(t.core.call(R.erase, { id: 'x', extra: 1 } as never), 'InvalidParams');
    } finally {
      t.close();
    }
  });

  it('purge leaves no copy of the text in the .db file after a checkpoint', async () => {
    const t = tempCore();
    const db = path.join(t.dir, 'cairn.db');
    try {
      await fill(t.core, 200);
      const m = await t.core.call(R.upsert, { namespace: 'project.p', key: 'k', value: `purge me ${MARK}` });
      t.store.db.pragma('wal_checkpoint(PASSIVE)');
      assert.ok(copiesOnDisk(db)['cairn.db'] > 0);
      await t.core.call(R.delete, { id: m.memory.id });
      await t.core.call(R.purge, { id: m.memory.id });
      t.store.db.pragma('wal_checkpoint(TRUNCATE)');
      assert.deepEqual(copiesOnDisk(db), { 'cairn.db': 0, 'cairn.db-wal': 0, 'cairn.db-shm': 0 });
    } finally {
      t.close();
    }
  });
});

describe('rejected values: keyed hashes', () => {
  it('stores an HMAC under the store key, never the bare hash, and still refuses the value', async () => {
    const t = tempCore();
    try {
      const m = await t.core.call(R.upsert, { namespace: 'project.p', key: 'k', value: 'Use  TABS' });
      await t.core.call(R.forget, { id: m.memory.id });
      const hashes = t.store.db.prepare('SELECT value_hash FROM rejected_values').pluck().all() as string[];
      assert.equal(hashes.length, 1);
      assert.match(hashes[0], /^k1:[0-9a-f]{64}$/);
      assert.notEqual(hashes[0].slice(3), normalizedValueHash('use tabs'), 'not the unkeyed hash a guess would confirm');
      await rejectsWith(t.core.call(R.upsert, { namespace: 'project.p', key: 'k2', value: 'use tabs' }), 'RejectedValue');
      await t.core.call(R.restore, { id: m.memory.id });
      await t.core.call(R.upsert, { namespace: 'project.p', key: 'k3', value: 'use tabs' });
    } finally {
      t.close();
    }
  });

  it('re-keys legacy hashes at open when the memory still holds the value, honours and lazily re-keys the rest', async () => {
    const t = tempCore();
    const file = path.join(t.dir, 'cairn.db');
    try {
      const a = await t.core.call(R.upsert, { namespace: 'project.p', key: 'a', value: 'legacy one' });
      await t.core.call(R.forget, { id: a.memory.id });
      const ns = t.store.db.prepare(`SELECT id FROM namespaces WHERE path = 'project.p'`).pluck().get() as string;
      // What an older build wrote: bare sha256; one of them for a memory that was purged since.
      t.store.db.prepare('UPDATE rejected_values SET value_hash = ?').run(normalizedValueHash('legacy one'));
      t.store.db
        .prepare(`INSERT INTO rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES (?, ?, NULL, 'old', 1)`)
        .run(ns, normalizedValueHash('purged value'));
      t.store.close();
      const s2 = new Store(file);
      const c2 = new Core(s2);
      try {
        const rows = s2.db.prepare('SELECT value_hash, memory_id FROM rejected_values ORDER BY memory_id IS NULL').all() as {
          value_hash: string;
          memory_id: string | null;
        }[];
        assert.match(rows[0].value_hash, /^k1:/, 're-keyed at open');
        assert.equal(rows[1].value_hash, normalizedValueHash('purged value'), 'no value to re-key it with: kept as legacy');
        await rejectsWith(c2.call(R.upsert, { namespace: 'project.p', key: 'x', value: 'Legacy  one' }), 'RejectedValue');
        await rejectsWith(c2.call(R.upsert, { namespace: 'project.p', key: 'y', value: 'purged value' }), 'RejectedValue');
        const after = s2.db.prepare('SELECT value_hash FROM rejected_values').pluck().all() as string[];
        assert.ok(
          after.every((h) => h.startsWith('k1:')),
          `the legacy hash was re-keyed when the value came by: ${after}`,
        );
        await rejectsWith(c2.call(R.upsert, { namespace: 'project.p', key: 'y', value: 'purged value' }), 'RejectedValue');
      } finally {
        s2.close();
      }
    } finally {
      t.close();
    }
  });
});
