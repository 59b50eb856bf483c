/**
 * `cairn export` and `cairn audit export` write files that hold the store's values, secret ones included: 0600 like
 * backups and receipts (also over an existing file others could read), and they say when secret values are in them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CAIRN_BIN, tempDir } from '../helpers';

function cli(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [CAIRN_BIN, ...args, '--direct'], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('export and audit files are private and say when they hold secret values', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  before(() => {
    dir = tempDir();
    env = { CAIRN_DB: path.join(dir, 'store.db'), XDG_RUNTIME_DIR: dir };
    assert.equal(cli(['add', 'project.p', 'plain', 'an ordinary fact'], env).code, 0);
    assert.equal(cli(['add', 'project.p', 'staging-login', 'the staging password is walrus-42', '--tags', 'ops,secret'], env).code, 0);
    assert.equal(cli(['add', 'project.q', 'other', 'another ordinary fact'], env).code, 0);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const mode = (f: string) => fs.statSync(f).mode & 0o777;

  it('cairn export: 0600, over a 0644 file too, with a note naming the secret values', () => {
    const file = path.join(dir, 'export.jsonl');
    fs.writeFileSync(file, 'old', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const r = cli(['export', file], env);
    assert.equal(r.code, 0, r.err);
    assert.equal(mode(file), 0o600);
    assert.ok(fs.readFileSync(file, 'utf8').includes('walrus-42'), 'the export is exact: the secret value is in it');
    assert.match(r.err, /holds the values of 1 memory tagged secret in full/);
    const plain = path.join(dir, 'plain.jsonl');
    const q = cli(['export', plain, '--root', 'project.q'], env);
    assert.equal(q.code, 0, q.err);
    assert.equal(mode(plain), 0o600);
    assert.doesNotMatch(q.err, /tagged secret/);
    const stdout = cli(['export'], env);
    assert.match(stdout.err, /the export holds the values of 1 memory tagged secret/);
  });

  it('cairn audit export: 0600, with the note unless --no-content leaves the values out', () => {
    const file = path.join(dir, 'audit.jsonl');
    fs.writeFileSync(file, '', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const r = cli(['audit', 'export', file], env);
    assert.equal(r.code, 0, r.err);
    assert.equal(mode(file), 0o600);
    assert.match(r.err, /holds the values of 1 memory tagged secret in full/);
    const bare = path.join(dir, 'bare.jsonl');
    const n = cli(['audit', 'export', bare, '--no-content'], env);
    assert.equal(n.code, 0, n.err);
    assert.equal(mode(bare), 0o600);
    assert.doesNotMatch(n.err, /tagged secret/);
    assert.ok(!fs.readFileSync(bare, 'utf8').includes('walrus-42'));
  });
});
