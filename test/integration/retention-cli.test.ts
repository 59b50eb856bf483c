/** `cairn retention`, `cairn sweep` with its retention report, and `cairn audit export`, through a running daemon. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { spawnDaemon, tempDir, CAIRN_BIN } from '../helpers';
import { Requests as R } from '../../daemon/src/protocol/methods';

function cli(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [CAIRN_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('cairn retention and audit export', () => {
  it('sets a rule, sweeps with a report, and exports the audit trail as JSON Lines', async () => {
    const dir = tempDir();
    const d = await spawnDaemon({ dir });
    const env = { CAIRN_DB: d.db, XDG_RUNTIME_DIR: dir };
    try {
      const c = await d.client();
      for (let v = 0; v < 4; v++) await c.call(R.upsert, { namespace: 'project.ret', key: 'k', value: `v${v}` });
      assert.match(cli(['retention'], env).out, /no retention rules/);
      const set = cli(['retention', 'set', 'project.ret', '--max-versions', '1'], env);
      assert.equal(set.code, 0, set.err);
      assert.match(set.out, /project\.ret\s+max 1 versions/);
      assert.equal(cli(['retention', 'set', 'project.ret'], env).code, 1);
      const ev = cli(['retention', 'set', 'project.ev', '--events-kind', 'tool_result=30', '--events-source', 'agent:=90'], env);
      assert.equal(ev.code, 0, ev.err);
      assert.match(ev.out, /project\.ev\s+source agent: events 90 days, tool_result events 30 days/);
      assert.equal(cli(['retention', 'set', 'project.ev', '--events-kind', 'tool_result'], env).code, 2, 'NAME=DAYS');
      assert.equal(cli(['retention', 'bogus'], env).code, 2);
      const sw = cli(['sweep'], env);
      assert.equal(sw.code, 0, sw.err);
      assert.match(sw.out, /retention: removed 3 past versions/);
      const file = path.join(dir, 'audit.jsonl');
      const ex = cli(['audit', 'export', file, '--root', 'project.ret', '--no-content'], env);
      assert.equal(ex.code, 0, ex.err);
      const entries = fs
        .readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        entries.map((e) => e.op),
        ['update', 'retention'],
      );
      assert.equal(entries[1].actor, 'retention');
      assert.ok(entries.every((e) => e.state === null));
      const future = cli(['audit', 'export', '--from', '2999-01-01T00:00:00Z'], env);
      assert.equal(future.out, '');
      assert.equal(cli(['retention', 'clear', 'project.ret'], env).code, 0);
    } finally {
      await d.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
