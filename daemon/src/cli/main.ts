/**
 * The `cairn` command line. Every command talks to the daemon that serves the
 * store, starting it when none runs (see connect.ts); `--direct` opens the store
 * in-process instead (full-text only). `--json` prints the
 * protocol's own result objects for scripts; errors exit non-zero with the
 * error's code name and number.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { parseArgs } from 'node:util';
import { CairnError, ErrorCodes } from '../protocol/errors';
import { Notifications, Requests } from '../protocol/methods';
import { readEnv } from '../protocol/settings';
import type { Filter, RetentionRule, Scope, SearchMode, UpsertParams } from '../protocol/types';
import type { CairnClient } from '../client/socket-client';
import { projectNamespaceFor } from '../project';
import { VERSION } from '../version';
import { colourFor, paint } from './colour';
import { callWriteOnce, connect } from './connect';
import { errorLines } from './error-text';
import { printHistory, printMemories, printMemory, printSearch, printStatus } from './format';
import { commandHelp } from './help';
import { expandNamespace, missingRootWarning, otherProjectNote } from './project-namespace';
import { gitReadFor, gitWriteFor } from '../git/checkout';
import { countMemoryRecords, followReindex, type NotificationSource } from './progress';
import { nearest, unknownOption } from './suggest';
import { privateWriteStream, SecretTally } from './private-output';

export class UsageError extends Error {}

const USAGE = `cairn ${VERSION} — persistent memory for coding agents

Usage: cairn <command> [args] [--db FILE] [--socket PATH] [--json]

Commands:
  daemon [--stdio] [--socket PATH] [--model ID] [--model-path DIR] [--no-embeddings]
                                     run the memory daemon for the store
  add <namespace> <key> <value|->    create or update a memory (value "-" reads stdin; namespace "." is this
                                     folder's project namespace, the editor's "This project")
      [--kind K] [--tags a,b] [--importance N] [--confidence N] [--source S] [--anchor PATH[:START[-END]]]
      [--expires ISO] [--valid-from ISO] [--valid-to ISO] [--supersedes ID] [--if-version N]
      [--restore] [--force] [--proposed] [--reason TEXT]
  get <id> | <namespace> <key>       show one memory [--include-deleted]
  search <query...>                  ranked search [--root NS] [--namespace NS]... [--no-user]
      [--mode hybrid|fts|vector] [--limit N] [--filter JSON] [--explain]
  list                               list memories [--root NS] [--namespace NS]... [--filter JSON] [--limit N] [--all]
  delete|restore|forget|purge <id> | <namespace> <key>  [--reason TEXT]
  erase <id> | <namespace> <key> | --root NS  [--reason TEXT] [--receipt FILE]
                                     remove with history, index rows and links, overwrite the freed space,
                                     truncate the WAL; prints (or writes) a signed erasure receipt
  verify-receipt <FILE|->            check an erasure receipt's signature and that this store's key signed it
      [--key BASE64|PEM|FILE]        (trust a key obtained elsewhere instead; --public-key is the same)
  keys public                        the public key that signs this store's erasure receipts (base64 Ed25519)
  history <id> | <namespace> <key>   every recorded version
  link <from-id> <to-id> <type>      typed edge (relates_to, contradicts, depends_on, derived_from, supports, refines)
  unlink <from-id> <to-id> <type>
  neighbors <id>                     linked memories
  namespaces [list|rename FROM TO|delete PATH]
  export [FILE]                      JSON Lines (stdout without FILE) [--root NS] [--no-history]
  import <FILE|->                    JSON Lines produced by export
  backup <FILE> [--force]            online, consistent copy of the store (SQLite backup API, with progress),
                                     plus FILE.keys; works while the daemon serves
  restore --from <FILE>              verify a backup (integrity, schema) and replace the store with it; refuses while
                                     a daemon serves the store; keeps the old one as <store>.pre-restore-<time>
  compact                            rewrite the store (SQLite VACUUM) while no daemon serves it: its free pages go
                                     back to the file system, and a store from before incremental auto-vacuum gives
                                     them back from then on (the daemon's sweep)
  status                             store, index and embedding status (never starts a daemon)
  sweep                              expire memories past expiresAt, purge deleted namespaces, apply retention
  retention [list]                   retention rules per namespace root (enforced by the daemon's sweep)
  retention set <ROOT> [--max-versions N] [--max-age DAYS] [--max-ttl DAYS]
                     [--events-max-age DAYS] [--events-source SOURCE=DAYS]... [--events-kind KIND=DAYS]...
                                     (events: by when they happened; the shortest limit that applies wins)
  retention clear <ROOT>
  audit export [FILE] [--from ISO] [--to ISO] [--root NS] [--no-content]
                                     history (who did what, when, why) as JSON Lines for a time range
  config --history-cap N|none        per-memory history cap (default: keep all)
  wait <position> [--timeout MS]     wait until the vector index includes a change
  rebuild-index [--model ID]         re-embed everything (optionally with another model)
  mcp [--root NS] [--task ID]        stdio MCP server backed by the daemon (docs/mcp.md)
  log <text...|->                    append an event to an episode of this project (hooks, CI; only while
      [--kind K] [--episode ID] [--title T] [--source S] [--task ID] [--branch B] [--commit SHA] [--at ISO] [--seq N]
      [--file PATH[:START[-END]]] [--command CMD] [--exit-code N] [--tool NAME]   cairn.episodes.capture is on)
  episodes list [--root NS] [--source S] [--task ID] [--branch B] [--since ISO] [--before ISO] [--limit N]
  episodes show <id>                 an episode and its events
  episodes search <query...>         search events ("last week", "in May" read as time) [--root NS] [--kind K]
      [--source S] [--since ISO] [--before ISO] [--mode M] [--limit N] [--expand N]
  episodes find <query...>           the sessions a query is about, best first, each with its best events [--root NS]
      [--kind K] [--source S] [--since ISO] [--before ISO] [--mode M] [--limit N]
  episodes import <FILE|->           JSON Lines transcripts: generic (docs/episodes.md) or Claude Code sessions [--root NS]
  episodes erase <id>                remove an episode, its events, index rows and vectors for good [--reason TEXT]
                                     [--receipt FILE]; prints (or writes) a signed erasure receipt
  episodes removals [--root NS]      what erase and retention removed from the event log (ids and counts)
  branch create NAME ROOT [--from B] | list [--all] | diff NAME | merge NAME [--take NS/KEY=branch|base]... | discard NAME
                                     memory branches (docs/branches.md); add, get, search, list, delete, history take --branch NAME
  branch merged GIT-BRANCH [--undo]  mark a git branch merged: its memories show on every git branch (git-aware memory)
  branch sync                    merge the memory branches whose followed git branch this checkout shows merged
  team init|status                   create/migrate the team database schema; show its server, pgvector and schema
  team grant ROLE ROOT read|write|admin   let a database role use a namespace root (docs/team.md)
  team audit [FILE] [--from ISO] [--to ISO] [--root NS] [--no-content]
                                     history of the team roots you administer, as JSON Lines (admins only)
  team verify-receipt FILE           ask the team database whether it signed an erasure receipt of team memory

Global: --db FILE (or CAIRN_DB), --socket PATH, --direct (open the store in-process: no daemon, full-text search only),
        --actor NAME, --json. Without --direct the CLI uses the store's daemon, starting it when none runs.
        A namespace "." (or ".sub") is this folder's project namespace (cairn status names it).
        In a git repository, writes to it record the branch and commit, and get, search and list hide memories
        written on git branches not merged into HEAD (CAIRN_GIT_VISIBILITY=0 turns both off; CAIRN_GIT_BASE: base).
        Colour on a terminal; NO_COLOR=1 turns it off, FORCE_COLOR=1 on. cairn <command> --help: one command's help.
Team memory: --team-url URL (or CAIRN_TEAM_URL), --team-roots a,b (or CAIRN_TEAM_ROOTS) for daemon and team
Exit codes: 0 ok, 1 Cairn error (code shown), 2 usage error.`;

const OPTIONS = {
  db: { type: 'string' },
  socket: { type: 'string' },
  json: { type: 'boolean' },
  direct: { type: 'boolean' },
  actor: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  stdio: { type: 'boolean' },
  model: { type: 'string' },
  'model-path': { type: 'string' },
  'no-embeddings': { type: 'boolean' },
  kind: { type: 'string' },
  tags: { type: 'string' },
  importance: { type: 'string' },
  confidence: { type: 'string' },
  source: { type: 'string' },
  anchor: { type: 'string', multiple: true },
  expires: { type: 'string' },
  'valid-from': { type: 'string' },
  'valid-to': { type: 'string' },
  supersedes: { type: 'string' },
  'if-version': { type: 'string' },
  restore: { type: 'boolean' },
  force: { type: 'boolean' },
  proposed: { type: 'boolean' },
  reason: { type: 'string' },
  'include-deleted': { type: 'boolean' },
  root: { type: 'string' },
  namespace: { type: 'string', multiple: true },
  'no-user': { type: 'boolean' },
  mode: { type: 'string' },
  limit: { type: 'string' },
  filter: { type: 'string' },
  explain: { type: 'boolean' },
  all: { type: 'boolean' },
  'no-history': { type: 'boolean' },
  'history-cap': { type: 'string' },
  timeout: { type: 'string' },
  receipt: { type: 'string' },
  'public-key': { type: 'string' },
  key: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  'max-versions': { type: 'string' },
  'max-age': { type: 'string' },
  'max-ttl': { type: 'string' },
  'events-max-age': { type: 'string' },
  'events-source': { type: 'string', multiple: true },
  'events-kind': { type: 'string', multiple: true },
  'no-content': { type: 'boolean' },
  'team-url': { type: 'string' },
  episode: { type: 'string' },
  title: { type: 'string' },
  task: { type: 'string' },
  branch: { type: 'string' },
  commit: { type: 'string' },
  at: { type: 'string' },
  seq: { type: 'string' },
  file: { type: 'string' },
  command: { type: 'string' },
  'exit-code': { type: 'string' },
  tool: { type: 'string' },
  since: { type: 'string' },
  before: { type: 'string' },
  expand: { type: 'string' },
  'team-roots': { type: 'string' },
  take: { type: 'string', multiple: true },
  undo: { type: 'boolean' },
} as const;

type Opts = ReturnType<typeof parse>['values'];

function parse(argv: string[]) {
  const unknown = unknownOption(argv, Object.keys(OPTIONS), (n) => OPTIONS[n as keyof typeof OPTIONS].type === 'string');
  if (unknown) throw new UsageError(`unknown option ${unknown.option}${unknown.near ? `; did you mean ${unknown.near}?` : ''}`);
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

function num(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new UsageError(`--${name} must be a number, got ${JSON.stringify(v)}`);
  return n;
}

/** `cairn retention set`'s events limits: --events-max-age DAYS, --events-source SOURCE=DAYS, --events-kind KIND=DAYS. */
function eventLimits(
  maxAge: string | undefined,
  sources: string[] | undefined,
  kinds: string[] | undefined,
): { events?: RetentionRule['events'] } {
  const pairs = (list: string[] | undefined, name: string): Record<string, number> | undefined => {
    if (!list?.length) return undefined;
    const out: Record<string, number> = {};
    for (const item of list) {
      const at = item.lastIndexOf('=');
      if (at <= 0) throw new UsageError(`--${name} takes NAME=DAYS, got ${JSON.stringify(item)}`);
      out[item.slice(0, at)] = num(item.slice(at + 1), name)!;
    }
    return out;
  };
  const events = {
    ...(maxAge !== undefined ? { maxAgeDays: num(maxAge, 'events-max-age') } : {}),
    ...(sources?.length ? { bySource: pairs(sources, 'events-source') } : {}),
    ...(kinds?.length ? { byKind: pairs(kinds, 'events-kind') } : {}),
  };
  return Object.keys(events).length ? { events } : {};
}

