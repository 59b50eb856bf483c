/**
 * Idempotency keys: a write sent again with the same key after its connection closed before the reply is applied
 * once and answered with the first result; the record survives a restart of the store; the same key with another
 * request is InvalidState; erase removes the recorded text. The CLI sends a key and retries once on Unavailable —
 * tested through a proxy socket that closes the client's connection right after the daemon applied the write.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { Requests } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { IdempotencyWindow, idempotencyRecords } from '../../daemon/src/store/idempotency';
import { Store } from '../../daemon/src/store/store';
import { CAIRN_BIN, rejectsWith, spawnDaemon, tempCore, tempDir, type SpawnedDaemon } from '../helpers';

describe('idempotency keys (memory writes)', () => {
  it('a retried upsert returns the first result and applies nothing again, even after a later write', async () => {
    const t = tempCore();
    try {
      const first = await t.core.call(Requests.upsert, {
        namespace: 'project.i',
        key: 'k',
        value: 'one',
        idempotencyKey: 'req-0001-upsert',
      });
      assert.equal(first.memory.version, 1);
      assert.equal(first.replayed, undefined);
      await t.core.call(Requests.upsert, { namespace: 'project.i', key: 'k', value: 'two' });
      const retry = await t.core.call(Requests.upsert, {
        namespace: 'project.i',
        key: 'k',
        value: 'one',
        idempotencyKey: 'req-0001-upsert',
      });
      assert.equal(retry.replayed, true);
      assert.equal(retry.memory.version, 1);
      assert.equal(retry.memory.value, 'one');
      assert.equal(retry.position, first.position);
      const now = await t.core.call(Requests.get, { namespace: 'project.i', key: 'k' });
      assert.equal(now.version, 2, 'the retry did not write "one" over "two"');
      assert.equal(now.value, 'two');
      assert.equal((await t.core.call(Requests.history, { namespace: 'project.i', key: 'k' })).entries.length, 2);
    } finally {
      t.close();
    }
  });

  it('delete, forget and upsertBatch with a key: a retry gets the first result instead of an error or a second write', async () => {
    const t = tempCore();
    try {
      await t.core.call(Requests.upsert, { namespace: 'project.i', key: 'd', value: 'to delete' });
      const del = await t.core.call(Requests.delete, { namespace: 'project.i', key: 'd', idempotencyKey: 'req-0002-delete' });
      const again = await t.core.call(Requests.delete, { namespace: 'project.i', key: 'd', idempotencyKey: 'req-0002-delete' });
      assert.equal(again.replayed, true);
      assert.equal(again.position, del.position);
      // Without a key, the same retry is refused (it was already deleted): the key is what makes it safe.
      await rejectsWith(t.core.call(Requests.delete, { namespace: 'project.i', key: 'd' }), 'InvalidState');

      await t.core.call(Requests.upsert, { namespace: 'project.i', key: 'f', value: 'forget me' });
      const f1 = await t.core.call(Requests.forget, { namespace: 'project.i', key: 'f', idempotencyKey: 'req-0003-forget' });
      const f2 = await t.core.call(Requests.forget, { namespace: 'project.i', key: 'f', idempotencyKey: 'req-0003-forget' });
      assert.equal(f2.replayed, true);
      assert.equal(f2.position, f1.position);

      const items = [
        { namespace: 'project.i', key: 'b1', value: 'batch one' },
        { namespace: 'project.i', key: 'b2', value: 'batch two' },
      ];
      const b1 = await t.core.call(Requests.upsertBatch, { items, idempotencyKey: 'req-0004-batch' });
      await t.core.call(Requests.upsert, { namespace: 'project.i', key: 'b1', value: 'batch one, edited' });
      const b2 = await t.core.call(Requests.upsertBatch, { items, idempotencyKey: 'req-0004-batch' });
      assert.equal(b2.replayed, true);
      assert.deepEqual(b2.results, b1.results);
      assert.equal((await t.core.call(Requests.get, { namespace: 'project.i', key: 'b1' })).value, 'batch one, edited');
      // A key inside a batch item is not a thing: the batch has one key.
      await rejectsWith(
        t.core.call(Requests.upsertBatch, { items: [{ ...items[0], idempotencyKey: 'req-0005-inner' } as never] }),
        'InvalidParams',
        'items[0].idempotencyKey',
      );
    } finally {
      t.close();
    }
  });

  it('the same key with a different request is InvalidState; a malformed key is InvalidParams', async () => {
    const t = tempCore();
    try {
      await t.core.call(Requests.upsert, { namespace: 'project.i', key: 'k', value: 'one', idempotencyKey: 'req-0006-reuse' });
      const data = await rejectsWith(
        t.core.call(Requests.upsert, { namespace: 'project.i', key: 'k', value: 'other', idempotencyKey: 'req-0006-reuse' }),
        'InvalidState',
        'idempotencyKey',
      );
      assert.ok(data);
      await rejectsWith(
        t.core.call(Requests.delete, { namespace: 'project.i', key: 'k', idempotencyKey: 'req-0006-reuse' }),
        'InvalidState',
        'idempotencyKey',
      );
      await rejectsWith(
        t.core.call(Requests.upsert, { namespace: 'project.i', key: 'k', value: 'x', idempotencyKey: 'short' }),
        'InvalidParams',
        'idempotencyKey',
      );
      await rejectsWith(
        t.core.call(Requests.upsert, { namespace: 'project.i', key: 'k', value: 'x', idempotencyKey: 'has spaces in it' }),
        'InvalidParams',
        'idempotencyKey',
      );
      // A refused write records nothing (it was rolled back), so its key is still free.
      await rejectsWith(
        t.core.call(Requests.upsert, { namespace: 'project.i', key: 'v', value: 'x', ifVersion: 7, idempotencyKey: 'req-0007-failed' }),
        'VersionConflict',
      );
      const ok = await t.core.call(Requests.upsert, { namespace: 'project.i', key: 'v', value: 'x', idempotencyKey: 'req-0007-failed' });
      assert.equal(ok.created, true);
    } finally {
      t.close();
    }
  });

  it('the record is in the store: it survives closing and reopening (a daemon crash), and is pruned by age and count', async () => {
    const dir = tempDir();
    const db = path.join(dir, 'cairn.db');
    try {
      let s = new Store(db);
      const first = await new Core(s).call(Requests.upsert, {
        namespace: 'project.i',
        key: 'k',
        value: 'one',
        idempotencyKey: 'req-0008-persist',
      });
      s.close();
      s = new Store(db);
      const core = new Core(s);
      await core.call(Requests.upsert, { namespace: 'project.i', key: 'k', value: 'two' });
      const retry = await core.call(Requests.upsert, {
        namespace: 'project.i',
        key: 'k',
        value: 'one',
        idempotencyKey: 'req-0008-persist',
      });
      assert.equal(retry.replayed, true);
      assert.equal(retry.memory.id, first.memory.id);
      assert.equal((await core.call(Requests.get, { id: first.memory.id })).value, 'two');

      // Pruned by count: only the newest maxKeys records stay.
      const saved = { ...IdempotencyWindow };
      try {
        IdempotencyWindow.maxKeys = 3;
        for (let i = 0; i < 6; i++)
          await core.call(Requests.upsert, { namespace: 'project.i', key: `c${i}`, value: `v${i}`, idempotencyKey: `req-count-${i}` });
        assert.equal(idempotencyRecords(s.db), 3);
        // Pruned by age: a record older than maxAgeMs is gone after the next keyed write.
        IdempotencyWindow.maxKeys = 1000;
        const t0 = Date.now();
        s.now = () => t0 + IdempotencyWindow.maxAgeMs + 1000;
        await core.call(Requests.upsert, { namespace: 'project.i', key: 'late', value: 'late', idempotencyKey: 'req-late-0001' });
        assert.equal(idempotencyRecords(s.db), 1);
        // The pruned key is free again: it writes anew (a new version), it is not a replay.
        const fresh = await core.call(Requests.upsert, {
          namespace: 'project.i',
          key: 'c5',
          value: 'v5 again',
          idempotencyKey: 'req-count-5',
        });
        assert.equal(fresh.replayed, undefined);
        assert.equal(fresh.memory.version, 2);
      } finally {
        Object.assign(IdempotencyWindow, saved);
      }
      s.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('erase removes the recorded results (they hold the text)', async () => {
    const t = tempCore();
    try {
      const r = await t.core.call(Requests.upsert, {
        namespace: 'project.e',
        key: 'k',
        value: 'secretive text',
        idempotencyKey: 'req-0009-erase',
      });
      assert.equal(idempotencyRecords(t.store.db), 1);
      await t.core.call(Requests.erase, { id: r.memory.id });
      assert.equal(idempotencyRecords(t.store.db), 0);
    } finally {
      t.close();
    }
  });
});

/** Frames of an LSP-framed byte stream. */
function frames(
  onMessage: (m: { id?: unknown; method?: string; params?: Record<string, unknown> }, raw: Buffer) => void,
): (chunk: Buffer) => void {
  let buf = Buffer.alloc(0);
  return (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = Number(/Content-Length: *(\d+)/i.exec(buf.subarray(0, end).toString())![1]);
      if (buf.length < end + 4 + len) return;
      const raw = buf.subarray(0, end + 4 + len);
      onMessage(JSON.parse(buf.subarray(end + 4, end + 4 + len).toString()), raw);
      buf = buf.subarray(end + 4 + len);
    }
  };
}

