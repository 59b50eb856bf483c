/**
 * Test entry: `cairn mcp` from sources (tsx), for when the daemon bundle lacks
 * the CLI hook or cannot be built. Same flags as the CLI: --db, --socket,
 * --root, --no-embeddings (passed on to a daemon it starts).
 */
import { parseArgs } from 'node:util';
import { runMcp } from '../../daemon/src/mcp/server';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    db: { type: 'string' },
    socket: { type: 'string' },
    root: { type: 'string' },
    task: { type: 'string' },
    'no-embeddings': { type: 'boolean' },
  },
  strict: true,
});
runMcp({
  db: values.db,
  socket: values.socket,
  root: values.root,
  task: values.task,
  daemonArgs: values['no-embeddings'] ? ['--no-embeddings'] : undefined,
}).then(
  (code) => (process.exitCode = code),
  (e) => {
    process.stderr.write(`cairn mcp: ${(e as Error).stack ?? e}\n`);
    process.exitCode = 1;
  },
);
