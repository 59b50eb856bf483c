/**
 * Mocha entry for the real extension host (extensionTestsPath). VS Code calls run(); the suites run
 * inside the host with the real `vscode` API, the real daemon and a real store (the e2e harness points
 * HOME/XDG at temporary folders first).
 *
 * Output: mocha's spec reporter on the console (forwarded to the harness), a final line
 * `mocha: N passed, N failed`, and when CAIRN_E2E_RESULTS is set, a JSON summary at that path
 * (counts, failures, measured activation time and hover latency).
 */
import * as fs from 'node:fs';
import Mocha from 'mocha';
import { results } from './suite/helpers';

export function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', color: false, timeout: 60_000, reporter: 'spec' });
  const grep = process.env.CAIRN_E2E_GREP;
  if (grep) mocha.grep(grep);
  // The suites are bundled into this file: install the tdd globals, then load them.
  mocha.suite.emit('pre-require', globalThis, 'bundle', mocha);
  require('./suite/all');
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      const passed = runner.stats?.passes ?? 0;
      const summary = {
        passed,
        failed: failures,
        pending: runner.stats?.pending ?? 0,
        failures: results.failures,
        metrics: results.metrics,
      };
      console.log(`metrics: ${JSON.stringify(results.metrics)}`);
      console.log(`mocha: ${passed} passed, ${failures} failed`);
      if (process.env.CAIRN_E2E_RESULTS) fs.writeFileSync(process.env.CAIRN_E2E_RESULTS, JSON.stringify(summary, null, 2));
      if (failures > 0) reject(new Error(`${failures} extension-host test(s) failed`));
      else resolve();
    });
    runner.on('fail', (t, err) => results.failures.push({ test: t.fullTitle(), error: String((err as Error)?.message ?? err) }));
  });
}
