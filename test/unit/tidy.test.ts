/**
 * Tidy rules of the codebase (ARCHITECTURE.md, "Tidy rules"), checked over the source tree:
 * - SQLite belongs to daemon/src/store/: no `better-sqlite3` and no `.prepare(` anywhere else in product code;
 * - the VS Code extension never loads native code: its bundle's import graph (esbuild's, so it is exactly what
 *   ships) reaches no package with a native addon, no store module and no embedding runtime;
 * - environment variables are read only through daemon/src/protocol/settings.ts (readEnv / envFlag);
 * - every test file runs: scripts/test.sh collects every *.test.ts except the extension-host suites, and those are
 *   all loaded by extension/src/test/suite/all.ts;
 * - npm start's daemon runs with the same Node flags and environment as one ensureDaemon starts (DAEMON_NODE_FLAGS,
 *   DAEMON_ENV).
 * Each rule lists its exceptions explicitly, with the reason; each detector is also shown to find a violation.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { build } from 'esbuild';
import { DAEMON_ENV, DAEMON_NODE_FLAGS } from '../../daemon/src/client/ensure-daemon';
import { envFlag, Environment, parseBool, readEnv, Settings } from '../../daemon/src/protocol/settings';

const ROOT = path.resolve(__dirname, '..', '..');
/**
 * Product code: what ships in the daemon, CLI, MCP server, extension and webview. Harnesses are exempt: test/,
 * bench/ (they inspect stores and set up environments from outside), build scripts (daemon/scripts,
 * extension/scripts, *.mjs builds) and the extension-host suites below.
 */
const PRODUCT_DIRS = ['daemon/src', 'extension/src', 'webview/src'];
/** Test harnesses inside product folders: they drive the product from outside. */
const HARNESS = /^extension\/src\/test\//;

function walk(rel: string, out: string[] = []): string[] {
  const abs = path.join(ROOT, rel);
  if (!fs.existsSync(abs)) return out;
  for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
    const r = path.posix.join(rel, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'out' && e.name !== 'dist') walk(r, out);
    } else if (/\.(ts|tsx|mts|cts|js|mjs|cjs)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(r);
  }
  return out;
}

