/**
 * The built CLI: `node daemon/bin/cairn.js mcp --db <temp>` sharing a daemon
 * that is already running for the store. Skipped (with the reason) while the
 * bundle in daemon/dist lacks the `mcp` command: build it with
 * `cd daemon && node build.mjs`.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { ensureDaemon } from '../../daemon/src/client/ensure-daemon';
import { tempDir } from '../helpers';
import { BUNDLE, daemonInfo, fakeRepo, isolatedEnv, ok, pidAlive, rmDir, startMcp, stopDaemon } from './harness';

const built = fs.existsSync(BUNDLE) && fs.readFileSync(BUNDLE, 'utf8').includes('cairn_remember');

test(
  'cairn mcp (built CLI) serves tools over stdio through the store’s running daemon',
  { skip: built ? false : 'daemon/dist/cairn.js has no `mcp` command yet (build the daemon)' },
  async () => {
    const dir = tempDir('cairn-mcp-cli-');
    const db = path.join(dir, 'cairn.db');
    try {
      const env = isolatedEnv(dir);
      const daemon = await ensureDaemon({ db, env, args: ['--no-embeddings'] });
      assert.equal(daemon.started, true);
      const repo = fakeRepo(dir, 'cli-repo', 'https://example.com/acme/Cli-Repo.git');
      const s = await startMcp({ dir, cwd: repo, bin: true, env: { CAIRN_REVIEW_AGENT_WRITES: '0' } });
      let serverPid: number | null = null;
      try {
        serverPid = (s.client.transport as { pid?: number | null } | undefined)?.pid ?? null;
        const { tools } = await s.client.listTools();
        assert.equal(tools.length, 13);
        const r = await ok(s, 'cairn_remember', { key: 'release', value: 'Releases are cut from main every Tuesday.', kind: 'procedure' });
        assert.equal(r.data.memory.namespace, 'project.cli-repo');
        const found = await ok(s, 'cairn_search', { query: 'release tuesday' });
        assert.equal(found.data.hits[0].memory.key, 'release');
        const st = await ok(s, 'cairn_status');
        assert.equal(st.data.daemon.pid, daemon.pid, 'shares the running daemon instead of starting another');
        assert.equal(daemonInfo(db)!.pid, daemon.pid);
      } finally {
        await s.close();
      }
      // The server ends with its client.
      if (serverPid) {
        const deadline = Date.now() + 5000;
        while (pidAlive(serverPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
        assert.ok(!pidAlive(serverPid), 'cairn mcp exits when the client closes');
      }
      assert.ok(pidAlive(daemon.pid!), 'the shared daemon keeps running for other clients');
    } finally {
      await stopDaemon(db);
      rmDir(dir);
    }
  },
);
