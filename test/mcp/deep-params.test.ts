/**
 * Arguments nested far deeper than any limit, sent to `cairn mcp` as raw JSON text over stdio (an SDK client would
 * itself overflow its stack stringifying them): the tool answers `InvalidFilter` / `InvalidParams` naming the limit,
 * never `Internal`, and the session keeps serving. The same bound holds in the socket client every other caller
 * (CLI, MCP) sends through, and so for the CLI's --filter.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { CairnError } from '../../daemon/src/protocol/errors';
import { Requests } from '../../daemon/src/protocol/methods';
import { Limits } from '../../daemon/src/protocol/types';
import { CAIRN_BIN, spawnDaemon, tempDir } from '../helpers';
import { ENTRY, isolatedEnv, rmDir, stopDaemon, TSX_LOADER } from './harness';

/** JSON text of a filter nested `depth` deep (built as text: JSON.stringify itself recurses). */
const deepFilter = (depth: number) => '{"not":'.repeat(depth) + '{"field":"importance","op":"gte","value":0}' + '}'.repeat(depth);

interface RpcReply {
  id: number;
  result?: { isError?: boolean; structuredContent?: { error?: { name?: string; limit?: number; message?: string } } };
  error?: { code: number; message: string };
}

describe('cairn mcp: deeply nested tool arguments', () => {
  let dir: string;
  let proc: ChildProcessWithoutNullStreams;
  const replies = new Map<number, RpcReply>();
  let stderr = '';
  const send = (text: string) => proc.stdin.write(text + '\n');
  const reply = async (id: number): Promise<RpcReply> => {
    const deadline = Date.now() + 60_000;
    while (!replies.has(id)) {
      if (Date.now() > deadline) throw new Error(`no reply to ${id}; stderr: ${stderr}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return replies.get(id)!;
  };
  const callTool = (id: number, name: string, argsJson: string) =>
    send(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${argsJson}}}`);

  before(async () => {
    dir = tempDir('cairn-mcp-deep-');
    proc = spawn(process.execPath, ['--import', TSX_LOADER, ENTRY, '--db', path.join(dir, 'cairn.db'), '--no-embeddings'], {
      env: isolatedEnv(dir, { CAIRN_SCOPE_ROOT: 'project.deep' }),
      cwd: dir,
    });
    let buf = '';
    proc.stdout.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) {
          const m = JSON.parse(line) as RpcReply;
          if (typeof m.id === 'number') replies.set(m.id, m);
        }
      }
    });
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'deep', version: '1' } },
      }),
    );
    await reply(1);
    send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  });

  after(async () => {
    proc.stdin.end();
    await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
    await stopDaemon(path.join(dir, 'cairn.db'));
    rmDir(dir);
  });

  for (const [tool, depth] of [
    ['cairn_search', 5_000],
    ['cairn_search', 100_000],
    ['cairn_list', 20_000],
  ] as const) {
    test(`${tool} with a filter nested ${depth} deep answers InvalidFilter`, async () => {
      const id = 100 + depth + tool.length;
      const args = tool === 'cairn_search' ? `{"query":"x","filter":${deepFilter(depth)}}` : `{"filter":${deepFilter(depth)}}`;
      callTool(id, tool, args);
      const r = await reply(id);
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      assert.equal(r.result?.isError, true);
      const e = r.result?.structuredContent?.error;
      assert.equal(e?.name, 'InvalidFilter', JSON.stringify(e));
      assert.equal(e?.limit, Limits.filterDepth);
    });
  }

  test('other arguments nested deeper than the params limit answer InvalidParams', async () => {
    callTool(7, 'cairn_remember', `{"key":"k","value":"v","properties":${'['.repeat(50_000)}${']'.repeat(50_000)}}`);
    const e = (await reply(7)).result?.structuredContent?.error;
    assert.equal(e?.name, 'InvalidParams', JSON.stringify(e));
    assert.equal(e?.limit, Limits.paramsDepth);
  });

  test('the session keeps serving', async () => {
    callTool(8, 'cairn_search', '{"query":"x","filter":{"field":"importance","op":"gte","value":0}}');
    const r = await reply(8);
    assert.equal(r.result?.isError, undefined, JSON.stringify(r.result));
    assert.doesNotMatch(stderr, /Maximum call stack/);
  });
});

test('the socket client refuses params past the shape limits before writing them', { timeout: 60_000 }, async () => {
  const d = await spawnDaemon();
  try {
    const c = await StreamClient.connect(d.socket);
    const filter = JSON.parse(deepFilter(10_000)) as never;
    await assert.rejects(c.call(Requests.search, { query: 'x', filter }), (e: unknown) => {
      assert.ok(e instanceof CairnError);
      assert.equal(e.codeName, 'InvalidFilter');
      assert.equal(e.data.limit, Limits.filterDepth);
      return true;
    });
    // the connection was never used for it, and still works
    assert.ok((await c.call(Requests.status, {})).counts);
    await c.close();
    // the CLI's --filter goes the same way: a typed error, exit code 1
    const cli = spawnSync(
      process.execPath,
      [CAIRN_BIN, '--db', d.db, '--socket', d.socket, 'search', 'x', '--filter', deepFilter(10_000)],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(cli.status, 1, cli.stderr);
    assert.match(cli.stderr, /InvalidFilter/);
  } finally {
    await d.stop();
  }
});