function jsonArg<T>(v: string | undefined, name: string): T | undefined {
  if (v === undefined) return undefined;
  try {
    return JSON.parse(v) as T;
  } catch (e) {
    throw new UsageError(`--${name} is not valid JSON: ${(e as Error).message}`);
  }
}

function scopeOf(o: Opts): Scope | undefined {
  if (o.root === undefined && !o.namespace && !o['no-user']) return undefined;
  return {
    ...(o.root !== undefined ? { root: expandNamespace(o.root) } : {}),
    ...(o.namespace ? { namespaces: o.namespace.map((n) => expandNamespace(n)) } : {}),
    ...(o['no-user'] ? { includeUser: false } : {}),
  };
}

/** `<id>` or `<namespace> <key>` */
function target(pos: string[], _o: Opts): { id: string } | { namespace: string; key: string } {
  if (pos.length === 1) return { id: pos[0] };
  if (pos.length === 2) return { namespace: expandNamespace(pos[0]), key: pos[1] };
  throw new UsageError('expected <id> or <namespace> <key>');
}

export function parseAnchor(spec: string): NonNullable<UpsertParams['anchors']>[number] {
  const m = /^(.*?)(?::(\d+)(?:-(\d+))?)?$/.exec(spec)!;
  return { path: m[1], ...(m[2] ? { startLine: Number(m[2]) } : {}), ...(m[3] ? { endLine: Number(m[3]) } : {}) };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const out = (s: string) => process.stdout.write(s.endsWith('\n') ? s : s + '\n');

/** Every command the usage text lists (`delete|restore|…` counts each), for "did you mean". */
export function usageCommands(usage: string = USAGE): string[] {
  const names = new Set<string>(['help']);
  for (const m of usage.matchAll(/^ {2}([a-z][a-z|-]*)/gm)) for (const n of m[1].split('|')) names.add(n);
  return [...names];
}

export async function run(argv: string[]): Promise<number> {
  const { values: o, positionals } = parse(argv);
  if (o.version) {
    out(VERSION);
    return 0;
  }
  const [cmd, ...pos] = positionals;
  const helpFor = cmd === 'help' ? pos[0] : o.help ? cmd : undefined;
  if (helpFor !== undefined) {
    const h = commandHelp(USAGE, helpFor);
    if (h === undefined) throw unknownCommand(helpFor);
    out(h);
    return 0;
  }
  if (!cmd || o.help || cmd === 'help') {
    out(USAGE);
    return cmd || o.help ? 0 : 2;
  }
  if (cmd === 'daemon') {
    const { runDaemon } = await import('./daemon-command');
    return runDaemon({
      db: o.db,
      socket: o.socket,
      stdio: !!o.stdio,
      model: o.model,
      modelPath: o['model-path'],
      embeddings: !o['no-embeddings'],
      teamUrl: o['team-url'],
      teamRoots: o['team-roots'],
    });
  }
  if (cmd === 'team') {
    const { runTeam } = await import('./team-command');
    return runTeam(
      pos,
      { url: o['team-url'], roots: o['team-roots'], json: !!o.json, from: o.from, to: o.to, root: o.root, noContent: !!o['no-content'] },
      out,
    );
  }
  if (cmd === 'mcp') {
    const { runMcp } = await import('../mcp/server');
    return runMcp({
      db: o.db,
      socket: o.socket,
      root: o.root,
      task: o.task,
      daemonArgs: o['no-embeddings'] ? ['--no-embeddings'] : undefined,
    });
  }
  if (cmd === 'verify-receipt') return verifyReceiptCommand(pos, o);
  if (cmd === 'keys') {
    const { keysCommand, KeysUsageError } = await import('./keys-command');
    return keysCommand(pos, o, out).catch((e: unknown) => {
      throw e instanceof KeysUsageError ? new UsageError(e.message) : e;
    });
  }
  if (cmd === 'restore' && o.from !== undefined) {
    if (pos.length > 0)
      throw new UsageError('usage: cairn restore --from <backup FILE> (or cairn restore <id> | <namespace> <key> for a deleted memory)');
    return restoreCommand(o.from, o);
  }
  if (cmd === 'compact') {
    if (pos.length > 0) throw new UsageError('usage: cairn compact [--db PATH] [--json]');
    return compactCommand(o);
  }
  const known = [
    'audit',
    'retention',
    'backup',
    'erase',
    'add',
    'get',
    'search',
    'list',
    'delete',
    'restore',
    'forget',
    'purge',
    'history',
    'link',
    'unlink',
    'neighbors',
    'namespaces',
    'export',
    'import',
    'status',
    'sweep',
    'config',
    'wait',
    'rebuild-index',
    'log',
    'episodes',
    'branch',
  ];
  if (!known.includes(cmd)) throw unknownCommand(cmd);
  if (cmd === 'log' && !(await import('./episodes-command')).captureOn()) {
    // Checked before connecting: with capture off, a hook calling `cairn log` starts no daemon and writes nothing.
    process.stderr.write('cairn: episode capture is off (set cairn.episodes.capture, or CAIRN_EPISODES_CAPTURE=1): nothing was recorded\n');
    return 0;
  }
  const open = () =>
    connect({
      db: o.db,
      socket: o.socket,
      direct: o.direct,
      noStart: cmd === 'status', // asking for status has no side effects: it never starts a daemon
      daemonArgs: o['no-embeddings'] ? ['--no-embeddings'] : undefined,
      log: (m) => process.stderr.write(`cairn: ${m}\n`),
    });
  const client = await open();
  try {
    return await command(client, cmd, pos, o, open);
  } finally {
    await client.close();
  }
}

function unknownCommand(cmd: string): UsageError {
  const near = nearest(cmd, usageCommands());
  return new UsageError(`unknown command ${JSON.stringify(cmd)}${near ? `; did you mean ${near}?` : ''} (cairn --help lists the commands)`);
}

async function command(c: CairnClient, cmd: string, pos: string[], o: Opts, reconnect: () => Promise<CairnClient>): Promise<number> {
  const note = (m: string) => process.stderr.write(`cairn: ${m}\n`);
  const actor = o.actor ?? readEnv('CAIRN_ACTOR') ?? 'user';
  const json = !!o.json;
  const emit = (value: unknown, human: () => void) => (json ? out(JSON.stringify(value, null, 2)) : human());
  const p = paint(!json && colourFor(process.stdout));
  const warnIfNoRoot = async () => {
    const scope = scopeOf(o);
    if (!scope?.root) return;
    const w = await missingRootWarning(c, scope.root, scope.includeUser !== false);
    if (w) process.stderr.write(`${paint(colourFor(process.stderr)).yellow('warning')}: ${w}\n`);
  };
  if (cmd === 'log' || cmd === 'episodes') {
    const { episodesCommand, EpisodeUsageError, logCommand, readFileInput } = await import('./episodes-command');
    const eo = {
      json,
      actor,
      cwd: process.cwd(),
      root: o.root,
      episode: o.episode,
      title: o.title,
      source: o.source,
      kind: o.kind,
      task: o.task,
      branch: o.branch,
      commit: o.commit,
      at: o.at,
      seq: num(o.seq, 'seq'),
      file: o.file,
      command: o.command,
      exitCode: num(o['exit-code'], 'exit-code'),
      tool: o.tool,
      since: o.since,
      before: o.before,
      limit: num(o.limit, 'limit'),
      mode: o.mode as SearchMode | undefined,
      expand: num(o.expand, 'expand'),
      reason: o.reason,
      receipt: o.receipt,
    };
    try {
      if (cmd === 'episodes') return await episodesCommand(c, pos, eo, out, (f) => readFileInput(f, readStdin));
      if (pos.length === 0) throw new UsageError('usage: cairn log <text...|->');
      return await logCommand(c, pos.length === 1 && pos[0] === '-' ? await readStdin() : pos.join(' '), eo, out, note);
    } catch (e) {
      throw e instanceof EpisodeUsageError ? new UsageError(e.message) : e;
    }
  }
  const onBranch = o.branch !== undefined ? { branch: o.branch } : {};
  // Git-aware memory (docs/protocol.md#git-aware-memory): reads carry this checkout, project writes record it.
  const gitRead = () => {
    const g = o.branch === undefined ? gitReadFor() : undefined;
    return g ? { git: g } : {};
  };
  switch (cmd) {
    case 'branch': {
      const { runBranch } = await import('./branch-command');
      return runBranch(c, pos, { json, actor, all: o.all, from: o.from, take: o.take, reason: o.reason, undo: o.undo }, out);
    }
    case 'add': {
      if (pos.length !== 3) throw new UsageError('usage: cairn add <namespace> <key> <value|->');
      const value = pos[2] === '-' ? await readStdin() : pos[2];
      const namespace = expandNamespace(pos[0]);
      const gitWrite = o.branch === undefined ? gitWriteFor(namespace) : undefined;
      const r = await callWriteOnce(
        c,
        reconnect,
        Requests.upsert,
        {
          namespace,
          key: pos[1],
          value,
          actor,
          ...(gitWrite ? { git: gitWrite } : {}),
          waitForDuplicates: true, // one interactive write: show its possible duplicates
          ...(o.kind ? { kind: o.kind as never } : {}),
          ...(o.tags !== undefined
            ? {
                tags: o.tags
                  .split(',')
                  .map((t) => t.trim())
                  .filter(Boolean),
              }
            : {}),
          ...(o.importance !== undefined ? { importance: num(o.importance, 'importance') } : {}),
          ...(o.confidence !== undefined ? { confidence: num(o.confidence, 'confidence') } : {}),
          ...(o.source ? { source: o.source } : {}),
          ...(o.anchor ? { anchors: o.anchor.map(parseAnchor) } : {}),
          ...(o.expires !== undefined ? { expiresAt: o.expires } : {}),
          ...(o['valid-from'] !== undefined ? { validFrom: o['valid-from'] } : {}),
          ...(o['valid-to'] !== undefined ? { validTo: o['valid-to'] } : {}),
          ...(o.supersedes ? { supersedes: o.supersedes } : {}),
          ...(o['if-version'] !== undefined ? { ifVersion: num(o['if-version'], 'if-version') } : {}),
          ...(o.restore ? { restore: true } : {}),
          ...(o.force ? { force: true } : {}),
          ...(o.proposed ? { status: 'proposed' as const } : {}),
          ...(o.reason ? { reason: o.reason } : {}),
          ...onBranch,
        },
        note,
      );
      emit(r, () => {
        out(`${r.created ? 'created' : r.changed ? 'updated' : 'unchanged'} ${r.memory.namespace}/${r.memory.key} v${r.memory.version}`);
        if (r.replayed) out('  (the connection closed before the first reply; this is its recorded result, applied once)');
        for (const d of r.possibleDuplicates ?? [])
          out(`  possible duplicate: ${d.namespace}/${d.key} (${d.id}) similarity ${d.similarity.toFixed(2)}`);
        if (r.duplicatesSkipped) out(`  duplicate check skipped: ${r.duplicatesSkipped}`);
        const elsewhere = r.created ? otherProjectNote(r.memory.namespace) : undefined;
        if (elsewhere) process.stderr.write(`${paint(colourFor(process.stderr)).dim('note')}: ${elsewhere}\n`);
      });
      return 0;
    }
    case 'get': {
      const r = await c.call(Requests.get, {
        ...target(pos, o),
        ...(o['include-deleted'] ? { includeDeleted: true } : {}),
        ...onBranch,
        ...gitRead(),
      });
      emit(r, () => printMemory(out, r));
      return 0;
    }
    case 'search': {
      if (pos.length === 0) throw new UsageError('usage: cairn search <query...>');
      const r = await c.call(Requests.search, {
        query: pos.join(' '),
        ...(scopeOf(o) ? { scope: scopeOf(o) } : {}),
        ...(o.mode ? { mode: o.mode as SearchMode } : {}),
        ...(o.limit ? { limit: num(o.limit, 'limit') } : {}),
        ...(o.filter ? { filter: jsonArg<Filter>(o.filter, 'filter') } : {}),
        ...(o.explain ? { explain: true } : {}),
        ...onBranch,
        ...gitRead(),
      });
      emit(r, () => printSearch(out, r, p));
      await warnIfNoRoot();
      return 0;
    }
    case 'list': {
      const items: import('../protocol/types').Memory[] = [];
      let cursor: string | undefined;
      const limit = num(o.limit, 'limit') ?? (o.all ? undefined : 50);
      const reader = gitRead();
      do {
        const page = await c.call(Requests.list, {
          ...(scopeOf(o) ? { scope: scopeOf(o) } : {}),
          ...(o.filter ? { filter: jsonArg<Filter>(o.filter, 'filter') } : {}),
          limit: Math.min(limit ?? 1000, 1000),
          ...(cursor ? { cursor } : {}),
          ...onBranch,
          ...reader,
        });
        items.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor && (limit === undefined || items.length < limit));
      emit({ items }, () => printMemories(out, items));
      await warnIfNoRoot();
      return 0;
    }
    case 'delete':
    case 'restore':
    case 'forget':
    case 'purge': {
      const def = { delete: Requests.delete, restore: Requests.restore, forget: Requests.forget, purge: Requests.purge }[cmd];
      if (o.branch !== undefined && cmd !== 'delete')
        throw new UsageError(`cairn ${cmd} has no --branch (only add, get, search, list, delete, history)`);
      const r = await callWriteOnce(
        c,
        reconnect,
        def as typeof Requests.delete,
        { ...target(pos, o), actor, ...(o.reason ? { reason: o.reason } : {}), ...onBranch },
        note,
      );
      emit(r, () =>
        out(
          `${cmd === 'forget' ? 'forgot' : cmd + 'd'} ${'memory' in r ? `${r.memory.namespace}/${r.memory.key}` : (r as { id: string }).id}`,
        ),
      );
      return 0;
    }
    case 'erase': {
      if (pos.length === 0 && o.root === undefined) throw new UsageError('usage: cairn erase <id> | <namespace> <key> | --root NS');
      if (pos.length > 0 && o.root !== undefined) throw new UsageError('give either <id>, <namespace> <key>, or --root NS');
      const r = await c.call(Requests.erase, {
        ...(o.root !== undefined ? { root: expandNamespace(o.root) } : target(pos, o)),
        actor,
        ...(o.reason ? { reason: o.reason } : {}),
      });
      const receiptText = JSON.stringify(r.receipt, null, 2) + '\n';
      if (o.receipt) fs.writeFileSync(o.receipt, receiptText, { mode: 0o600 });
      emit(r, () => {
        out(
          `erased ${r.erased} memor${r.erased === 1 ? 'y' : 'ies'} (${r.receipt.removed.history} history rows, ${r.receipt.removed.links} links, ${r.receipt.removed.vectors} vectors, ${r.receipt.removed.namespaces} namespaces)`,
        );
        if ('walTruncated' in r.receipt && !r.receipt.walTruncated)
          out('warning: another connection held an old snapshot, so the WAL was not truncated; erase again once it is gone');
        if ('vacuumPending' in r.receipt)
          out(
            'note: team memory: the database frees the erased row versions at its next VACUUM; verify the receipt with `cairn team verify-receipt`',
          );
        if (o.receipt) out(`receipt ${r.receipt.id} written to ${o.receipt}`);
        else out(receiptText.trimEnd());
      });
      return 0;
    }
    case 'history': {
      const r = await c.call(Requests.history, { ...target(pos, o), ...(o.limit ? { limit: num(o.limit, 'limit') } : {}), ...onBranch });
      emit(r, () => printHistory(out, r));
      return 0;
    }
    case 'link':
    case 'unlink': {
      if (pos.length !== 3) throw new UsageError(`usage: cairn ${cmd} <from-id> <to-id> <type>`);
      const p = { from: pos[0], to: pos[1], type: pos[2] as never, actor };
      const r = cmd === 'link' ? await c.call(Requests.link, p) : await c.call(Requests.unlink, p);
      emit(r, () =>
        out(
          `${cmd === 'link' ? ('created' in r && r.created ? 'linked' : 'already linked') : 'unlinked'} ${pos[0]} -${pos[2]}-> ${pos[1]}`,
        ),
      );
      return 0;
    }
    case 'neighbors': {
      if (pos.length !== 1) throw new UsageError('usage: cairn neighbors <id>');
      const r = await c.call(Requests.neighbors, { id: pos[0] });
      emit(r, () => {
        if (r.neighbors.length === 0) out('no linked memories');
        for (const n of r.neighbors)
          out(`${n.direction === 'out' ? '->' : '<-'} ${n.type.padEnd(13)} ${n.memory.namespace}/${n.memory.key} (${n.memory.id})`);
      });
      return 0;
    }
    case 'namespaces': {
      const [sub = 'list', ...rest] = pos;
      if (sub === 'list') {
        const r = await c.call(Requests.namespacesList, o.root ? { root: expandNamespace(o.root) } : {});
        emit(r, () => {
          if (r.namespaces.length === 0) out('no namespaces');
          for (const n of r.namespaces) out(`${n.path.padEnd(40)} ${String(n.memoryCount).padStart(6)} memories`);
        });
      } else if (sub === 'rename' && rest.length === 2) {
        const r = await c.call(Requests.namespacesRename, { from: rest[0], to: rest[1], actor });
        emit(r, () => out(`renamed ${r.renamed} namespace(s)`));
      } else if (sub === 'delete' && rest.length === 1) {
        const r = await c.call(Requests.namespacesDelete, { path: rest[0], actor, ...(o.reason ? { reason: o.reason } : {}) });
        emit(r, () => out(`deleted ${r.deleted} namespace(s) holding ${r.memories} memories (purged in the background)`));
      } else throw new UsageError('usage: cairn namespaces [list | rename FROM TO | delete PATH]');
      return 0;
    }
    case 'export': {
      // Paged from one snapshot and written as it comes, so a store of any size exports in bounded memory.
      const toFile = pos[0] !== undefined && pos[0] !== '-';
      const sink = toFile ? privateWriteStream(pos[0]) : process.stdout;
      const write = (text: string) => (sink.write(text) ? Promise.resolve() : new Promise<void>((r) => sink.once('drain', () => r())));
      const secrets = new SecretTally();
      let cursor: string | undefined;
      let records = 0;
      do {
        const page = await c.call(
          Requests.exportPage,
          cursor ? { cursor } : { ...(scopeOf(o) ? { scope: scopeOf(o) } : {}), ...(o['no-history'] ? { includeHistory: false } : {}) },
        );
        if (page.records.length) await write(page.records.map((x) => JSON.stringify(x)).join('\n') + '\n');
        for (const x of page.records) secrets.record(x);
        records += page.records.length;
        cursor = page.nextCursor ?? undefined;
        if (toFile && !json) process.stderr.write(`\rexported ${page.progress.memories}/${page.progress.total} memories…`);
      } while (cursor);
      if (toFile) {
        await new Promise<void>((resolve, reject) => (sink as fs.WriteStream).end((e?: Error | null) => (e ? reject(e) : resolve())));
        process.stderr.write(`${json ? '' : '\n'}exported ${records} records to ${pos[0]}\n`);
      }
      const note = secrets.note(toFile ? pos[0] : 'the export');
      if (note) process.stderr.write(note + '\n');
      return 0;
    }
    case 'backup': {
      if (pos.length !== 1) throw new UsageError('usage: cairn backup <FILE> [--force]');
      const file = path.resolve(pos[0]);
      const progress = !json && process.stderr.isTTY !== false;
      if ('onNotification' in c && progress) {
        (
          c as unknown as { onNotification: (d: typeof Notifications.progress, f: (p: { done: number; total: number }) => void) => void }
        ).onNotification(Notifications.progress, (p) => process.stderr.write(`\rbackup: ${p.done}/${p.total} pages…`));
      }
      const r = await c.call(Requests.backup, { path: file, ...(o.force ? { overwrite: true } : {}) });
      if (progress) process.stderr.write('\n');
      emit(r, () =>
        out(
          `backed up ${r.pages} pages (${r.bytes} bytes, schema v${r.schemaVersion}) to ${r.path} in ${r.ms} ms${r.keys ? `; keys in ${r.keys}` : ''}`,
        ),
      );
      return 0;
    }
    case 'retention': {
      const [sub = 'list', given, ...extra] = pos;
      const root = given === undefined ? undefined : expandNamespace(given);
      if (extra.length) throw new UsageError('usage: cairn retention [list | set ROOT ... | clear ROOT]');
      let r;
      if (sub === 'list' && root === undefined) r = await c.call(Requests.retention, {});
      else if (sub === 'set' && root !== undefined) {
        r = await c.call(Requests.retention, {
          set: {
            root,
            ...(o['max-versions'] !== undefined ? { maxVersions: num(o['max-versions'], 'max-versions') } : {}),
            ...(o['max-age'] !== undefined ? { maxAgeDays: num(o['max-age'], 'max-age') } : {}),
            ...(o['max-ttl'] !== undefined ? { maxTtlDays: num(o['max-ttl'], 'max-ttl') } : {}),
            ...eventLimits(o['events-max-age'], o['events-source'], o['events-kind']),
          },
        });
      } else if (sub === 'clear' && root !== undefined) r = await c.call(Requests.retention, { clear: root });
      else
        throw new UsageError(
          'usage: cairn retention [list | set ROOT [--max-versions N] [--max-age DAYS] [--max-ttl DAYS] [--events-max-age DAYS] [--events-source SOURCE=DAYS]... [--events-kind KIND=DAYS]... | clear ROOT]',
        );
      const rules = r.rules;
      emit(r, () => {
        if (rules.length === 0) out('no retention rules (everything is kept)');
        for (const x of rules) {
          const parts = [
            x.maxVersions !== undefined ? `max ${x.maxVersions} versions` : '',
            x.maxAgeDays !== undefined ? `max age ${x.maxAgeDays} days` : '',
            x.maxTtlDays !== undefined ? `max lifetime ${x.maxTtlDays} days` : '',
            x.events?.maxAgeDays !== undefined ? `events ${x.events.maxAgeDays} days` : '',
            ...Object.entries(x.events?.bySource ?? {}).map(([s, d]) => `source ${s} events ${d} days`),
            ...Object.entries(x.events?.byKind ?? {}).map(([k, d]) => `${k} events ${d} days`),
          ].filter(Boolean);
          out(`${x.root.padEnd(30)} ${parts.join(', ')} (since ${x.setAt})`);
        }
      });
      return 0;
    }
    case 'audit': {
      const [sub, file, ...extra] = pos;
      if (sub !== 'export' || extra.length)
        throw new UsageError('usage: cairn audit export [FILE] [--from ISO] [--to ISO] [--root NS] [--no-content]');
      const toFile = file !== undefined && file !== '-';
      const sink = toFile ? privateWriteStream(file) : process.stdout;
      const write = (text: string) => (sink.write(text) ? Promise.resolve() : new Promise<void>((r) => sink.once('drain', () => r())));
      const secrets = new SecretTally();
      let cursor: string | undefined;
      let n = 0;
      do {
        const page = await c.call(Requests.audit, {
          ...(o.from !== undefined ? { from: o.from } : {}),
          ...(o.to !== undefined ? { to: o.to } : {}),
          ...(o.root !== undefined ? { scope: { root: o.root, includeUser: false } } : {}),
          ...(o['no-content'] ? { content: false } : {}),
          ...(cursor ? { cursor } : {}),
        });
        if (page.entries.length) await write(page.entries.map((e) => JSON.stringify(e)).join('\n') + '\n');
        for (const e of page.entries) secrets.entry(e);
        n += page.entries.length;
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      if (toFile) {
        await new Promise<void>((resolve, reject) => (sink as fs.WriteStream).end((e?: Error | null) => (e ? reject(e) : resolve())));
        process.stderr.write(`wrote ${n} history entries to ${file}\n`);
      }
      const note = secrets.note(toFile ? file : 'the audit export');
      if (note) process.stderr.write(note + '\n');
      return 0;
    }
    case 'import': {
      if (pos.length !== 1) throw new UsageError('usage: cairn import <FILE|->');
      // A file is counted first (one quick pass) so that progress says N/total; stdin can only be counted as it comes.
      const expected = !json && pos[0] !== '-' ? await countMemoryRecords(pos[0]) : undefined;
      const input = pos[0] === '-' ? process.stdin : fs.createReadStream(pos[0]);
      const rl = readline.createInterface({ input, crlfDelay: Infinity });
      const totals = { memories: 0, history: 0, links: 0, skipped: 0, position: 0, episodes: 0, events: 0, branches: 0, branchRows: 0 };
      let batch: unknown[] = [];
      let batchBytes = 0;
      let lineNo = 0;
      const flush = async () => {
        if (batch.length === 0) return;
        const r = await c.call(Requests.importRecords, { records: batch, actor });
        for (const k of ['memories', 'history', 'links', 'skipped', 'episodes', 'events', 'branches', 'branchRows'] as const)
          totals[k] += r[k] ?? 0;
        totals.position = r.position;
        batch = [];
        batchBytes = 0;
        if (!json) process.stderr.write(`\rimported ${totals.memories}${expected !== undefined ? `/${expected}` : ''} memories…`);
      };
      for await (const line of rl) {
        lineNo++;
        if (!line.trim()) continue;
        let rec: { type?: unknown };
        try {
          rec = JSON.parse(line);
        } catch (e) {
          throw new CairnError('InvalidParams', `line ${lineNo} is not JSON: ${(e as Error).message}`, { field: `line ${lineNo}` });
        }
        // Prefer cutting batches before a memory rather than inside its history (exports are memory-major);
        // the daemon remembers what this import brought in, so a cut inside a long history is still right.
        if ((batch.length >= 1000 && rec?.type !== 'history') || batch.length >= 5000 || batchBytes > 8 * 1024 * 1024) await flush();
        batch.push(rec);
        batchBytes += line.length;
      }
      await flush();
      if (!json) process.stderr.write('\n');
      emit(totals, () =>
        out(
          `imported ${totals.memories} memories, ${totals.history} history entries, ${totals.links} links, ${totals.episodes} episodes, ${totals.events} events, ${totals.branches} branches with ${totals.branchRows} rows; skipped ${totals.skipped}`,
        ),
      );
      return 0;
    }
    case 'status': {
      const r = await c.call(Requests.status, {});
      const project = { ...projectNamespaceFor(process.cwd()), folder: process.cwd() };
      emit({ ...r, via: c.mode, project }, () => printStatus(out, r, c.mode, project));
      return 0;
    }
    case 'sweep': {
      const r = await c.call(Requests.sweep, {});
      emit(r, () => {
        out(`expired ${r.expired}, purged ${r.purged}`);
        const k = r.retention;
        if (k)
          out(
            `retention: removed ${k.removedVersions} past versions, purged ${k.purged} long-deleted memories, capped the lifetime of ${k.ttlCapped}, removed ${k.removedEvents ?? 0} events`,
          );
        for (const a of k?.eventActions ?? []) out(`  ${a.root}: removed ${a.count} events of episode ${a.episodeId}`);
        for (const a of k?.actions ?? [])
          out(
            `  ${a.root}: ${a.action === 'versions' ? `removed ${a.count} past versions of` : a.action === 'purge' ? 'purged' : 'set an expiry on'} ${a.memoryId}`,
          );
      });
      return 0;
    }
    case 'config': {
      if (o['history-cap'] === undefined) throw new UsageError('usage: cairn config --history-cap N|none');
      const cap = o['history-cap'] === 'none' ? null : num(o['history-cap'], 'history-cap')!;
      const r = await c.call(Requests.configure, { historyCap: cap });
      emit(r, () => out(`history cap: ${r.historyCap ?? 'none (full history)'}`));
      return 0;
    }
    case 'wait': {
      if (pos.length !== 1) throw new UsageError('usage: cairn wait <position> [--timeout MS]');
      const r = await c.call(Requests.indexWait, {
        position: num(pos[0], 'position')!,
        ...(o.timeout ? { timeoutMs: num(o.timeout, 'timeout') } : {}),
      });
      emit(r, () => out(r.reached ? `index reached ${r.watermark}` : `index at ${r.watermark}, not yet ${pos[0]}`));
      return r.reached ? 0 : 1;
    }
    case 'rebuild-index': {
      // Human output follows the re-embed to its end (index/progress notifications, and the status as a fallback);
      // --json and --direct answer at once, as before.
      const follow = !json && c.mode === 'daemon' && 'onNotification' in c;
      const progress = follow
        ? followReindex(c as CairnClient & NotificationSource, (t) => process.stderr.write(t), process.stderr.isTTY === true)
        : undefined;
      const r = await c.call(Requests.indexRebuild, o.model ? { model: o.model } : {});
      emit(r, () => out(`re-embedding ${r.queued} memories with ${r.model}`));
      if (progress) {
        const done = await progress.until(r.queued);
        out(done.failed ? `re-embedding stopped: ${done.failed}` : `vector index ready: ${done.total} memories with ${r.model}`);
        return done.failed ? 1 : 0;
      }
      return 0;
    }
  }
  throw new UsageError(`unknown command ${cmd}`);
}

/** The store of a local command (compact, restore --from): refused while a daemon serves it. */
async function storeNoDaemonServes(o: Opts, doing: string): Promise<string> {
  const { resolveDbPath } = await import('../paths');
  const { runningDaemon } = await import('../server/lock');
  const db = resolveDbPath(o.db);
  const owner = runningDaemon(db);
  if (owner)
    throw new CairnError('InvalidState', `a daemon (pid ${owner.pid}) serves ${db}; stop it (and close editors using it) before ${doing}`, {
      field: 'db',
    });
  return db;
}

/** `cairn compact`: local, never through a daemon (it refuses while one serves the store). */
async function compactCommand(o: Opts): Promise<number> {
  const db = await storeNoDaemonServes(o, 'compacting');
  const { compact } = await import('../store/compact');
  // Progress for a long rewrite: SQLite's VACUUM reports none, so say what to expect (30 s for 2.1 GB measured).
  const mib = Math.round((fs.statSync(db, { throwIfNoEntry: false })?.size ?? 0) / 1048576);
  if (!o.json) process.stderr.write(`cairn: compacting ${db} (${mib} MiB; about 15 s a GiB)\n`);
  const r = compact(db);
  if (o.json) out(JSON.stringify(r, null, 2));
  else {
    const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
    out(
      `compacted ${r.path} in ${(r.ms / 1000).toFixed(1)} s: ${mib(r.bytesBefore)} -> ${mib(r.bytesAfter)} (${mib(r.freeBytesBefore)} was free)`,
    );
    out(
      r.reclaimedBefore
        ? 'the store already gave free pages back; it goes on doing so'
        : 'the store now gives free pages back (incremental auto-vacuum): the daemon returns what later switches, erasures and purges free',
    );
  }
  return 0;
}

/** `cairn restore --from <backup>`: local, never through a daemon (it refuses while one serves the store). */
async function restoreCommand(file: string, o: Opts): Promise<number> {
  const db = await storeNoDaemonServes(o, 'restoring');
  const { restore } = await import('../store/backup');
  const r = restore(db, path.resolve(file));
  if (o.json) out(JSON.stringify(r, null, 2));
  else {
    out(`restored ${r.memories} memories (schema v${r.schemaVersion}) from ${r.from} into ${r.restored}`);
    out(`full-text index rebuilt for ${r.fullTextIndexed} memories and ${r.eventsIndexed} events`);
    if (r.eventVectorsMissing > 0)
      out(`the backup's event vectors missed ${r.eventVectorsMissing} events: the daemon embeds the events again when it starts`);
    if (r.vectorsMissing > 0)
      out(`the backup's vector index missed ${r.vectorsMissing} memories: the daemon re-embeds the store when it starts`);
    if (r.previous) out(`the replaced store is kept as ${r.previous}`);
    if (r.keys === 'missing')
      out('warning: the backup has no .keys file beside it; forgotten values can no longer be matched (a new key is made)');
  }
  return 0;
}

/** `cairn verify-receipt`: local, no daemon; trusts this store's key unless --key (or --public-key) names another. */
async function verifyReceiptCommand(pos: string[], o: Opts): Promise<number> {
  if (pos.length !== 1) throw new UsageError('usage: cairn verify-receipt <FILE|->');
  const text = pos[0] === '-' ? await readStdin() : fs.readFileSync(pos[0], 'utf8');
  let receipt: unknown;
  try {
    receipt = JSON.parse(text);
  } catch (e) {
    throw new CairnError('InvalidParams', `the receipt is not JSON: ${(e as Error).message}`, { field: 'receipt' });
  }
  const { verifyReceipt } = await import('../store/receipt');
  let trusted: string | undefined;
  if (o.key !== undefined && o['public-key'] !== undefined) throw new UsageError('give --key or --public-key, not both');
  const given = o.key ?? o['public-key'];
  if (given !== undefined) {
    const { trustedKeyArg } = await import('./keys-command');
    trusted = await trustedKeyArg(given, o.key !== undefined ? '--key' : '--public-key');
  } else {
    const { loadStoreKeys } = await import('../store/keys');
    const { resolveDbPath } = await import('../paths');
    trusted = loadStoreKeys(resolveDbPath(o.db), { create: false })?.publicKeyB64;
    if (trusted === undefined)
      throw new CairnError('NotFound', 'this store has no signing key yet; pass --public-key', { field: 'public-key' });
  }
  const check = verifyReceipt(receipt, trusted);
  const r = receipt as {
    id?: string;
    erasedAt?: string;
    actor?: string;
    memories?: unknown[];
    episodes?: { id: string; events: number }[];
  };
  const what = r?.episodes?.length
    ? `episode ${r.episodes.map((e) => `${e.id} (${e.events} events)`).join(', ')}`
    : `${r?.memories?.length ?? 0} memories`;
  if (o.json) out(JSON.stringify({ ...check, id: r?.id ?? null }, null, 2));
  else if (check.ok) out(`valid: receipt ${r.id}, ${what} erased at ${r.erasedAt} by ${r.actor}, signed by the trusted key`);
  else process.stderr.write(`cairn: invalid receipt: ${check.problem}\n`);
  return check.ok ? 0 : 1;
}

/** A Cairn error on stderr: the sentence, then the code in a dim details line (error-text.ts). */
function printError(e: CairnError): void {
  const lines = errorLines(e, paint(colourFor(process.stderr)), new Set(Object.keys(OPTIONS)));
  process.stderr.write(lines.join('\n') + '\n');
}

/** Entry point used by bin/cairn.js. */
export function main(argv: string[]): void {
  // `cairn list | head` closes our stdout early: that ends the output, it is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
  // A command whose reply never came (the connection ended without an answer, the event loop ran dry) must not end
  // with exit code 0 as if it had been stored.
  let settled = false;
  process.once('beforeExit', () => {
    if (settled) return;
    printError(new CairnError('Unavailable', 'the command ended without an answer from the daemon'));
    process.exitCode = 1;
  });
  run(argv).then(
    (code) => {
      settled = true;
      process.exitCode = code;
    },
    (e) => {
      settled = true;
      if (e instanceof UsageError) {
        process.stderr.write(`cairn: ${e.message}\n`);
        process.exitCode = 2;
      } else if (e instanceof CairnError) {
        printError(e);
        process.exitCode = 1;
      } else {
        process.stderr.write(`cairn: ${(e as Error)?.message ?? String(e)}\n`);
        process.exitCode = 1;
      }
    },
  );
}

export { ErrorCodes };
