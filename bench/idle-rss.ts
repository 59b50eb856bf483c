/**
 * Idle RSS of the daemon (the built bundle, daemon/dist) on the built-in model: on an empty store, and on a store
 * of N memories (default 10,000) once they are all embedded, both right after indexing and after a restart.
 * Also checks that the daemon never mapped onnxruntime or transformers.js (/proc/<pid>/maps).
 *
 *   node --import tsx bench/idle-rss.ts [--count 10000] [--model builtin] [--json FILE]
 *
 * "Idle": the model is loaded, the index has reached the last write, nothing is asked for 3 s; VmRSS then.
 * Linux only (/proc).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { spawnDaemon, tempDir, type SpawnedDaemon } from '../test/helpers';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const COUNT = Number(opt('--count', '10000'));
const MODEL = opt('--model', 'builtin');
const JSON_OUT = opt('--json', '');

const rssMiB = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const neural = (pid: number) =>
  fs
    .readFileSync(`/proc/${pid}/maps`, 'utf8')
    .split('\n')
    .filter((l) => /onnxruntime|transformers/i.test(l)).length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function start(dir: string): Promise<SpawnedDaemon> {
  const env = {
    CAIRN_ALLOW_REMOTE_MODELS: '0',
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
  };
  const d = await spawnDaemon({ dir, args: ['--model', MODEL], env });
  const c = await d.client();
  for (let i = 0; ; i++) {
    const st = await c.call(R.status, {});
    if (st.embeddings?.state === 'ready') break;
    if (i > 1200) throw new Error(`embedding model not ready: ${JSON.stringify(st.embeddings)}`);
    await sleep(100);
  }
  return d;
}

async function idle(d: SpawnedDaemon): Promise<{ rssMiB: number; neuralMappings: number }> {
  const c = await d.client();
  const st = await c.call(R.status, {});
  await c.call(R.indexWait, { position: st.position ?? 0, timeoutMs: 600_000 });
  await sleep(3000);
  return { rssMiB: Math.round(rssMiB(d.proc.pid!) * 10) / 10, neuralMappings: neural(d.proc.pid!) };
}

async function main(): Promise<void> {
  const dir = tempDir('cairn-rss-');
  const report: Record<string, unknown> = { model: MODEL, count: COUNT };
  try {
    let d = await start(dir);
    report.empty = await idle(d);
    console.log(
      `empty store: idle RSS ${(report.empty as { rssMiB: number }).rssMiB} MiB, onnxruntime/transformers mappings: ${(report.empty as { neuralMappings: number }).neuralMappings}`,
    );
    const c = await d.client();
    const words = [
      'deploy',
      'staging',
      'database',
      'release',
      'cache',
      'token',
      'config',
      'worker',
      'queue',
      'schema',
      'index',
      'backup',
      'feature',
      'flag',
      'gateway',
      'retry',
    ];
    const t0 = Date.now();
    for (let i = 0; i < COUNT; i += 500) {
      const items = [];
      for (let j = i; j < Math.min(COUNT, i + 500); j++) {
        const w = (k: number) => words[(j * 7 + k * 13) % words.length];
        items.push({
          namespace: `project.p${j % 20}`,
          key: `k${j}`,
          value: `Memory ${j}: the ${w(1)} ${w(2)} uses the ${w(3)} ${w(4)} before each ${w(5)} (${j % 97})`,
        });
      }
      await c.call(R.upsertBatch, { items });
    }
    const written = Date.now() - t0;
    report.afterIndex = await idle(d);
    report.writeAndIndexS = Math.round((Date.now() - t0 - 3000) / 100) / 10;
    console.log(
      `${COUNT} memories written in ${(written / 1000).toFixed(1)} s, indexed after ${report.writeAndIndexS} s; idle RSS ${(report.afterIndex as { rssMiB: number }).rssMiB} MiB`,
    );
    await d.stop();
    d = await start(dir);
    report.restarted = await idle(d);
    console.log(
      `after a restart on ${COUNT} memories: idle RSS ${(report.restarted as { rssMiB: number }).rssMiB} MiB, onnxruntime/transformers mappings: ${(report.restarted as { neuralMappings: number }).neuralMappings}`,
    );
    await d.stop();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(report, null, 2));
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
