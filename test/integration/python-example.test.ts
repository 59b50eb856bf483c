/** The Python example client (standard library only) works over stdio and over the socket. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, spawnDaemon, tempDir, type SpawnedDaemon } from '../helpers';

const SCRIPT = path.join(ROOT, 'examples', 'python', 'cairn_client.py');

describe('examples/python/cairn_client.py', () => {
  let d: SpawnedDaemon;
  before(async () => (d = await spawnDaemon()));
  after(async () => d.stop());

  it('initializes, upserts and searches over stdio', () => {
    const r = spawnSync('python3', [SCRIPT, '--stdio', '--db', path.join(tempDir(), 'py.db')], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /connected to cairn/);
    assert.match(r.stdout, /1\. project\.python-demo\/greeting-style/);
    assert.match(r.stdout, /InvalidNamespace/);
  });

  it('does the same over the daemon socket', () => {
    const r = spawnSync('python3', [SCRIPT, '--socket', d.socket], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /created project\.python-demo\/greeting-style/);
  });
});
