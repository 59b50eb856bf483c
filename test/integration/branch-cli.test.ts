/** `cairn branch …` and `--branch` on the memory commands, on a store opened directly (--direct). */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CAIRN_BIN, tempDir } from '../helpers';

describe('cairn branch (--direct)', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [CAIRN_BIN, ...args, '--direct'], { encoding: 'utf8', env: { ...process.env, ...env } });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  before(() => {
    dir = tempDir();
    env = { CAIRN_DB: path.join(dir, 'cli.db'), XDG_RUNTIME_DIR: dir };
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('creates, writes on, diffs, refuses a conflicted merge, merges with a decision, and discards', () => {
    assert.equal(cli('add', 'project.cli', 'db', 'base postgres').code, 0);
    const created = cli('branch', 'create', 'feat', 'project.cli');
    assert.equal(created.code, 0, created.err);
    assert.match(created.out, /created branch feat of project\.cli/);
    assert.equal(cli('add', 'project.cli', 'db', 'branch sqlite', '--branch', 'feat').code, 0);
    assert.equal(cli('add', 'project.cli', 'db', 'base mysql').code, 0);
    assert.match(cli('get', 'project.cli', 'db', '--branch', 'feat').out, /branch sqlite/);
    assert.match(cli('get', 'project.cli', 'db').out, /base mysql/);
    const found = JSON.parse(cli('search', 'sqlite', '--branch', 'feat', '--mode', 'fts', '--json').out) as {
      hits: { memory: { value: string } }[];
    };
    assert.deepEqual(
      found.hits.map((h) => h.memory.value),
      ['branch sqlite'],
    );
    const diff = cli('branch', 'diff', 'feat');
    assert.match(diff.out, /changed\s+project\.cli\/db \(from base v1\)\s+CONFLICT: base is now v2/);
    const refused = cli('branch', 'merge', 'feat');
    assert.equal(refused.code, 1);
    assert.match(refused.out, /not merged: 1 conflict/);
    assert.equal(cli('branch', 'merge', 'feat', '--take', 'bad').code, 2);
    const merged = cli('branch', 'merge', 'feat', '--take', 'project.cli/db=branch', '--actor', 'dana');
    assert.equal(merged.code, 0, merged.err);
    assert.match(cli('get', 'project.cli', 'db').out, /branch sqlite/);
    const hist = JSON.parse(cli('history', 'project.cli', 'db', '--json').out) as { entries: { actor: string; reason: string }[] };
    assert.deepEqual([hist.entries[0].actor, hist.entries[0].reason], ['dana', 'merge of branch feat']);

    assert.equal(cli('branch', 'create', 'tmp', 'project.cli').code, 0);
    assert.equal(cli('add', 'project.cli', 'x', 'throwaway', '--branch', 'tmp').code, 0);
    assert.match(cli('branch', 'discard', 'tmp').out, /discarded branch tmp \(1 row\(s\) dropped\)/);
    const list = JSON.parse(cli('branch', 'list', '--all', '--json').out) as { branches: { name: string; status: string }[] };
    assert.deepEqual(
      list.branches.map((b) => `${b.name}:${b.status}`),
      ['tmp:discarded', 'feat:merged'],
    );
    const missing = cli('get', 'project.cli', 'x', '--branch', 'tmp');
    assert.equal(missing.code, 1);
    assert.match(missing.err, /NotFound/);
    assert.equal(cli('restore', 'project.cli', 'db', '--branch', 'feat').code, 2);
  });
});
