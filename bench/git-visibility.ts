/**
 * The cost of git-aware memory's visibility rule (issue 26): ancestry from the git CLI, cached per HEAD.
 *
 *   node --import tsx bench/git-visibility.ts [--history 2000] [--branches 40] [--memories 10000] [--queries 100] [--bound N] [--heads 10] [--json FILE]
 *
 * A repository is generated with git fast-import: a main line of `history` commits, `branches` branches forked from
 * it at spread-out points with 3 commits each, half of them merged back with merge commits (the others unmerged).
 * `memories` memories of the project namespace are written through the Core, each recorded at a commit: 70% on main,
 * 30% on a branch commit (so ~`branches` × 3 + some main commits distinct pairs). Timed, in process through the Core:
 * - cold: the first full-text search (and list) from main's HEAD with an empty cache (a fresh Core over the store),
 *   with the git processes it ran;
 * - warm: the same search again (the answers cached for this HEAD), p50 / p95;
 * - base: the same search without a git context;
 * - followGit's sync check (issue 26: every read carrying a git context checks the memory branches bound to git branches
 *   once per HEAD): warm search p50 with `--bound` bound branches (following unmerged git branches) present vs none, and
 *   the first search after a HEAD change (a new commit on main) with and without them, `--heads` changes each.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import type { GitContext } from '../daemon/src/protocol/types';
import { Core } from '../daemon/src/server/core';
import { tempCore, tempDir } from '../test/helpers';
import { arg, fmt, now, summarize } from './stats';

const HISTORY = Number(arg('history', '2000'));
const BRANCHES = Number(arg('branches', '40'));
const MEMORIES = Number(arg('memories', '10000'));
const QUERIES = Number(arg('queries', '100'));
const COLD = 5;
const BOUND = Number(arg('bound', String(Math.floor(BRANCHES / 2))));
const HEADS = Number(arg('heads', '10'));
const jsonOut = arg('json', '');
const NS = 'project.bench';

const repo = tempDir('cairn-git-bench-');
const env = {
  ...process.env,
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'b',
  GIT_AUTHOR_EMAIL: 'b@example.com',
  GIT_COMMITTER_NAME: 'b',
  GIT_COMMITTER_EMAIL: 'b@example.com',
};
const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8', env, maxBuffer: 1 << 28 }).trim();

// --- the repository -----------------------------------------------------------------------------------------------
git('init', '-q', '-b', 'main');
const lines: string[] = [];
let mark = 0;
let t = 1_700_000_000;
const commitTo = (ref: string, from: number | null, merge: number | null, file: string): number => {
  const m = ++mark;
  const data = `${file} ${m}\n`;
  const msg = `c${m}`;
  lines.push(`commit ${ref}`, `mark :${m}`, `committer b <b@example.com> ${t++} +0000`, `data ${msg.length}`, msg);
  if (from !== null) lines.push(`from :${from}`);
  if (merge !== null) lines.push(`merge :${merge}`);
  lines.push(`M 100644 inline ${file}`, `data ${Buffer.byteLength(data)}`, data);
  return m;
};
const mainLine: number[] = [];
let prev: number | null = null;
for (let i = 0; i < HISTORY; i++) mainLine.push((prev = commitTo('refs/heads/main', prev, null, `main/${i % 200}.txt`)));
const branchCommits: { name: string; marks: number[] }[] = [];
for (let b = 0; b < BRANCHES; b++) {
  const at = mainLine[Math.floor(((b + 1) * HISTORY) / (BRANCHES + 2))];
  const marks: number[] = [];
  let p = at;
  for (let k = 0; k < 3; k++) marks.push((p = commitTo(`refs/heads/b${b}`, p, null, `b${b}/${k}.txt`)));
  branchCommits.push({ name: `b${b}`, marks });
}
for (let b = 0; b < BRANCHES; b += 2) prev = commitTo('refs/heads/main', prev, branchCommits[b].marks[2], `merges/${b}.txt`);
const marksFile = path.join(repo, '.git', 'marks');
execFileSync('git', ['fast-import', '--quiet', `--export-marks=${marksFile}`], { cwd: repo, input: lines.join('\n') + '\n', env });
git('checkout', '-q', 'main');
const sha = new Map(
  fs
    .readFileSync(marksFile, 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const [m, s] = l.split(' ');
      return [Number(m.slice(1)), s] as const;
    }),
);

// --- the store ----------------------------------------------------------------------------------------------------
const c = tempCore();
const rnd = (() => {
  let a = 26;
  return () => ((a = (a * 1103515245 + 12345) >>> 0) / 4294967296) as number;
})();
const WORDS = ['parser', 'cache', 'deploy', 'schema', 'router', 'index', 'token', 'queue', 'retry', 'config'];
const items = Array.from({ length: MEMORIES }, (_, i) => {
  let branch = 'main';
  let m = mainLine[Math.floor(rnd() * mainLine.length)];
  if (rnd() < 0.3) {
    const b = branchCommits[Math.floor(rnd() * BRANCHES)];
    branch = b.name;
    m = b.marks[Math.floor(rnd() * 3)];
  }
  return {
    namespace: NS,
    key: `k${i}`,
    value: `${WORDS[i % 10]} ${WORDS[(i * 7) % 10]} note ${i} about the ${WORDS[(i * 3) % 10]}`,
    git: { branch, commit: sha.get(m)! },
  };
});
(async () => {
  for (let i = 0; i < items.length; i += 500) await c.core.call(R.upsertBatch, { items: items.slice(i, i + 500) });
  c.store.catchUpFullText();
  const pairs = c.store.db.prepare('SELECT count(DISTINCT branch || commit_id) AS n FROM memory_git').get() as { n: number };
  const ctx: GitContext = { repo, head: git('rev-parse', 'HEAD'), branch: 'main', namespace: NS };
  const q = { query: 'parser cache', mode: 'fts' as const, limit: 10, scope: { root: NS, includeUser: false } };

  const cold: number[] = [];
  const coldList: number[] = [];
  let spawned = 0;
  let hidden = 0;
  for (let r = 0; r < COLD; r++) {
    const fresh = new Core(c.store);
    let t0 = now();
    await fresh.call(R.search, { ...q, git: ctx });
    cold.push(now() - t0);
    spawned = fresh.git.oracle.spawned;
    if (r === 0)
      console.log(
        'git wait by subcommand (ms, summed over parallel calls):',
        Object.fromEntries([...fresh.git.oracle.waited].map(([k, v]) => [k, Math.round(v)])),
      );
    const fresh2 = new Core(c.store);
    t0 = now();
    await fresh2.call(R.list, { scope: q.scope, limit: 1000, git: ctx });
    coldList.push(now() - t0);
    hidden = (await fresh2.git.hidden(ctx, q.scope))?.size ?? 0;
  }
  const warm: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    let t0 = now();
    await c.core.call(R.search, { ...q, git: ctx });
    if (i > 0) warm.push(now() - t0);
    t0 = now();
    await c.core.call(R.search, q);
    base.push(now() - t0);
  }
  // followGit's sync check: none bound, then BOUND memory branches following unmerged git branches (odd b<i>).
  const follow = async () => {
    const bindings = (
      c.store.db.prepare("SELECT count(*) AS n FROM branches WHERE status = 'open' AND git_branch IS NOT NULL").get() as {
        n: number;
      }
    ).n;
    let head = ctx;
    const warmS: number[] = [];
    for (let i = 0; i <= QUERIES; i++) {
      const t0 = now();
      await c.core.call(R.search, { ...q, git: head });
      if (i > 0) warmS.push(now() - t0);
    }
    // The check alone, as every read with a git context makes it (same HEAD: compares a state, no git process).
    const CHECKS = 2000;
    const t1 = now();
    for (let i = 0; i < CHECKS; i++) await c.core.git.onContext!(head);
    const checkUs = ((now() - t1) * 1000) / CHECKS;
    const first: number[] = [];
    const spawned0 = c.core.git.oracle.spawned;
    for (let h = 0; h < HEADS; h++) {
      git('commit', '-q', '--allow-empty', '-m', `head ${h}`);
      head = { ...ctx, head: git('rev-parse', 'HEAD') };
      const t0 = now();
      await c.core.call(R.search, { ...q, git: head });
      first.push(now() - t0);
    }
    return {
      bindings,
      checkUs,
      warm: summarize(warmS),
      firstAfterHeadChange: summarize(first),
      gitProcessesPerHeadChange: (c.core.git.oracle.spawned - spawned0) / HEADS,
    };
  };
  const unbound = await follow();
  for (let b = 1, n = 0; b < BRANCHES && n < BOUND; b += 2, n++)
    await c.core.call(R.branchCreate, { name: `follow-b${b}`, root: NS, gitBranch: `b${b}`, gitRepo: repo });
  const bound = await follow();
  const out = {
    history: HISTORY,
    branches: BRANCHES,
    memories: MEMORIES,
    distinctPairs: pairs.n,
    hiddenMemories: hidden,
    cold: summarize(cold),
    coldList: summarize(coldList),
    gitProcessesCold: spawned,
    warm: summarize(warm),
    base: summarize(base),
    followGit: { unbound, bound },
    loadavg: fs.readFileSync('/proc/loadavg', 'utf8').trim(),
  };
  console.log(
    `repo: ${HISTORY} commits on main, ${BRANCHES} branches (half merged); ${MEMORIES} memories on ${pairs.n} distinct (branch, commit) pairs, ${hidden} hidden from main\n` +
      `cold search (empty cache): p50 ${fmt(out.cold.p50)} ms, max ${fmt(Math.max(...cold))} ms, ${spawned} git processes\n` +
      `cold list: p50 ${fmt(out.coldList.p50)} ms\n` +
      `warm search (cached for this HEAD): p50 ${fmt(out.warm.p50)} / p95 ${fmt(out.warm.p95)} ms\n` +
      `same search without git: p50 ${fmt(out.base.p50)} / p95 ${fmt(out.base.p95)} ms\n` +
      [unbound, bound]
        .map(
          (f) =>
            `followGit, ${f.bindings} bound branches: per-read check ${fmt(f.checkUs)} µs; warm search p50 ${fmt(f.warm.p50)} / p95 ${fmt(f.warm.p95)} ms; first search after a HEAD change p50 ${fmt(f.firstAfterHeadChange.p50)} / p95 ${fmt(f.firstAfterHeadChange.p95)} ms (${fmt(f.gitProcessesPerHeadChange)} git processes per change)`,
        )
        .join('\n') +
      `\nload average: ${out.loadavg}`,
  );
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(out, null, 2));
  c.close();
  fs.rmSync(repo, { recursive: true, force: true });
})();
