// The same extension-host suite on VS Code desktop (Electron), for machines that can download VS Code:
//
//   npm run build -w daemon && npm run build -w extension && node test/e2e/electron.js
//
// @vscode/test-electron downloads VS Code (cached in .vscode-test/), starts it with this checkout's
// extension under development and runs extension/out/test/index.js inside it. HOME/XDG and the store are
// isolated in a temporary folder exactly as test/e2e/run.sh does; the daemon the extension starts is
// stopped at the end. Not used in CI here (no download access): run.sh drives code-server instead.
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const repo = path.resolve(__dirname, '..', '..');
const { runTests } = require(require.resolve('@vscode/test-electron', { paths: [path.join(repo, 'extension')] }));

async function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-electron-'));
  const home = path.join(work, 'home');
  const ws = path.join(work, 'ws');
  fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
  fs.mkdirSync(path.join(ws, '.git'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.git', 'config'), '[remote "origin"]\n\turl = https://example.com/acme/Sample-App.git\n');
  fs.writeFileSync(
    path.join(ws, 'src', 'billing.py'),
    '"""Invoices."""\n\ndef invoice_total(lines):\n    return round_half_even(sum(l.amount for l in lines))\n\n\ndef round_half_even(x):\n    return round(x, 2)\n\n\ndef tax(amount, rate):\n    return amount * rate\n',
  );
  const runtime = path.join(work, 'run');
  fs.mkdirSync(runtime, { mode: 0o700 });
  const env = {
    HOME: home,
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    XDG_RUNTIME_DIR: runtime,
    CAIRN_ALLOW_REMOTE_MODELS: '0',
    CAIRN_E2E_RESULTS: path.join(work, 'results.json'),
    CAIRN_E2E_SEEDED_KEY: 'welcome',
    CAIRN_E2E_EXPECT_PROJECT: 'project.sample-app',
    CAIRN_E2E_EXPECT_DB: path.join(home, '.local', 'share', 'cairn', 'cairn.db'),
  };
  const cli = (...args) =>
    execFileSync(process.execPath, [path.join(repo, 'daemon', 'bin', 'cairn.js'), ...args], {
      env: { ...process.env, ...env },
      stdio: 'pipe',
    });
  cli('add', 'project.sample-app', 'welcome', 'Welcome to Cairn: memories written from the CLI show up in this view.', '--kind', 'fact');
  let code = 0;
  try {
    await runTests({
      extensionDevelopmentPath: path.join(repo, 'extension'),
      extensionTestsPath: path.join(repo, 'extension', 'out', 'test', 'index'),
      extensionTestsEnv: env,
      launchArgs: [
        ws,
        '--disable-workspace-trust',
        `--user-data-dir=${path.join(work, 'ud')}`,
        `--extensions-dir=${path.join(work, 'exts')}`,
      ],
    });
  } catch (e) {
    console.error(e);
    code = 1;
  } finally {
    try {
      const info = JSON.parse(fs.readFileSync(path.join(env.XDG_DATA_HOME, 'cairn', 'cairn.db.daemon.json'), 'utf8'));
      process.kill(info.pid, 'SIGTERM');
    } catch {
      // no daemon left
    }
    if (fs.existsSync(env.CAIRN_E2E_RESULTS)) {
      const r = JSON.parse(fs.readFileSync(env.CAIRN_E2E_RESULTS, 'utf8'));
      console.log(`e2e: ${r.passed} passed, ${r.failed} failed`);
    }
    fs.rmSync(work, { recursive: true, force: true });
  }
  process.exit(code);
}
main();
