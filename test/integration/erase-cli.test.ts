/** `cairn erase` through a running daemon, `cairn verify-receipt`, and the raw files after the daemon stops. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { CAIRN_BIN, spawnDaemon, tempDir } from '../helpers';

function cli(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [CAIRN_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function copies(db: string, needle: string): number {
  let n = 0;
  for (const f of [db, db + '-wal', db + '-shm']) {
    if (!fs.existsSync(f)) continue;
    const buf = fs.readFileSync(f);
    for (let i = buf.indexOf(needle); i !== -1; i = buf.indexOf(needle, i + 1)) n++;
  }
  return n;
}

describe('cairn erase and verify-receipt', () => {
  it('erases through the daemon, writes a receipt that verifies, and a tampered one fails', async () => {
    const dir = tempDir();
    const d = await spawnDaemon({ dir });
    const env = { CAIRN_DB: d.db, XDG_RUNTIME_DIR: dir };
    try {
      for (let i = 0; i < 8; i++) assert.equal(cli(['add', 'project.e', `k${i}`, `filler ${i} wombatcrescendo`], env).code, 0);
      const add = cli(['add', 'project.e', 'secret', 'the zanzibarquetzal password hint', '--json'], env);
      assert.equal(add.code, 0, add.err);
      assert.ok(copies(d.db, 'zanzibarquetz') > 0);
      const receiptFile = path.join(dir, 'receipt.json');
      const er = cli(['erase', 'project.e', 'secret', '--reason', 'gdpr', '--receipt', receiptFile], env);
      assert.equal(er.code, 0, er.err);
      assert.match(er.out, /erased 1 memory/);
      assert.equal(fs.statSync(receiptFile).mode & 0o777, 0o600);
      assert.equal(copies(d.db, 'zanzibarquetz'), 0, 'no copy while the daemon runs');
      const ok = cli(['verify-receipt', receiptFile], env);
      assert.equal(ok.code, 0, ok.err);
      assert.match(ok.out, /^valid: receipt .* 1 memories erased/);
      const tampered = JSON.parse(fs.readFileSync(receiptFile, 'utf8'));
      tampered.erasedAt = '2020-01-01T00:00:00.000Z';
      fs.writeFileSync(path.join(dir, 'bad.json'), JSON.stringify(tampered));
      const bad = cli(['verify-receipt', path.join(dir, 'bad.json')], env);
      assert.equal(bad.code, 1);
      assert.match(bad.err, /invalid receipt: the signature does not match/);
      const notJson = cli(['verify-receipt', CAIRN_BIN], env);
      assert.equal(notJson.code, 1);
      assert.match(notJson.err, /InvalidParams/);
      const usage = cli(['erase'], env);
      assert.equal(usage.code, 2);
      const missing = cli(['erase', 'project.e', 'nope'], env);
      assert.equal(missing.code, 1);
      assert.match(missing.err, /NotFound/);
      const sub = cli(['erase', '--root', 'project.e', '--json'], env);
      assert.equal(sub.code, 0, sub.err);
      assert.equal(JSON.parse(sub.out).erased, 8);
    } finally {
      await d.stop();
    }
    assert.equal(copies(d.db, 'zanzibarquetz'), 0, 'no copy after the daemon stopped');
    assert.equal(copies(d.db, 'wombatcrescend'), 0, 'nor of the erased subtree');
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
