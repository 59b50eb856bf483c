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
import { DaemonLink } from '../../daemon/src/mcp/server';
import { forgetTool, rememberTool } from '../../daemon/src/mcp/tools';
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

  it('erase and purge blank the recorded results (they hold the text); a retry after them is InvalidState, never a rewrite', async () => {
    const t = tempCore();
    try {
      const write = { namespace: 'project.e', key: 'k', value: 'secretive text', idempotencyKey: 'req-0009-erase' };
      const r = await t.core.call(Requests.upsert, write);
      assert.equal(idempotencyRecords(t.store.db), 1);
      await t.core.call(Requests.erase, { id: r.memory.id });
      const rows = t.store.db.prepare('SELECT result, fingerprint, memory_id FROM idempotency_keys').all() as Record<string, unknown>[];
      assert.equal(rows.length, 1, 'the key stays taken');
      assert.doesNotMatch(JSON.stringify(rows), /secretive/);
      assert.equal(rows[0].memory_id, null);
      // The retry of the erased write: refused, and the memory stays erased (before, it was written again).
      const data = await rejectsWith(t.core.call(Requests.upsert, write), 'InvalidState', 'idempotencyKey');
      assert.equal(data.erased, true);
      await rejectsWith(t.core.call(Requests.get, { namespace: 'project.e', key: 'k' }), 'NotFound');
      assert.equal(t.core.status().counts.memories, 0);

      // The same through purge, and for a delete recorded before it.
      const p = await t.core.call(Requests.upsert, {
        namespace: 'project.e',
        key: 'p',
        value: 'purged text',
        idempotencyKey: 'req-0010-purge',
      });
      await t.core.call(Requests.delete, { id: p.memory.id, idempotencyKey: 'req-0011-delete' });
      await t.core.call(Requests.purge, { id: p.memory.id });
      assert.doesNotMatch(JSON.stringify(t.store.db.prepare('SELECT * FROM idempotency_keys').all()), /purged text/);
      await rejectsWith(
        t.core.call(Requests.upsert, { namespace: 'project.e', key: 'p', value: 'purged text', idempotencyKey: 'req-0010-purge' }),
        'InvalidState',
        'idempotencyKey',
      );
      await rejectsWith(
        t.core.call(Requests.delete, { id: p.memory.id, idempotencyKey: 'req-0011-delete' }),
        'InvalidState',
        'idempotencyKey',
      );
      await rejectsWith(t.core.call(Requests.get, { namespace: 'project.e', key: 'p', includeDeleted: true }), 'NotFound');
      // A new key writes the key again, as any new write would (erase frees the key; purge removes the memory).
      const fresh = await t.core.call(Requests.upsert, { ...write, idempotencyKey: 'req-0012-fresh' });
      assert.equal(fresh.memory.version, 1);
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

describe('an MCP session retries a write whose connection closed after it was applied', () => {
  let d: SpawnedDaemon;
  after(async () => d?.stop());

  it('cairn_remember and cairn_forget send an idempotency key per tool call and retry once with it: applied once', async () => {
    d = await spawnDaemon();
    const proxySock = path.join(d.dir, 'mcp-proxy.sock');
    const proxy = await droppingProxy(proxySock, d.socket, 'memory/upsert');
    const link = new DaemonLink({ db: path.join(d.dir, 'cairn.db'), socket: proxySock });
    const ctx = {
      call: link.call.bind(link),
      scope: { root: 'project.mcp', source: 'option' },
      actor: () => 'agent:test',
      reviewAgentWrites: false,
    };
    try {
      const out = await rememberTool.run({ key: 'k', value: 'remembered once' } as never, ctx as never);
      assert.match(out.text, /project\.mcp/);
      assert.equal(proxy.seen.length, 2, 'the write was sent twice');
      assert.equal(typeof proxy.seen[0].idempotencyKey, 'string');
      assert.equal(proxy.seen[1].idempotencyKey, proxy.seen[0].idempotencyKey);
      const c = await d.client();
      assert.equal((await c.call(Requests.history, { namespace: 'project.mcp', key: 'k' })).entries.length, 1, 'applied once');
      // A second tool call is a new write: a new key.
      await rememberTool.run({ key: 'k', value: 'remembered twice' } as never, ctx as never);
      assert.equal(proxy.seen.length, 3);
      assert.notEqual(proxy.seen[2].idempotencyKey, proxy.seen[0].idempotencyKey);
      assert.equal((await c.call(Requests.get, { namespace: 'project.mcp', key: 'k' })).version, 2);
    } finally {
      await link.close();
      await proxy.close();
    }

    const proxy2 = await droppingProxy(path.join(d.dir, 'mcp-proxy2.sock'), d.socket, 'memory/forget');
    const link2 = new DaemonLink({ db: path.join(d.dir, 'cairn.db'), socket: path.join(d.dir, 'mcp-proxy2.sock') });
    const ctx2 = {
      call: link2.call.bind(link2),
      scope: { root: 'project.mcp', source: 'option' },
      actor: () => 'agent:test',
      reviewAgentWrites: false,
    };
    try {
      // Before, the retry was not sent (Unavailable) or, sent without a key, answered "already deleted".
      const out = await forgetTool.run({ key: 'k' } as never, ctx2 as never);
      assert.ok(out.text.length > 0);
      assert.equal(proxy2.seen.length, 2);
      assert.equal(proxy2.seen[1].idempotencyKey, proxy2.seen[0].idempotencyKey);
      const c = await d.client();
      const h = await c.call(Requests.history, { namespace: 'project.mcp', key: 'k' });
      assert.deepEqual(
        h.entries.map((e) => e.op),
        ['forget', 'update', 'create'],
        'one forget',
      );
    } finally {
      await link2.close();
      await proxy2.close();
    }
  });
});

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
