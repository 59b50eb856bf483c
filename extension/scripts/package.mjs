// Packages the extension as a .vsix that carries its own copy of the daemon, so an installed extension
// needs nothing but a Node.js >= 20 on PATH (or `cairn.daemon.nodePath`).
//
//   node scripts/package.mjs [--out FILE] [--no-daemon]
//
// Layout inside the vsix (extension/):
//   out/extension.js                 the extension bundle (no native code)
//   daemon/bin/cairn.js, daemon/dist the daemon bundle (built by `npm run build -w daemon`)
//   daemon/models/                   the built-in offline embedding model, when built
//   daemon/node_modules/             the daemon's runtime dependencies, copied from this checkout's
//                                    node_modules (native modules as built here: same OS, CPU and
//                                    Node ABI as this machine), minus other platforms' binaries
//
// --no-daemon builds a thin vsix; it then finds the daemon through `cairn.daemon.path` / CAIRN_DAEMON.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.join(here, '..');
const repo = path.join(ext, '..');
const daemon = path.join(repo, 'daemon');
const args = process.argv.slice(2);
const outArg = args.includes('--out') ? args[args.indexOf('--out') + 1] : undefined;
const withDaemon = !args.includes('--no-daemon');
const pkg = JSON.parse(readFileSync(path.join(ext, 'package.json'), 'utf8'));
const out = path.resolve(outArg ?? path.join(ext, `${pkg.name}-${pkg.version}.vsix`));
const t0 = Date.now();

/** Packages the daemon needs at run time but never loads in Node (bundled into its dist, or web-only). */
const SKIP = new Set(['onnxruntime-web', 'vscode-jsonrpc', 'zod']);

function fail(msg) {
  console.error(`package: ${msg}`);
  process.exit(1);
}