/** Source without comments (a rule's name in a doc comment is not a use). Strings stay: `require('x')` is a use. */
function code(file: string): string {
  return fs
    .readFileSync(path.join(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

const productFiles = () => PRODUCT_DIRS.flatMap((d) => walk(d)).filter((f) => !HARNESS.test(f));

function offenders(files: string[], pattern: RegExp, allowed: Record<string, string>): string[] {
  return files.filter((f) => !(f in allowed) && pattern.test(code(f)));
}

describe('tidy: SQLite only inside daemon/src/store/', () => {
  // A statement: better-sqlite3 itself, `<db>.prepare(`, or `.prepare(` of a literal (not a method of that name).
  const SQL = /better-sqlite3|\bdb\.prepare\(|\.prepare\(\s*['"`]/;
  test('no better-sqlite3 import and no .prepare( outside store/', () => {
    const files = productFiles().filter((f) => !f.startsWith('daemon/src/store/'));
    assert.ok(files.length > 50, `scanned ${files.length} files`);
    assert.deepEqual(offenders(files, SQL, {}), []);
  });

  test('the detector finds the store itself', () => {
    assert.deepEqual(offenders(['daemon/src/store/db.ts', 'daemon/src/store/schema.ts', 'daemon/src/embed/provider.ts'], SQL, {}), [
      'daemon/src/store/db.ts',
      'daemon/src/store/schema.ts',
    ]);
  });
});

describe('tidy: environment variables only through settings.ts', () => {
  const ENV = /\bprocess\.env\b/;
  const ALLOWED: Record<string, string> = {
    'daemon/src/protocol/settings.ts': 'the one reader (readEnv, envFlag, processEnv)',
    // Temporary: the "client" work replaces this file with daemon/src/client; remove the entry when it is gone.
    'extension/src/bootstrap.ts': 'the extension’s old copy of find-or-start-the-daemon, being replaced',
  };

  test('no process.env outside the settings module', () => {
    const files = productFiles();
    assert.ok(files.includes('daemon/src/paths.ts') && files.includes('extension/src/config.ts'));
    assert.deepEqual(offenders(files, ENV, ALLOWED), []);
  });

  test('the detector finds a reader, and ignores comments', () => {
    assert.deepEqual(offenders(['daemon/src/protocol/settings.ts'], ENV, {}), ['daemon/src/protocol/settings.ts']);
    assert.deepEqual(offenders(['daemon/src/client/ensure-daemon.ts'], ENV, {}), [], 'its doc comment names process.env');
  });

  test('every CAIRN_* variable the product names is declared', () => {
    const declared = new Set<string>([...Object.values(Settings).flatMap((d) => ('env' in d ? [d.env] : [])), ...Object.keys(Environment)]);
    const named = new Set<string>();
    for (const f of productFiles()) for (const m of code(f).matchAll(/\bCAIRN_[A-Z_]+\b/g)) named.add(m[0]);
    named.delete('CAIRN_API_VERSION'); // a constant of the extension API, not a variable
    assert.ok(named.has('CAIRN_DB') && named.has('CAIRN_REVIEW_AGENT_WRITES'));
    assert.deepEqual([...named].filter((n) => !declared.has(n)).sort(), []);
  });

  test('every declared variable is read somewhere', () => {
    const all = productFiles().map(code).join('\n');
    for (const name of [...Object.values(Settings).flatMap((d) => ('env' in d ? [d.env] : [])), ...Object.keys(Environment)]) {
      assert.ok(
        new RegExp(`readEnv\\('${name}'|envFlag\\('${name}'|env\\.${name}\\b`).test(all),
        `${name} is declared but nothing reads it`,
      );
    }
  });

  test('readEnv: empty is unset; envFlag: one boolean grammar, else the fallback', () => {
    assert.equal(readEnv('CAIRN_DB', { CAIRN_DB: '' }), undefined);
    assert.equal(readEnv('CAIRN_DB', {}), undefined);
    assert.equal(readEnv('CAIRN_DB', { CAIRN_DB: '/x.db' }), '/x.db');
    for (const v of ['1', 'true', 'YES', ' on ']) assert.equal(parseBool(v), true, v);
    for (const v of ['0', 'false', 'No', 'OFF']) assert.equal(parseBool(v), false, v);
    for (const v of [undefined, '', 'maybe', '2']) assert.equal(parseBool(v), undefined, String(v));
    assert.equal(envFlag('CAIRN_DISABLE_VEC', false, { CAIRN_DISABLE_VEC: '1' }), true);
    assert.equal(envFlag('CAIRN_ALLOW_REMOTE_MODELS', true, { CAIRN_ALLOW_REMOTE_MODELS: '0' }), false);
    assert.equal(envFlag('CAIRN_ALLOW_REMOTE_MODELS', true, { CAIRN_ALLOW_REMOTE_MODELS: 'junk' }), true);
    assert.equal(envFlag('CAIRN_REVIEW_AGENT_WRITES', true, {}), true);
  });
});

describe('tidy: the extension loads no native code', () => {
  /** Modules whose loading brings native code or the embedding runtime into a process. */
  const NATIVE_PACKAGES = [
    'better-sqlite3',
    'sqlite-vec',
    'onnxruntime-node',
    'onnxruntime-common',
    '@huggingface/transformers',
    'sharp',
    'bindings',
    'node-gyp-build',
    'prebuild-install',
  ];
  const NATIVE_SOURCES = /^daemon\/src\/(store|embed|index|server|retrieval)\//;

  function packageOf(input: string): string | null {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    return m ? m[1] : null;
  }
  function hasNativeAddon(pkg: string): boolean {
    const dir = path.join(ROOT, 'node_modules', pkg);
    if (NATIVE_PACKAGES.includes(pkg)) return true;
    if (fs.existsSync(path.join(dir, 'binding.gyp')) || fs.existsSync(path.join(dir, 'prebuilds'))) return true;
    try {
      const deps = Object.keys(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).dependencies ?? {});
      return deps.some((d) => NATIVE_PACKAGES.includes(d));
    } catch {
      return false;
    }
  }
  /** What the bundle of `entry` loads that is native (esbuild's import graph; a .node file fails the build). */
  async function nativeInputs(entry: string): Promise<string[]> {
    let inputs: string[];
    try {
      const r = await build({
        entryPoints: [path.join(ROOT, entry)],
        absWorkingDir: ROOT,
        bundle: true,
        platform: 'node',
        format: 'cjs',
        write: false,
        metafile: true,
        external: ['vscode'],
        logLevel: 'silent',
      });
      inputs = Object.keys(r.metafile.inputs);
    } catch (e) {
      return [`the bundle does not build: ${String((e as Error).message).split('\n')[0]}`];
    }
    const bad = new Set<string>();
    for (const i of inputs) {
      const pkg = packageOf(i);
      if (pkg && hasNativeAddon(pkg)) bad.add(pkg);
      if (!pkg && NATIVE_SOURCES.test(i)) bad.add(i);
    }
    return [...bad].sort();
  }

  test('the extension bundle (extension/src/main.ts) reaches no native module', { timeout: 120_000 }, async () => {
    assert.deepEqual(await nativeInputs('extension/src/main.ts'), []);
  });

  test('the detector finds the store behind the daemon entry', { timeout: 120_000 }, async () => {
    const found = await nativeInputs('daemon/src/store/db.ts');
    assert.ok(found.includes('better-sqlite3'), JSON.stringify(found));
    assert.ok(found.includes('daemon/src/store/db.ts'), JSON.stringify(found));
  });
});

describe('tidy: every test file runs', () => {
  test('scripts/test.sh collects every *.test.ts but the extension-host suites', () => {
    const sh = fs.readFileSync(path.join(ROOT, 'scripts', 'test.sh'), 'utf8');
    assert.match(sh, /find \. .*-name '\*\.test\.ts' -print/);
    const excluded = [...sh.matchAll(/grep -v '([^']+)'/g)].map((m) => m[1]);
    assert.deepEqual(excluded, ['^extension/src/test/suite/']);
  });

  test('npm run typecheck covers the tests and benchmarks too (tsconfig.tests.json)', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.match(pkg.scripts.typecheck, /tsc -p tsconfig\.tests\.json/);
    const config = fs.readFileSync(path.join(ROOT, 'tsconfig.tests.json'), 'utf8');
    const include = JSON.parse(config.replace(/^\s*\/\/.*$/gm, '')).include as string[];
    assert.deepEqual(include, ['test/**/*.ts', 'bench/**/*.ts']);
  });

  test('extension/src/test/suite/all.ts loads every suite', () => {
    const dir = path.join(ROOT, 'extension', 'src', 'test', 'suite');
    const suites = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => `./${f.replace(/\.ts$/, '')}`);
    const loaded = [...fs.readFileSync(path.join(dir, 'all.ts'), 'utf8').matchAll(/^import '([^']+)';/gm)].map((m) => m[1]);
    assert.ok(suites.length >= 5);
    assert.deepEqual([...loaded].sort(), suites.sort());
  });
});

describe('tidy: every daemon starter passes the daemon Node flags and environment', () => {
  test('scripts/start-editor.sh (npm start) starts its daemon with DAEMON_NODE_FLAGS and DAEMON_ENV, as ensureDaemon does', () => {
    const sh = fs.readFileSync(path.join(ROOT, 'scripts', 'start-editor.sh'), 'utf8');
    const starts = sh.split('\n').filter((l) => /daemon\/bin\/cairn\.js"? daemon\b/.test(l) && !l.trim().startsWith('#'));
    assert.equal(starts.length, 1, 'one line starts the daemon');
    const flags = starts[0].slice(0, starts[0].indexOf('daemon/bin/cairn.js'));
    assert.ok(DAEMON_NODE_FLAGS.length > 0);
    for (const f of DAEMON_NODE_FLAGS) assert.ok(flags.includes(f), `${f} before the script in: ${starts[0].trim()}`);
    assert.ok(Object.keys(DAEMON_ENV).length > 0);
    for (const [k, v] of Object.entries(DAEMON_ENV))
      assert.ok(flags.includes(`${k}=\${${k}:-${v}} `), `${k} (default ${v}) before the script in: ${starts[0].trim()}`);
  });
});

describe('tidy: generated files match their sources', () => {
  test('vector-kernels-wasm.ts is what vector-kernels.wat compiles to (npm run build:wasm)', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build-wasm.mjs'), '--check'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  });
});
