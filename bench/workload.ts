/**
 * The side-by-side workload (issue 8): the shared synthetic developer corpus and its 200 queries, written by
 * gen_corpus.py as `corpus-<N>.jsonl` and `queries-<N>.jsonl` (bench/sidebyside.ts, bench/million.ts).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { MemoryKind } from '../daemon/src/protocol/types';

/** One record of the corpus. */
export interface CorpusRecord {
  namespace: string;
  key: string;
  value: string;
  tags: string[];
  kind: string;
  importance: number;
}

/** One query of the workload, with the namespace root its scoped search uses. */
export interface CorpusQuery {
  q: string;
  scope: string;
}

/** The corpus's memory types as Cairn's kinds (anything else is a note). */
const KINDS: Record<string, MemoryKind> = { semantic: 'fact', episodic: 'episode', procedural: 'procedure', preference: 'preference' };

/** A corpus record as memory/upsert parameters. */
export const toUpsert = (r: CorpusRecord) => ({
  namespace: r.namespace,
  key: r.key,
  value: r.value,
  tags: r.tags,
  kind: KINDS[r.kind] ?? 'note',
  importance: r.importance,
});

/** Write the corpus and queries of `sizes` into `dir` with the generator `gen`, unless they are there already. */
export function ensureCorpus(dir: string, gen: string, sizes: number[]): void {
  const missing = sizes.some(
    (n) => !fs.existsSync(path.join(dir, `corpus-${n}.jsonl`)) || !fs.existsSync(path.join(dir, `queries-${n}.jsonl`)),
  );
  if (!missing) return;
  if (!fs.existsSync(gen))
    throw new Error(`no corpus in ${dir} and no generator at ${gen} (pass --gen path/to/gen_corpus.py or --corpus DIR)`);
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('python3', [gen, '--sizes', sizes.join(','), '--out', dir], { stdio: 'inherit' });
}

/** A JSON Lines file read whole. */
export function readJsonl<T>(file: string): T[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

/** The corpus's records read a line at a time (1M records as one string would be 450 MB). */
export function* streamRecords(file: string): Generator<CorpusRecord> {
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.alloc(1 << 20);
  let rest = '';
  try {
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const lines = (rest + buf.toString('utf8', 0, n)).split('\n');
      rest = lines.pop()!;
      for (const l of lines) if (l.trim()) yield JSON.parse(l) as CorpusRecord;
    }
    if (rest.trim()) yield JSON.parse(rest) as CorpusRecord;
  } finally {
    fs.closeSync(fd);
  }
}
