/** The dashboard's request client: ids, one reply per request, typed errors, progress, stray replies. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ToHost } from '../../daemon/src/protocol/webview';
import { WebviewRequestMessage } from '../../daemon/src/protocol/webview';
import { RequestError, RpcClient } from '../../webview/src/rpc';

describe('webview request client', () => {
  it('sends requests with fresh ids that the extension accepts, and resolves each with its own reply', async () => {
    const sent: ToHost[] = [];
    const rpc = new RpcClient((m) => sent.push(m));
    const a = rpc.request('search', { query: 'a' });
    const b = rpc.request('get', { id: 'm1' });
    assert.deepEqual(
      sent.map((m) => m.id),
      [1, 2],
    );
    for (const m of sent) assert.ok(WebviewRequestMessage.safeParse(m).success, 'the host schema accepts what the webview sends');
    assert.equal(rpc.inFlight, 2);
    assert.equal(rpc.handle({ type: 'response', id: 2, result: { id: 'm1' } }), true);
    assert.equal(rpc.handle({ type: 'response', id: 1, result: { hits: [] } }), true);
    assert.deepEqual(await a, { hits: [] });
    assert.deepEqual(await b, { id: 'm1' });
    assert.equal(rpc.inFlight, 0);
    assert.equal(rpc.handle({ type: 'response', id: 1, result: 'again' }), false, 'a second reply to the same id is ignored');
  });

  it('rejects with a typed error carrying the field the daemon names', async () => {
    const rpc = new RpcClient(() => undefined);
    const p = rpc.request('upsert', { namespace: 'project.a', key: 'k', value: 'v', validFrom: 'tomorrow' });
    rpc.handle({
      type: 'error',
      id: 1,
      error: {
        code: 1001,
        name: 'InvalidParams',
        message: 'memory/upsert: validFrom: Invalid ISO datetime',
        data: { name: 'InvalidParams', field: 'validFrom' },
      },
    });
    await assert.rejects(
      p,
      (e: unknown) => e instanceof RequestError && e.errorName === 'InvalidParams' && e.field === 'validFrom' && e.error.code === 1001,
    );
    const q = rpc.request('status', {});
    rpc.handle({
      type: 'error',
      id: 2,
      error: { code: 1013, name: 'Unavailable', message: 'not connected', data: { name: 'Unavailable', sent: false } },
    });
    await assert.rejects(q, (e: unknown) => e instanceof RequestError && e.errorName === 'Unavailable' && e.field === undefined);
  });

  it('reports progress to the request that asked for it, and ignores other messages', async () => {
    const rpc = new RpcClient(() => undefined);
    const seen: [number, number][] = [];
    const p = rpc.request('host/importApply', { token: 't' }, { onProgress: (d, t) => seen.push([d, t]) });
    assert.equal(rpc.handle({ type: 'progress', id: 1, done: 0, total: 2 }), true);
    assert.equal(rpc.handle({ type: 'progress', id: 1, done: 2, total: 2 }), true);
    assert.equal(rpc.handle({ type: 'progress', id: 99, done: 1, total: 1 }), false);
    assert.equal(rpc.handle({ type: 'didChange', change: { position: 1, id: 'x', namespace: 'n', key: 'k', op: 'create' } }), false);
    assert.equal(rpc.handle({ type: 'connection', connected: false, state: 'error' }), false);
    rpc.handle({ type: 'response', id: 1, result: { memories: 2 } });
    assert.deepEqual(await p, { memories: 2 });
    assert.deepEqual(seen, [
      [0, 2],
      [2, 2],
    ]);
  });
});