/**
 * A socket in front of the daemon that, the first time it sees `method`, lets the request through but closes the
 * client's connection instead of passing the reply on: the write is applied, the client never learns it.
 */
async function droppingProxy(
  socket: string,
  daemonSocket: string,
  method: string,
): Promise<{ seen: Record<string, unknown>[]; close: () => Promise<void> }> {
  const seen: Record<string, unknown>[] = [];
  let dropped = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(daemonSocket);
    const watched = new Set<unknown>();
    client.on(
      'data',
      frames((m, raw) => {
        if (m.method === method) {
          seen.push(m.params ?? {});
          if (!dropped) watched.add(m.id);
        }
        upstream.write(raw);
      }),
    );
    upstream.on(
      'data',
      frames((m, raw) => {
        if (m.id !== undefined && watched.has(m.id) && !dropped) {
          dropped = true;
          client.destroy();
          upstream.destroy();
          return;
        }
        if (!client.destroyed) client.write(raw);
      }),
    );
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(socket, r));
  return { seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CAIRN_BIN, ...args], { env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('the CLI retries a write whose connection closed after it was applied', () => {
  let d: SpawnedDaemon;
  after(async () => d?.stop());

  it('cairn add: exit 0, the first result, one version; cairn delete: exit 0 instead of "already deleted"', async () => {
    d = await spawnDaemon();
    const proxySock = path.join(d.dir, 'proxy.sock');
    const proxy = await droppingProxy(proxySock, d.socket, 'memory/upsert');
    try {
      const r = await cli(['add', '--socket', proxySock, 'project.idem', 'k', 'written once']);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /created project\.idem\/k v1/);
      assert.match(r.out, /recorded result, applied once/);
      assert.match(r.err, /same idempotency key/);
      assert.equal(proxy.seen.length, 2, 'the write was sent twice');
      assert.equal(typeof proxy.seen[0].idempotencyKey, 'string');
      assert.equal(proxy.seen[1].idempotencyKey, proxy.seen[0].idempotencyKey);
      const c = await d.client();
      const h = await c.call(Requests.history, { namespace: 'project.idem', key: 'k' });
      assert.equal(h.entries.length, 1, 'applied once');
    } finally {
      await proxy.close();
    }

    const proxy2 = await droppingProxy(path.join(d.dir, 'proxy2.sock'), d.socket, 'memory/delete');
    try {
      const r = await cli(['delete', '--socket', path.join(d.dir, 'proxy2.sock'), 'project.idem', 'k']);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /deleted project\.idem\/k/);
      assert.equal(proxy2.seen.length, 2);
      const c = await d.client();
      const m = await c.call(Requests.get, { namespace: 'project.idem', key: 'k', includeDeleted: true });
      assert.ok(m.deletedAt);
      assert.equal((await c.call(Requests.history, { namespace: 'project.idem', key: 'k' })).entries.length, 2, 'one create, one delete');
    } finally {
      await proxy2.close();
    }
  });
});
