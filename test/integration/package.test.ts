/**
 * The packaged CLI, as a user without a checkout gets it: `npm pack` in the repository, then
 * `npm install -g <tarball>` into an empty prefix, then the installed `cairn` — no file of the checkout is used
 * after the pack. The installed command must start its own daemon (not fall back to the store in-process), answer
 * hybrid searches with the built-in model, and serve MCP as docs/mcp.md tells clients to run it (`cairn mcp`).
 *
 * The install compiles better-sqlite3 with the machine's C compiler against local Node headers
 * (scripts/node-headers.sh, as the project's own setup does) and takes its packages from npm's cache when it has
 * them; nothing is fetched from anywhere but the npm registry.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { alive, ROOT, tempDir } from '../helpers';
import { isolatedEnv } from '../mcp/harness';

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

/** The environment the project's own install steps use: local Node headers for node-gyp, no CUDA download. */
function installEnv(base: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { ...base, ONNXRUNTIME_NODE_INSTALL: 'skip', npm_config_update_notifier: 'false' };
  const prefix = path.resolve(process.execPath, '..', '..');
  if (!env.npm_config_nodedir && fs.existsSync(path.join(prefix, 'include', 'node', 'node_version.h'))) env.npm_config_nodedir = prefix;
  return env;
}

describe('the packaged CLI (npm pack, npm install -g, no checkout)', { timeout: 15 * 60_000 }, () => {
  const dir = tempDir('cairn-package-');
  const env = isolatedEnv(dir, { CAIRN_MODEL: 'builtin' });
  // npm's own cache stays the user's: the install takes the packages the repository's install already fetched.
  if (process.env.HOME) env.npm_config_cache = process.env.npm_config_cache ?? path.join(process.env.HOME, '.npm');
  const prefix = path.join(dir, 'prefix');
  const work = path.join(dir, 'elsewhere'); // a folder that is not the checkout
  const cairn = path.join(prefix, 'bin', 'cairn');
  let daemonPid = 0;
  const run = (args: string[]) => execFileSync(cairn, args, { cwd: work, env, encoding: 'utf8', timeout: 120_000 });

  before(() => {
    fs.mkdirSync(work, { recursive: true });
    fs.mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
    // --ignore-scripts: the suite has built already, and prepack's build must not rewrite the bundles other test
    // files are running from. `npm pack` on its own builds first (prepack).
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--loglevel=error', '--pack-destination', dir], {
      cwd: ROOT,
      env: installEnv(env),
      encoding: 'utf8',
    });
    const [packed] = JSON.parse(out) as { filename: string }[];
    assert.equal(packed.filename, `${pkg.name}-${pkg.version}.tgz`);
    execFileSync(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        path.join(dir, packed.filename),
      ],
      { cwd: work, env: installEnv(env), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 12 * 60_000 },
    );
  });

  after(() => {
    if (daemonPid && alive(daemonPid)) process.kill(daemonPid, 'SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the tarball carries the daemon bundle, the built-in model and the MCP docs, and no sources or tests', () => {
    const installed = path.join(prefix, 'lib', 'node_modules', pkg.name);
    for (const f of ['daemon/bin/cairn.js', 'daemon/dist/cairn.js', 'daemon/dist/embed-worker.js', 'daemon/models', 'docs/mcp.md'])
      assert.ok(fs.existsSync(path.join(installed, f)), `${f} is installed`);
    for (const f of ['daemon/src', 'test', 'extension', 'webview'])
      assert.ok(!fs.existsSync(path.join(installed, f)), `${f} is not shipped`);
  });

  test('`cairn --version` is the package version', () => {
    assert.equal(run(['--version']).trim(), pkg.version);
  });

  test('`cairn add` starts a daemon of its own and `cairn search` answers from it with both arms', () => {
    const added = JSON.parse(run(['add', 'project.packaged', 'tests', 'We run the suite with node:test', '--json'])) as {
      memory: { key: string };
      position: number;
    };
    assert.equal(added.memory.key, 'tests');
    const status = JSON.parse(run(['status', '--json'])) as { daemon?: { pid?: number } };
    assert.ok(status.daemon?.pid, 'a daemon serves the store (the CLI did not fall back to opening it in-process)');
    daemonPid = status.daemon.pid;
    assert.equal((JSON.parse(run(['wait', String(added.position), '--json'])) as { reached: boolean }).reached, true);
    // A query that shares no word with the memory: only the vector arm (the built-in model) can find it.
    const found = JSON.parse(run(['search', 'how is the testing done', '--mode', 'vector', '--root', 'project.packaged', '--json'])) as {
      hits: { memory: { key: string } }[];
    };
    assert.deepEqual(
      found.hits.map((h) => h.memory.key),
      ['tests'],
    );
  });

  test('`cairn mcp` from the install serves the MCP tools docs/mcp.md describes', async () => {
    const client = new Client({ name: 'package-test', version: '0' });
    await client.connect(new StdioClientTransport({ command: cairn, args: ['mcp'], env, cwd: work, stderr: 'pipe' }));
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const name of ['cairn_search', 'cairn_remember', 'cairn_recall']) assert.ok(names.includes(name), `${name} is served`);
      const docs = fs.readFileSync(path.join(prefix, 'lib', 'node_modules', pkg.name, 'docs', 'mcp.md'), 'utf8');
      for (const name of names) assert.ok(docs.includes(name), `docs/mcp.md describes ${name}`);
      type ToolResult = { content: { type: string; text: string }[]; isError?: boolean };
      const remembered = (await client.callTool({
        name: 'cairn_remember',
        arguments: { key: 'release-day', value: 'Releases are cut on Thursdays', kind: 'fact' },
      })) as ToolResult;
      assert.ok(!remembered.isError, JSON.stringify(remembered.content));
      const res = (await client.callTool({
        name: 'cairn_search',
        arguments: { query: 'Thursdays release', includeProposed: true },
      })) as ToolResult;
      assert.ok(!res.isError, JSON.stringify(res.content));
      assert.match(res.content.map((c) => c.text).join('\n'), /Releases are cut on Thursdays/);
    } finally {
      await client.close();
    }
  });
});
