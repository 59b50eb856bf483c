/** `cairn export` (paged) / `import`, `cairn backup` through a running daemon, and `cairn restore --from`. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { readDaemonInfo } from '../../daemon/src/client/daemon-info';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { CAIRN_BIN, cleanupAfter, spawnDaemon, tempDir } from '../helpers';

function cli(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [CAIRN_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// The import into a second store starts that store's shared daemon: stopped after the file, not left running.
const { pids: started } = cleanupAfter(after);

describe('cairn export, backup and restore', () => {
  it('exports in pages through the daemon, backs up online, and restores only without a daemon', async () => {
    const dir = tempDir();
    const d = await spawnDaemon({ dir });
    const env = { CAIRN_DB: d.db, XDG_RUNTIME_DIR: dir };
    try {
      const c = await d.client();
      for (let b = 0; b < 3; b++) {
        await c.call(R.upsertBatch, {
          items: Array.from({ length: 1500 }, (_, i) => ({
            namespace: 'project.big',
            key: `k${b}-${i}`,
            value: `value ${b} ${i} ${'x'.repeat(200)}`,
          })),
        });
      }
      const file = path.join(dir, 'out.jsonl');
      const ex = cli(['export', file], env);
      assert.equal(ex.code, 0, ex.err);
      assert.match(ex.err, /exported 4500\/4500 memories/);
      const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
      assert.equal(lines.filter((l) => l.startsWith('{"type":"memory"')).length, 4500);
      assert.equal(lines.filter((l) => l.startsWith('{"type":"history"')).length, 4500);
      const env2 = { CAIRN_DB: path.join(dir, 'other.db'), XDG_RUNTIME_DIR: dir };
      const imp = cli(['import', file, '--json'], env2);
      assert.equal(imp.code, 0, imp.err);
      const otherDaemon = readDaemonInfo(env2.CAIRN_DB);
      assert.ok(otherDaemon, "the import went through the second store's daemon");
      started.push(otherDaemon.pid);
      assert.deepEqual([JSON.parse(imp.out).memories, JSON.parse(imp.out).history], [4500, 4500]);

      const backupFile = path.join(dir, 'backup.db');
      const bk = cli(['backup', backupFile, '--json'], env);
      assert.equal(bk.code, 0, bk.err);
      assert.ok(JSON.parse(bk.out).pages > 0);
      assert.ok(fs.existsSync(backupFile + '.keys'));
      assert.equal(cli(['backup', backupFile], env).code, 1, 'an existing file needs --force');
      assert.equal(cli(['backup', backupFile, '--force'], env).code, 0);

      await c.call(R.upsert, { namespace: 'project.big', key: 'after', value: 'after the backup' });
      const refused = cli(['restore', '--from', backupFile], env);
      assert.equal(refused.code, 1);
      assert.match(refused.err, /serves[\s\S]*InvalidState/);
    } finally {
      await d.stop();
    }
    const ok = cli(['restore', '--from', path.join(dir, 'backup.db')], { CAIRN_DB: d.db, XDG_RUNTIME_DIR: dir });
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /restored 4500 memories/);
    assert.match(ok.out, /kept as .*pre-restore-/);
    const gone = cli(['get', 'project.big', 'after', '--direct'], { CAIRN_DB: d.db, XDG_RUNTIME_DIR: dir });
    assert.equal(gone.code, 1, 'the store is the backup again');
    assert.equal(
      cli(['restore', '--from', path.join(dir, 'out.jsonl')], { CAIRN_DB: d.db, XDG_RUNTIME_DIR: dir }).code,
      1,
      'not a database: refused',
    );
    fs.rmSync(dir, { recursive: true, force: true });
  });
  it('cairn backup through a folder that links to the store folder is refused, and the store stays whole', async () => {
    const dir = tempDir();
    const d = await spawnDaemon({ dir });
    const env = { CAIRN_DB: d.db, XDG_RUNTIME_DIR: dir };
    const other = tempDir();
    try {
      const c = await d.client();
      await c.call(R.upsertBatch, {
        items: Array.from({ length: 200 }, (_, i) => ({ namespace: 'project.kept', key: `k${i}`, value: `acknowledged ${i}` })),
      });
      const keys = fs.readFileSync(d.db + '.keys', 'utf8');
      fs.symlinkSync(dir, path.join(other, 'link'));
      for (const name of ['cairn.db', 'cairn.db-wal', 'cairn.db-shm', 'cairn.db.keys', 'cairn.db.lock', 'cairn.db.daemon.json']) {
        const r = cli(['backup', path.join(other, 'link', name), '--force'], env);
        assert.equal(r.code, 1, `${name}: ${r.out}`);
        assert.match(r.err, /refusing to write the backup to .* it is this store's[\s\S]*\(code InvalidParams 1001, field path\)/, name);
      }
      assert.equal(fs.readFileSync(d.db + '.keys', 'utf8'), keys, 'the key file is untouched');
      const list = cli(['list', '--root', 'project.kept', '--limit', '500', '--json'], env);
      assert.equal(list.code, 0, list.err);
      assert.equal(JSON.parse(list.out).items.length, 200);
    } finally {
      await d.stop();
      fs.rmSync(other, { recursive: true, force: true });
    }
    const check = cli(['status', '--json', '--direct'], { CAIRN_DB: d.db, XDG_RUNTIME_DIR: dir });
    assert.equal(check.code, 0, check.err);
    assert.equal(JSON.parse(check.out).counts.memories, 200, 'every acknowledged write survives a restart');
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
