/**
 * A short probe of single writes at one durability (issue 27, "Where a FULL write's time goes"): a daemon with the
 * built-in model on a fresh store, 50 warm-up `memory/upsert`s, a pause (attach `strace -f -T -e
 * trace=fsync,fdatasync -p PID` then: the daemon's pid is printed first), then N awaited upserts of the side-by-side
 * corpus over one socket; prints writes/s and ms per write with the load. Short enough to interleave builds and the
 * `floor` of bench/sidebyside.ts round by round on a loaded machine.
 *
 *   node --import tsx bench/single-writes.ts [--sync FULL|NORMAL] [--n 300] [--pause-ms 2000] [--cairn bin/cairn.js]
 *       [--embeddings no] [--corpus DIR]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { spawnDaemon, tempDir, ROOT } from '../test/helpers';
import { arg } from './stats';

const sync = arg('sync', 'FULL').toUpperCase();
const n = Number(arg('n', '300'));
const pauseMs = Number(arg('pause-ms', '2000'));
const bin = path.resolve(arg('cairn', path.join(ROOT, 'daemon', 'bin', 'cairn.js')));
const embeddings = arg('embeddings', 'yes') !== 'no';
const corpus = path.join(path.resolve(arg('corpus', path.join(ROOT, 'bench', '.corpus'))), 'corpus-10000.jsonl');

async function main() {
  const dir = tempDir('cairn-single-writes-');
  const env = {
    CAIRN_ALLOW_REMOTE_MODELS: '0',
    CAIRN_STORE_SYNCHRONOUS: sync,
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
  };
  const d = await spawnDaemon({ bin, dir, args: embeddings ? ['--model', 'builtin'] : ['--no-embeddings'], env });
  const c = await d.client();
  try {
    const synchronous = (await c.call(R.status, {})).synchronous;
    if (synchronous !== sync.toLowerCase()) throw new Error(`asked for synchronous=${sync}, the daemon has ${synchronous}`);
    const lines = fs
      .readFileSync(corpus, 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(0, n + 50);
    const write = (l: string) => {
      const r = JSON.parse(l) as { namespace: string; key: string; value: string; tags: string[] };
      return c.call(R.upsert, { namespace: r.namespace, key: r.key, value: r.value, tags: r.tags });
    };
    for (const l of lines.slice(0, 50)) await write(l);
    console.log(JSON.stringify({ pid: d.proc.pid }));
    await new Promise((r) => setTimeout(r, pauseMs));
    const t0 = performance.now();
    for (const l of lines.slice(50)) await write(l);
    const ms = performance.now() - t0;
    const count = lines.length - 50;
    console.log(
      JSON.stringify({
        synchronous,
        embeddings,
        writes: count,
        perSec: Math.round(count / (ms / 1000)),
        msPerWrite: Math.round((ms / count) * 100) / 100,
        load: os.loadavg().map((x) => Math.round(x * 100) / 100),
      }),
    );
  } finally {
    await c.close();
    await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
void main();
