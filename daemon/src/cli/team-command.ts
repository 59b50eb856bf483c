/**
 * `cairn team init|status|grant|history-cap|audit|verify-receipt`: set up, inspect and
 * audit the team database directly (no daemon needed). The URL comes from --team-url or CAIRN_TEAM_URL;
 * the password from PGPASSWORD or ~/.pgpass. Nothing printed ever contains the
 * password (the URL is shown redacted).
 */
import * as fs from 'node:fs';
import { CairnError, fromZodError } from '../protocol/errors';
import { namespaceProblem } from '../protocol/namespace';
import { AuditParams } from '../protocol/types';
import { teamAuditPage } from '../store/pg/admin';
import { verifyTeamReceipt } from '../store/pg/erasure';
import { PgBackend } from '../store/pg/backend';
import { redactUrl } from '../store/pg/db';
import { grant, LEVELS, migrate, setHistoryCap, type Level } from '../store/pg/schema';
import { teamConfig } from '../team/attach';
import { UsageError } from './main';

export async function runTeam(
  pos: string[],
  o: { url?: string; roots?: string; json: boolean; from?: string; to?: string; root?: string; noContent?: boolean },
  out: (s: string) => void,
): Promise<number> {
  const [sub, ...args] = pos;
  const cfg = teamConfig({ url: o.url, roots: o.roots });
  if (!sub || !['init', 'status', 'grant', 'history-cap', 'audit', 'verify-receipt'].includes(sub))
    throw new UsageError(
      'usage: cairn team init|status|grant ROLE ROOT read|write|admin|history-cap N|off|audit [FILE] [--from ISO] [--to ISO] [--root NS] [--no-content]|verify-receipt FILE',
    );
  if (!cfg) throw new UsageError('no team database configured: pass --team-url postgres://user@host:port/db or set CAIRN_TEAM_URL');
  const b = new PgBackend({ url: cfg.url, connectTimeoutMs: 5000 });
  const emit = (v: unknown, human: () => void) => (o.json ? out(JSON.stringify(v, null, 2)) : human());
  try {
    if (sub === 'init') {
      const r = await migrate(b.pool);
      await b.open();
      emit({ url: redactUrl(cfg.url), ...r }, () =>
        out(
          r.from === r.to
            ? `team database ${redactUrl(cfg.url)} is at schema v${r.to}; invariants checked`
            : `team database ${redactUrl(cfg.url)} migrated from schema v${r.from} to v${r.to}`,
        ),
      );
      return 0;
    }
    if (sub === 'grant') {
      const [role, root, level] = args;
      if (!role || !root || !level) throw new UsageError('usage: cairn team grant ROLE ROOT read|write|admin');
      if (!(level in LEVELS)) throw new UsageError(`level must be read, write or admin, got ${JSON.stringify(level)}`);
      const p = namespaceProblem(root);
      if (p) throw new CairnError('InvalidNamespace', p, { field: 'root' });
      await grant(b.pool, role, root, level as Level);
      emit({ role, root, level }, () => out(`granted ${level} on ${root} (and everything under it) to ${role}`));
      return 0;
    }
    if (sub === 'audit') return await audit(b, args, o);
    if (sub === 'verify-receipt') {
      // The team database signed it with a key only its owner can read: it is the one to ask.
      if (args.length !== 1) throw new UsageError('usage: cairn team verify-receipt FILE|-');
      const text = args[0] === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(args[0], 'utf8');
      let receipt: { id?: string; erasedAt?: string; actor?: string; memories?: unknown[]; store?: unknown };
      try {
        receipt = JSON.parse(text);
      } catch (e) {
        throw new CairnError('InvalidParams', `the receipt is not JSON: ${(e as Error).message}`, { field: 'receipt' });
      }
      await b.open();
      const ok = receipt?.store === 'team' && (await verifyTeamReceipt(b, receipt));
      emit({ ok, id: receipt?.id ?? null }, () => {
        if (ok)
          out(
            `valid: receipt ${receipt.id}, ${receipt.memories?.length ?? 0} memories erased at ${receipt.erasedAt} by ${receipt.actor}, signed by this team database`,
          );
        else process.stderr.write('cairn: invalid receipt: this team database did not sign it (altered, or from another database)\n');
      });
      return ok ? 0 : 1;
    }
    if (sub === 'history-cap') {
      const [v] = args;
      const cap = v === 'off' ? null : Number(v);
      if (v === undefined || (cap !== null && !(Number.isInteger(cap) && cap >= 1 && cap <= 1_000_000)))
        throw new UsageError('usage: cairn team history-cap N|off (N: history rows kept per memory, 1 to 1000000)');
      await b.open();
      await setHistoryCap(b.pool, cap);
      emit({ historyCap: cap }, () =>
        out(cap === null ? 'team history is kept in full' : `team history keeps the newest ${cap} rows per memory`),
      );
      return 0;
    }
    await b.open();
    const s = await b.status();
    emit({ ...s, roots: cfg.roots }, () => {
      out(`team database   ${s.url} (as ${s.user})`);
      out(`server          PostgreSQL ${s.serverVersion}, pgvector ${s.pgvectorVersion ?? 'missing'}`);
      out(
        `schema          v${s.schemaVersion}${s.indexBuildsPending.length ? ` (indexes still to build: ${s.indexBuildsPending.join(', ')}; run \`cairn team init\`)` : ''}`,
      );
      out(`latency         ${s.latencyMs} ms (one round trip)`);
      out(`roots           ${cfg.roots.join(', ')}`);
      out(
        `memories        ${s.counts.memories} (${s.counts.active} active, ${s.counts.deleted} deleted), ${s.counts.vectors} with vectors`,
      );
      out(
        `namespaces      ${s.counts.namespaces}; history ${s.counts.history}${s.historyCap !== null ? ` (capped at ${s.historyCap} per memory)` : ''}; links ${s.counts.links}`,
      );
      out(
        `your grants     ${s.grants.length ? s.grants.map((g) => `${g.root}:${['', 'read', 'write', 'admin'][g.level]}`).join(', ') : 'none'}`,
      );
    });
    return 0;
  } finally {
    await b.close();
  }
}

/**
 * `cairn team audit [FILE]`: the history of the team roots this role administers (or of `--root`, which it must
 * administer) for a time range, oldest first, as JSON Lines (HistoryEntry, as `cairn audit export`), read in pages.
 */
async function audit(
  b: PgBackend,
  args: string[],
  o: { from?: string; to?: string; root?: string; noContent?: boolean; json: boolean },
): Promise<number> {
  const [file, ...extra] = args;
  if (extra.length) throw new UsageError('usage: cairn team audit [FILE] [--from ISO] [--to ISO] [--root NS] [--no-content]');
  const first = AuditParams.safeParse({
    ...(o.from !== undefined ? { from: o.from } : {}),
    ...(o.to !== undefined ? { to: o.to } : {}),
    ...(o.root !== undefined ? { scope: { root: o.root, includeUser: false } } : {}),
    ...(o.noContent ? { content: false } : {}),
  });
  if (!first.success) throw fromZodError(first.error, 'team audit');
  await b.open();
  const toFile = file !== undefined && file !== '-';
  const sink = toFile ? fs.createWriteStream(file) : process.stdout;
  const write = (text: string) => (sink.write(text) ? Promise.resolve() : new Promise<void>((r) => sink.once('drain', () => r())));
  let cursor: string | undefined;
  let n = 0;
  do {
    const page = await teamAuditPage(b, { ...first.data, ...(cursor ? { cursor } : {}) });
    if (page.entries.length) await write(page.entries.map((e) => JSON.stringify(e)).join('\n') + '\n');
    n += page.entries.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  if (toFile) {
    await new Promise<void>((resolve, reject) => (sink as fs.WriteStream).end((e?: Error | null) => (e ? reject(e) : resolve())));
    process.stderr.write(`wrote ${n} team history entries to ${file}\n`);
  }
  return 0;
}