/** Directory of `name` as Node would resolve it from `fromDir`. */
function resolvePackageDir(name, fromDir) {
  let dir = fromDir;
  for (;;) {
    const candidate = path.join(dir, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** The daemon's production dependency closure: [packageName, sourceDir] pairs. */
function runtimeClosure() {
  const seen = new Map();
  const visit = (fromDir, deps, optional) => {
    for (const name of Object.keys(deps ?? {})) {
      if (SKIP.has(name)) continue;
      const dir = resolvePackageDir(name, fromDir);
      if (!dir) {
        if (optional) continue; // optional dependency for another platform
        fail(`cannot find ${name} (needed from ${fromDir}); run npm install first`);
      }
      if (seen.has(dir)) continue;
      const p = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      seen.set(dir, p.name);
      visit(dir, p.dependencies, false);
      visit(dir, p.optionalDependencies, true);
    }
  };
  const dp = JSON.parse(readFileSync(path.join(daemon, 'package.json'), 'utf8'));
  visit(daemon, dp.dependencies, false);
  visit(daemon, dp.optionalDependencies, true);
  return [...seen].map(([dir, name]) => ({ dir, name }));
}

const platformDir = `${process.platform}`;
const archDir = `${process.arch}`;
/** Files of a dependency that are never needed at run time on this platform. */
function keep(name, rel) {
  const parts = rel.split(path.sep);
  if (parts.includes('.github') || parts.includes('test') || parts.includes('tests') || parts.includes('docs')) return false;
  if (/\.(md|markdown|map|tsbuildinfo|ts|mts|cts)$/i.test(rel)) return false;
  if (name === 'better-sqlite3') return !['deps', 'src'].includes(parts[0]) && !(parts[0] === 'build' && !rel.endsWith('.node'));
  if (name === 'onnxruntime-node') {
    const i = parts.indexOf('bin');
    if (i >= 0 && parts[i + 1]?.startsWith('napi-') && parts[i + 2])
      return parts[i + 2] === platformDir && (parts[i + 3] === undefined || parts[i + 3] === archDir);
  }
  if (name === '@huggingface/transformers')
    return parts[0] !== 'dist' || /^transformers\.node\.(c|m)js$/.test(parts[1] ?? '') || parts.length === 1;
  return true;
}

function copyFiltered(name, src, dst) {
  const walk = (rel) => {
    const from = path.join(src, rel);
    const st = statSync(from);
    if (st.isDirectory()) {
      if (rel && path.basename(rel) === 'node_modules') return; // nested copies are visited as their own packages
      for (const f of readdirSync(from)) walk(path.join(rel, f));
      return;
    }
    if (!keep(name, rel)) return;
    mkdirSync(path.dirname(path.join(dst, rel)), { recursive: true });
    cpSync(from, path.join(dst, rel));
  };
  walk('');
}

function du(dir) {
  let n = 0;
  const walk = (p) => {
    const st = statSync(p);
    if (st.isDirectory()) for (const f of readdirSync(p)) walk(path.join(p, f));
    else n += st.size;
  };
  walk(dir);
  return n;
}

// 1. a private stage (concurrent packaging runs must not share one) with the extension's own files
if (!existsSync(path.join(ext, 'out', 'extension.js'))) fail('extension not built: run `npm run build -w extension`');
const stage = mkdtempSync(path.join(os.tmpdir(), 'cairn-vsix-'));
process.on('exit', () => rmSync(stage, { recursive: true, force: true }));
const manifest = { ...pkg };
delete manifest.devDependencies;
delete manifest.dependencies; // bundled into out/extension.js
delete manifest.scripts;
delete manifest.private;
writeFileSync(path.join(stage, 'package.json'), JSON.stringify(manifest, null, 2));
cpSync(path.join(ext, 'out', 'extension.js'), path.join(stage, 'out', 'extension.js'));
if (existsSync(path.join(ext, 'out', 'webview')))
  cpSync(path.join(ext, 'out', 'webview'), path.join(stage, 'out', 'webview'), { recursive: true, filter: (s) => !s.endsWith('.map') });
else fail('dashboard webview not built: run `npm run build -w webview`');
cpSync(path.join(ext, 'media'), path.join(stage, 'media'), { recursive: true });
for (const f of ['README.md', 'CHANGELOG.md']) if (existsSync(path.join(ext, f))) cpSync(path.join(ext, f), path.join(stage, f));
const license = [path.join(ext, 'LICENSE'), path.join(repo, 'LICENSE')].find((f) => existsSync(f));
if (license) cpSync(license, path.join(stage, 'LICENSE'));
writeFileSync(path.join(stage, '.vscodeignore'), '**/*.map\n');

// 2. the daemon and its runtime dependencies
if (withDaemon) {
  const dist = path.join(daemon, 'dist', 'cairn.js');
  if (!existsSync(dist)) fail('daemon not built: run `npm run build -w daemon`');
  const d = path.join(stage, 'daemon');
  for (const sub of ['bin', 'dist', 'models']) {
    if (existsSync(path.join(daemon, sub)))
      cpSync(path.join(daemon, sub), path.join(d, sub), { recursive: true, filter: (s) => !s.endsWith('.map') });
  }
  const dpkg = JSON.parse(readFileSync(path.join(daemon, 'package.json'), 'utf8'));
  writeFileSync(
    path.join(d, 'package.json'),
    JSON.stringify({ name: dpkg.name, version: dpkg.version, private: true, main: dpkg.main }, null, 2),
  );
  const closure = runtimeClosure();
  for (const { dir, name } of closure) copyFiltered(name, dir, path.join(d, 'node_modules', name));
  // Smoke check: the copied daemon must load its native modules from the stage alone.
  const req = createRequire(path.join(d, 'dist', 'cairn.js'));
  for (const m of ['better-sqlite3']) {
    const resolved = req.resolve(m);
    if (!resolved.startsWith(d)) fail(`${m} resolves outside the staged daemon: ${resolved}`);
  }
  const env = { ...process.env, NODE_PATH: '' };
  execFileSync(process.execPath, [path.join(d, 'bin', 'cairn.js'), '--version'], { stdio: 'pipe', cwd: d, env });
  execFileSync(process.execPath, ['-e', `new (require(${JSON.stringify(req.resolve('better-sqlite3'))}))(':memory:').close()`], {
    stdio: 'pipe',
    cwd: d,
    env,
  });
  console.log(`package: daemon + ${closure.length} runtime packages staged (${(du(d) / 1048576).toFixed(1)} MiB)`);
}

// 3. vsce, offline: no dependency detection (everything is bundled or staged), no secret scan of binaries
const vsce = path.join(path.dirname(createRequire(import.meta.url).resolve('@vscode/vsce/package.json')), 'vsce');
mkdirSync(path.dirname(out), { recursive: true });
try {
  execFileSync(
    process.execPath,
    [vsce, 'package', '--no-dependencies', '--skip-license', '--allow-package-all-secrets', '--allow-package-env-file', '--out', out],
    {
      cwd: stage,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
} catch (e) {
  // vsce's output only matters when it fails (it always warns that daemon/node_modules is not bundled)
  process.stderr.write(`${e.stdout ?? ''}${e.stderr ?? ''}`);
  fail('vsce package failed');
}
console.log(`package: ${out} (${(statSync(out).size / 1048576).toFixed(1)} MiB) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
