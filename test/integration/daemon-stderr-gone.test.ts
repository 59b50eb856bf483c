/**
 * A daemon whose stderr reader went away (the terminal or the process that started it is gone, so every log line
 * fails with EPIPE) keeps serving and stops on SIGTERM. Before, each failed log line raised an uncaught 'error'
 * that the daemon logged, to the same broken stderr: it spun at full CPU and never stopped. State only: the daemon
 * answers, then exits with status 0.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { spawnDaemon } from '../helpers';

describe('a daemon whose stderr is closed', () => {
  it('keeps answering, and exits cleanly on SIGTERM', async () => {
    const d = await spawnDaemon();
    try {
      d.proc.stderr!.destroy(); // the reader is gone: the daemon's next log line fails with EPIPE
      const c = await d.client();
      // writes that log (and a request that fails) after the reader left
      await c.call(R.upsert, { namespace: 'project.p', key: 'k', value: 'a value logged after stderr closed' });
      await assert.rejects(c.call(R.get, { namespace: 'project.p', key: 'missing' }));
      const got = await c.call(R.get, { namespace: 'project.p', key: 'k' });
      assert.equal(got.value, 'a value logged after stderr closed');
      await c.close();
      const exited = new Promise<number | null>((r) => d.proc.once('exit', (code) => r(code)));
      d.proc.kill('SIGTERM');
      // a daemon caught in the loop never exits: after a generous deadline it is killed and the test fails
      const deadline = setTimeout(() => d.proc.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(deadline);
      assert.equal(code, 0, 'the daemon did not stop on SIGTERM (killed after 30 s)');
    } finally {
      await d.stop();
    }
  });
});
