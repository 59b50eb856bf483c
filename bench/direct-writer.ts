/**
 * One direct writer process for bench/reliability.ts: opens the store the way
 * `cairn --direct` does (Core over the Store, no daemon) and writes N upserts,
 * printing one JSON line [key, value] per acknowledged write.
 *   node --import tsx bench/direct-writer.ts <db> <writer-id> <count>
 */
import { Requests as R } from '../daemon/src/protocol/methods';
import { Core } from '../daemon/src/server/core';
import { Store } from '../daemon/src/store/store';

const [db, id, n] = process.argv.slice(2);
const core = new Core(new Store(db));
(async () => {
  let failed = 0;
  for (let i = 0; i < Number(n); i++) {
    const key = `d${id}-${i}`;
    const value = `direct write ${key}`;
    try {
      await core.call(R.upsert, { namespace: `project.direct.w${id}`, key, value });
      process.stdout.write(JSON.stringify([`project.direct.w${id}/${key}`, value]) + '\n');
    } catch (e) {
      failed++;
      process.stderr.write(`${key}: ${(e as Error).message}\n`);
    }
  }
  core.store.close();
  process.exitCode = failed ? 1 : 0;
})();
