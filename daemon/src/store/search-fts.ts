/**
 * The full-text arm: FTS5 + BM25 with column weights. Scope, visibility and
 * filters are part of the same query that takes the top-k, so an out-of-scope
 * memory never occupies a candidate slot.
 *
 * Query plan (so a search stays fast at 100k memories):
 * 1. Every content word of the query becomes a term: a plain word matches its
 *    token; an identifier (`getUserById`, `get_user_by_id`) matches its parts
 *    joined (`getuserbyid`), one token the index holds for every spelling of it
 *    (camelCase, snake_case, SCREAMING_CASE, kebab-case), not loose words. Stopwords
 *    are dropped unless nothing else is left. While the last word is still being
 *    typed (not yet a known term), it also matches as a prefix.
 * 2. Conjunctive pass: memories matching every term, by BM25.
 * 3. If that yields fewer than the limit, a disjunctive pass over the
 *    informative terms (leaving out terms found in over 3% of memories and
 *    over 1000 of them — they carry little BM25 weight but dominate the cost)
 *    fills the rest, by BM25.
 * 4. When the conjunctive pass cannot fill the limit alone (a scope, or a
 *    plain word found in fewer memories than the limit), 2 and 3 are one
 *    statement: the disjunctive matches, those matching every term first, each
 *    group by BM25 over the disjunctive terms. FTS5 recounts every term's,
 *    identifier phrase's and namespace token's matches for BM25 in each
 *    statement; this way once, and the conjunctive expression is only matched
 *    as a set of rowids. When every word is common and the scope is named
 *    inside MATCH, that set is the scoped conjunctive matches, listed first
 *    without BM25 and stopped at the limit; when there are as many as the
 *    limit, 2 and 3 run as two statements after all (the conjunctive one may
 *    fill the limit alone). Without a common term left out, the one statement
 *    returns exactly what the two passes return; with one, the every-term
 *    matches are ordered without its (small) weight. When some word is
 *    informative, the scope is named inside MATCH and no word is rarer than
 *    the limit, the scoped every-term matches are ranked first, alone, as the
 *    one statement ranks them; it runs only if they are fewer than the limit.
 * The tokenizer stems English words (porter), so "stored" finds "stores".
 * BM25 is cairn_bm25 (native/cairn_bm25.c) when the connection loaded it: bm25()'s scores, with each phrase's
 * document count handed in (phraseCounts) instead of counted again by every statement.
 */
import type { Filter, Include, Scope } from '../protocol/types';
import { splitIdentifier, STOPWORDS } from '../text/identifiers';
import { hasRankingExtension, stmt, type DB } from './db';
import { compileFilter } from './filter';
import { and, visibility } from './rows';
import { ownScopeRank, pathInScope, scopePredicate } from './scope';

/** BM25 column weights: key, value, summary, tags, split identifiers, namespace token (0: it only scopes). */
export const BM25_WEIGHTS = [4.0, 1.0, 0.5, 2.0, 1.0, 0.0] as const;

/**
 * Each memory's FTS row carries one token naming its namespace id (ids never
 * change on rename). A scope is resolved to the ids of its live namespaces and
 * becomes `AND ns:(...)` inside the MATCH itself, so FTS5 only ever scores
 * in-scope rows — the scope is part of the index lookup, not a later filter.
 */
export function namespaceToken(nsId: string): string {
  return 'ns' + nsId.replace(/[^0-9a-f]/gi, '').toLowerCase();
}
/** Most namespace tokens put into a MATCH; a wider scope is enforced by the SQL scope predicate alone. */
export const FTS_MAX_NS_TOKENS = 256;
/**
 * Terms in more than this share of memories are left out of the disjunctive pass. Their BM25 weight is small
 * (IDF under ln 33), but FTS5 evaluates BM25 for each of their matches (about 1 µs a match): at 100k memories a word in
 * 3–10% of them was most of the slowest queries' time (bench/README.md, "The common-term cut-off").
 */
export const COMMON_TERM_SHARE = 0.03;
/** ...and only when they are in more than this many memories (below it, they cost nothing). */
export const COMMON_TERM_MIN_DOCS = 1000;

/** Document frequency from which a term counts as common in a store of `docCount` memories. */
export function commonTermCap(docCount: number): number {
  return Math.max(COMMON_TERM_MIN_DOCS, Math.ceil(COMMON_TERM_SHARE * docCount)) + 1;
}

export interface ArmHit {
  rowid: number;
  /** Higher is better (negated BM25 for the full-text arm, cosine similarity for the vector arm). */
  score: number;
}

export interface ArmQuery {
  scope?: Scope;
  filter?: Filter;
  include?: Include;
  limit: number;
  now: number;
  /** Rowids no arm may admit (the base rows a memory branch shadows, store/branches.ts), left out before the limit. */
  exclude?: Set<number>;
  /**
   * More rows no full-text arm may admit, as SQL over aliases m, n (a branch's shadowed base rows: one index probe
   * per candidate instead of a list of thousands of rowids built on every search). Other arms get them in `exclude`.
   */
  excludeSql?: { sql: string; params: unknown[] };
}

/** ArmQuery.exclude as SQL over alias m (null when there is nothing to leave out). */
export function excluded(q: { exclude?: Set<number> }): { sql: string; params: unknown[] } | null {
  if (!q.exclude || q.exclude.size === 0) return null;
  return { sql: 'm.rowid NOT IN (SELECT value FROM json_each(?))', params: [JSON.stringify([...q.exclude])] };
}

/**
 * A search on a memory branch, for the full-text arm (store/branch-text.ts): the branch's rows are in the same index,
 * under their negated rowids, each with the namespace token of its (branch, namespace path). The arm matches them in
 * the same MATCH as the base's rows (the scope's base and branch tokens together), ranks both with one BM25, and
 * checks each kind against scope, visibility and filter before the limit: base rows against `memories` (with the
 * query's exclusions, e.g. the rows the branch shadows), branch rows against `branch_memories` of this branch only.
 * Hits of branch rows carry the negated rowid.
 */
export interface BranchText {
  id: string;
  /** The namespace paths the branch has rows in, with their tokens (branch-text.ts branchPathTokens). */
  tokens: ReadonlyMap<string, string>;
}

interface Term {
  expr: string;
  /** Document frequency of the plain token (undefined for phrases and prefixes). */
  df?: number;
}

const quote = (t: string) => `"${t.replace(/"/g, '""')}"`;

export interface FtsPlan {
  all: string | null;
  any: string | null;
  /** The phrases of `all` and `any`, in the order they appear (each term is one phrase). */
  allPhrases: string[];
  anyPhrases: string[];
  /** Fewest memories holding one of the plain-word terms (an upper bound on the conjunctive matches); Infinity without one. */
  minDf: number;
  /** Every term is a common word: the disjunctive pass keeps only the least common of them. */
  allCommon: boolean;
}

const noPlan = (): FtsPlan => ({ all: null, any: null, allPhrases: [], anyPhrases: [], minDf: Infinity, allCommon: false });

/**
 * A word's document frequency as planQuery remembers it: `df` exact when `exact`, else the count stopped at `df` (the
 * word is in at least that many memories). Kept uncapped: the common-term cap grows with the store (one more every
 * ~33 memories at a million), and a frequency remembered already capped fell under the next cap, so after one write
 * every common word remembered looked informative and was weighed and scored again in the disjunctive pass, until
 * the store had grown by a tenth (a search's full-text arm 5 → 67 ms at 1M, and its answers changed).
 */
const dfCaches = new WeakMap<DB, Map<string, { df: number; exact: boolean; docCount: number }>>();

export function planQuery(db: DB, query: string): FtsPlan {
  let dfCache = dfCaches.get(db);
  if (!dfCache) dfCaches.set(db, (dfCache = new Map()));
  const words = [...query.matchAll(/[\p{L}\p{N}_$]+/gu)].map((m) => m[0]);
  if (words.length === 0) return noPlan();
  const content = words.filter((w) => !STOPWORDS.has(w.toLowerCase()));
  const use = content.length > 0 ? content : words;
  // max(rowid) is O(1) and close enough to the number of memories for a share threshold
  const docCount = Math.max(1, (stmt(db, 'SELECT max(rowid) AS c FROM memories').get() as { c: number | null }).c ?? 1);
  const cap = commonTermCap(docCount);
  // Document frequency of a word: the vocabulary table when the word is its own stem, else a MATCH count
  // through the FTS tokenizer (so stemming applies) stopped a tenth past where the term counts as common;
  // remembered until the store has grown by 10% (and a stopped count until the cap passes where it stopped).
  const df = (t: string): number => {
    const cached = dfCache.get(t);
    if (cached && cached.docCount * 1.1 >= docCount && cached.docCount <= docCount * 1.1 && (cached.exact || cached.df >= cap))
      return Math.min(cached.df, cap);
    const v = stmt(db, 'SELECT doc FROM memories_fts_vocab WHERE term = ?').get(t) as { doc: number } | undefined;
    const stop = Math.ceil(cap * 1.1);
    const n =
      v?.doc ??
      (
        stmt(db, 'SELECT count(*) AS c FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)').get(quote(t), stop) as {
          c: number;
        }
      ).c;
    const counted = { df: n, exact: v !== undefined || n < stop };
    if (dfCache.size >= 10_000) dfCache.clear();
    dfCache.set(t, { ...counted, docCount });
    return Math.min(counted.df, cap);
  };
  const terms: Term[] = [];
  const seen = new Set<string>();
  use.forEach((w, i) => {
    const lower = w.toLowerCase();
    const parts = splitIdentifier(w);
    const snake = lower.split(/[_$]+/).filter(Boolean);
    const key = parts.length ? parts.join(' ') : lower;
    if (seen.has(key)) return;
    seen.add(key);
    if (parts.length > 1) {
      // An identifier (camelCase, snake_case, SCREAMING_CASE): its parts joined, one token, which the key and
      // split-identifier columns hold for every spelling of it (identifierCompounds), kebab-case too. A phrase of
      // its parts cost a position-by-position match and count in every statement.
      terms.push({ expr: quote(parts.join('')) });
    } else if (snake.length > 1) {
      terms.push({ expr: quote(snake.join(' ')) }); // not split as an identifier (non-ASCII): the phrase of its words
    } else {
      const d = df(lower);
      const last = i === use.length - 1 && /[\p{L}\p{N}]$/u.test(query) && lower.length >= 3;
      if (last && d === 0)
        terms.push({ expr: `${quote(lower)}*` }); // still being typed
      else terms.push({ expr: quote(lower), df: d });
    }
  });
  if (terms.length === 0) return noPlan();
  const informative = terms.filter((t) => t.df === undefined || t.df < cap);
  const any = informative.length > 0 ? informative : [...terms].sort((a, b) => (a.df ?? 0) - (b.df ?? 0)).slice(0, 1);
  return {
    all: terms.length > 1 ? terms.map((t) => t.expr).join(' AND ') : null,
    any: any.map((t) => t.expr).join(' OR '),
    allPhrases: terms.length > 1 ? terms.map((t) => t.expr) : [],
    anyPhrases: any.map((t) => t.expr),
    minDf: Math.min(...terms.map((t) => t.df ?? Infinity)),
    allCommon: informative.length === 0,
  };
}

/** Candidates taken by BM25 alone per wanted hit before visibility, scope and filter are checked (see ranked). */
export const FTS_INNER_FACTOR = 2;
/** Past this many BM25 candidates, `ranked` falls back to one query joining every match. */
export const FTS_INNER_MAX = 8192;

/** The rowids of the first `limit` matches of `expr`, in rowid order (no BM25). */
function matchedRowids(db: DB, expr: string, limit: number): number[] {
  return stmt(db, 'SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?')
    .raw()
    .all(expr, limit)
    .map((r) => (r as [number])[0]);
}

/**
 * A MATCH expression and the phrases BM25 weighs in it, in the order they appear: a term's phrase, or null for a
 * namespace token (its column's weight is 0, so it adds nothing to a score and its count is never needed).
 */
interface Match {
  expr: string;
  phrases: (string | null)[];
  /** Phrases matched but left out of the score (cairn_bm25 only): the every-term matches ranked as `any` ranks them. */
  unweighed?: ReadonlySet<string>;
}

/** Per connection: each phrase's document count, while the index is as it was when they were counted. */
const phraseCountCaches = new WeakMap<DB, { version: Buffer; counts: Map<string, number> }>();

/**
 * What the full-text index's contents are keyed by (cairn_fts_content_key, native/cairn_bm25.c): FTS5's averages
 * record (its row count and token totals) and its structure's write counter and newest segment origin, which every
 * committed insert, delete and replacement of a row moves, by this connection or another; a merge (the checkpoint
 * worker's) and other writes (memory rows, history, vectors, duplicate records, access statistics) leave it as it is.
 */
function indexVersion(db: DB): Buffer | null {
  return (stmt(db, 'SELECT cairn_fts_content_key() AS k').get() as { k: Buffer | null }).k;
}

/**
 * The document counts cairn_bm25 takes (native/cairn_bm25.c): for each phrase, the rows holding it, as FTS5's
 * bm25() counts them in every statement; -1 for a namespace token and a phrase in `unweighed`: cairn_bm25 leaves it
 * out of the score and never reads its instances. Remembered while the index's contents are unchanged (indexVersion:
 * a write of this connection's or another's that reached the index forgets them; one that did not, such as a pass
 * storing vectors or a merge of the index's segments, keeps them), so they are always the current counts; never
 * inside a transaction, which may still roll back. Only called with cairn_bm25 loaded (bm25Sql).
 */
export function phraseCounts(db: DB, phrases: (string | null)[], unweighed?: ReadonlySet<string>): Buffer {
  let cache: { version: Buffer; counts: Map<string, number> } | null = null;
  const version = db.inTransaction || !hasRankingExtension(db) ? null : indexVersion(db); // null: counted each time
  if (version) {
    cache = phraseCountCaches.get(db) ?? null;
    if (!cache || !cache.version.equals(version) || cache.counts.size >= 10_000) {
      cache = { version, counts: new Map() };
      phraseCountCaches.set(db, cache);
    }
  }
  const out = new Float64Array(phrases.length);
  phrases.forEach((p, i) => {
    if (p === null || unweighed?.has(p)) {
      out[i] = -1;
      return;
    }
    let n = cache?.counts.get(p);
    if (n === undefined) {
      n = (stmt(db, 'SELECT count(*) AS c FROM memories_fts WHERE memories_fts MATCH ?').get(p) as { c: number }).c;
      cache?.counts.set(p, n);
    }
    out[i] = n;
  });
  return Buffer.from(out.buffer);
}

/**
 * BM25 with the column weights, as SQL over `memories_fts`, and its parameters: cairn_bm25 with the phrases' counts
 * when the connection has it (the same scores, without FTS5 counting every phrase's rows per statement), else bm25().
 */
function bm25Sql(db: DB, m: Match): { sql: string; params: unknown[] } {
  return hasRankingExtension(db)
    ? { sql: `cairn_bm25(memories_fts, ?, ${BM25_WEIGHTS.join(', ')})`, params: [phraseCounts(db, m.phrases, m.unweighed)] }
    : { sql: `bm25(memories_fts, ${BM25_WEIGHTS.join(', ')})`, params: [] };
}

/** One ranked match: BM25 (lower is better) and, when a conjunctive part is asked for, whether it matches every term. */
interface Ranked {
  rowid: number;
  bm: number;
  /** 0: matches every term (ranks first), 1: only some; always 0 without a conjunctive part. */
  part: number;
}

/** What `ranked` admits: base rows by `where`, and with `branch` that branch's rows by its own WHERE (aliases m, n). */
interface Checks {
  where: { sql: string; params: unknown[] };
  own: { sql: string; params: unknown[] } | null;
  branch: { id: string; where: { sql: string; params: unknown[] } } | null;
  /** Only rowids from 1 up can match (a search of the base whose MATCH names no namespace: branch rows left out). */
  baseOnly: boolean;
}

type Checked = { rowid: number; own: number; updated: number; id: string };

/**
 * The `limit` best matches of `expr` that the checks admit (visibility, scope, filter, exclusions; aliases `m`, `n`;
 * a branch's rows by their own: Checks), ordered by BM25, then own scope over `user`, newer, id — exactly what one
 * query joining every match to its memory row and sorting them returns, but cheaper: FTS5 ranks its matches alone
 * (no row lookups) and hands over the best L; only those are joined and checked. Rows the checks refuse are dropped
 * before the cut, and L grows until `limit` admitted rows are found whose cut-off is strictly better than every match not
 * fetched (or the matches are exhausted), so a refused row never takes a place and ties are broken as in SQL.
 *
 * With `every` (an expression whose matches are a subset of `expr`'s, or those matches' rowids), the matches of
 * `every` rank first, then the others, each group by the order above: the conjunctive and disjunctive passes in one
 * statement. FTS5 then computes BM25's per-term document counts once (they cost a scan of each term's, identifier
 * phrase's and namespace token's matches per statement), and `every` is only matched (no BM25) as a rowid set.
 */
function ranked(
  db: DB,
  match: Match,
  limit: number,
  checks: Checks,
  every: string | number[] | null = null,
  innerMax = FTS_INNER_MAX,
): Ranked[] {
  const { where, own, branch } = checks;
  const ownSql = own ? own.sql : '0';
  const check = stmt(
    db,
    `SELECT m.rowid AS rowid, ${ownSql} AS own, m.updated_at AS updated, m.id AS id
       FROM memories m JOIN namespaces n ON n.id = m.ns_id
      WHERE m.rowid IN (SELECT value FROM json_each(?)) AND ${where.sql}`,
  );
  // A branch's rows (negated rowids in the index): its own rows only, `+`: the branch id is only checked.
  const checkBranch = branch
    ? stmt(
        db,
        `SELECT -m.rowid AS rowid, ${ownSql} AS own, m.updated_at AS updated, m.id AS id
           FROM branch_memories m JOIN branch_ns n ON n.rid = m.rowid
          WHERE m.rowid IN (SELECT value FROM json_each(?)) AND +m.branch_id = ? AND ${branch.where.sql}`,
      )
    : null;
  const admit = (rowids: number[]): Checked[] => {
    const base = rowids.filter((r) => r > 0);
    const mine = checkBranch ? rowids.filter((r) => r < 0).map((r) => -r) : [];
    return [
      ...(base.length ? (check.all(...(own?.params ?? []), JSON.stringify(base), ...where.params) as Checked[]) : []),
      ...(mine.length
        ? (checkBranch!.all(...(own?.params ?? []), JSON.stringify(mine), branch!.id, ...branch!.where.params) as Checked[])
        : []),
    ];
  };
  const expr = match.expr;
  const bm25 = bm25Sql(db, match);
  // 0 for a match of `every`, 1 for the others (a constant 0 without it); `col` is the FTS row's rowid column.
  const part = (col: string) =>
    every === null
      ? '0'
      : typeof every === 'string'
        ? `(${col} NOT IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?))`
        : `(${col} NOT IN (SELECT value FROM json_each(?)))`;
  const partParams = every === null ? [] : [typeof every === 'string' ? every : JSON.stringify(every)];
  const floor = checks.baseOnly ? ' AND rowid > 0' : '';
  const before = (a: { part: number; bm: number }, b: { part: number; bm: number }) =>
    a.part < b.part || (a.part === b.part && a.bm < b.bm);
  for (let inner = Math.max(limit * FTS_INNER_FACTOR, 32); inner <= innerMax; inner *= 4) {
    const top = stmt(
      db,
      `SELECT rowid, ${bm25.sql} AS bm, ${part('rowid')} AS part FROM memories_fts WHERE memories_fts MATCH ?${floor} ORDER BY part ASC, bm ASC LIMIT ?`,
    ).all(...bm25.params, ...partParams, expr, inner) as Ranked[];
    const exhausted = top.length < inner;
    if (top.length === 0) return [];
    const byRow = new Map(top.map((r) => [r.rowid, r]));
    const ok = admit(top.map((r) => r.rowid))
      .map((r) => {
        const match = byRow.get(r.rowid)!;
        return { ...r, bm: match.bm, part: match.part };
      })
      .sort((a, b) => a.part - b.part || a.bm - b.bm || a.own - b.own || b.updated - a.updated || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    // Exact when every match not fetched ranks strictly below the last admitted row kept.
    if (exhausted || (ok.length >= limit && before(ok[limit - 1], top[top.length - 1])))
      return ok.slice(0, limit).map((r) => ({ rowid: r.rowid, bm: r.bm, part: r.part }));
  }
  // Every match joined to its row, in one statement (a branch's rows by their negated rowid).
  const select = (from: string, w: { sql: string; params: unknown[] }, pre: unknown[]) => ({
    sql: `SELECT f.rowid AS rowid, ${bm25.sql} AS bm, ${part('f.rowid')} AS part, ${ownSql} AS own, m.updated_at AS updated, m.id AS id
            FROM memories_fts f JOIN ${from} WHERE memories_fts MATCH ? AND ${w.sql}`,
    params: [...bm25.params, ...partParams, ...(own?.params ?? []), expr, ...pre, ...w.params],
  });
  const parts = [select('memories m ON m.rowid = f.rowid JOIN namespaces n ON n.id = m.ns_id', where, [])];
  if (branch)
    parts.push(
      select(
        'branch_memories m ON m.rowid = -f.rowid JOIN branch_ns n ON n.rid = m.rowid',
        { sql: `+m.branch_id = ? AND ${branch.where.sql}`, params: branch.where.params },
        [branch.id],
      ),
    );
  return stmt(
    db,
    `SELECT rowid, bm, part FROM (${parts.map((p) => p.sql).join(' UNION ALL ')})
      ORDER BY part ASC, bm ASC, own ASC, updated DESC, id ASC LIMIT ?`,
  ).all(...parts.flatMap((p) => p.params), limit) as Ranked[];
}

/**
 * `twoPasses`: always run the conjunctive and disjunctive passes as two statements (bench/search-profile.ts compares).
 * `branch`: a search on a memory branch (BranchText): its rows are matched and ranked with the base's in the same queries.
 * `innerMax`: FTS_INNER_MAX (a test lowers it to reach the one query joining every match).
 */
export function ftsArm(
  db: DB,
  query: string,
  q: ArmQuery,
  opts: { twoPasses?: boolean; branch?: BranchText; innerMax?: number } = {},
): ArmHit[] {
  const plan = planQuery(db, query);
  if (!plan.any && !plan.all) return [];
  const branch = opts.branch ?? null;
  // Which disjunctive matches match every term: `every` is only evaluated for rows that already match the
  // scoped disjunctive expression, so it needs no namespace tokens (FTS5 would match and merge them once more).
  const every = plan.all;
  const scopeSql = scopePredicate(q.scope, 'path');
  // Namespace tokens put into the MATCH (0: the scope is left to the SQL predicate, or there is none).
  let nsTokens = 0;
  if (scopeSql) {
    const ids = stmt(db, `SELECT id FROM namespaces WHERE deleted_at IS NULL AND ${scopeSql.sql} LIMIT ?`).all(
      ...scopeSql.params,
      FTS_MAX_NS_TOKENS + 1,
    ) as { id: string }[];
    // On a branch, the tokens of its rows' namespaces in the scope too (the same rule as the SQL predicate).
    const own = branch ? [...branch.tokens].filter(([path]) => pathInScope(path, q.scope)).map(([, token]) => token) : [];
    if (ids.length === 0 && own.length === 0) return [];
    // A scope of many namespaces is left to the SQL scope predicate below (same query, before the LIMIT):
    // an OR of tens of thousands of tokens inside MATCH costs seconds.
    if (ids.length <= FTS_MAX_NS_TOKENS && own.length <= FTS_MAX_NS_TOKENS) {
      const tokens = [...ids.map((r) => namespaceToken(r.id)), ...own];
      const ns = `ns:(${tokens.map(quote).join(' OR ')})`;
      if (plan.all) plan.all = `(${plan.all}) AND ${ns}`;
      if (plan.any) plan.any = `(${plan.any}) AND ${ns}`;
      nsTokens = tokens.length;
    }
  }
  const match = (expr: string, phrases: string[]): Match => ({ expr, phrases: [...phrases, ...new Array<null>(nsTokens).fill(null)] });
  const all = plan.all ? match(plan.all, plan.allPhrases) : null;
  const any = plan.any ? match(plan.any, plan.anyPhrases) : null;
  const rules = [visibility(q.include, q.now), scopePredicate(q.scope), compileFilter(q.filter)] as const;
  const checks: Checks = {
    // The query's exclusions (a branch's shadowed rows, a checkout's hidden rows) are base rows: they bind base rows only.
    where: and(...rules, excluded(q), q.excludeSql ?? null),
    own: ownScopeRank(q.scope),
    branch: branch ? { id: branch.id, where: and(...rules) } : null,
    baseOnly: !branch && nsTokens === 0,
  };
  const toHit = (r: Ranked): ArmHit => ({ rowid: r.rowid, score: -r.bm });
  // Both passes in one statement (plan step 4) unless the conjunctive pass alone may fill the limit: a scope, or
  // a plain word found in fewer memories than the limit, says it cannot (then the disjunctive pass runs too).
  if (all && any && !opts.twoPasses && (scopeSql !== null || plan.minDf < q.limit)) {
    if (nsTokens > 0 && !plan.allCommon && plan.minDf >= q.limit && hasRankingExtension(db)) {
      // A scope named inside MATCH and no word rarer than the limit: the every-term matches may fill the limit
      // alone, and the one statement would still score every in-scope match of the disjunctive terms (at 1M, 10-20k
      // for a project's own words). So they are ranked first, alone, as the one statement ranks them (by BM25 over
      // the disjunctive terms: the others are matched, not weighed), and only when fewer than the limit are admitted
      // does the one statement run, with the admitted ones as its every-term set (refused rows take no place either
      // way). The same answers, the one statement's (bench/README.md, "The scoped full-text arm at 1M").
      const first = ranked(
        db,
        { ...all, unweighed: new Set(plan.allPhrases.filter((p) => !plan.anyPhrases.includes(p))) },
        q.limit,
        checks,
        null,
        opts.innerMax,
      );
      if (first.length >= q.limit) return first.map(toHit);
      return ranked(
        db,
        any,
        q.limit,
        checks,
        first.map((r) => r.rowid),
        opts.innerMax,
      ).map(toHit);
    }
    if (nsTokens === 0 || !plan.allCommon) return ranked(db, any, q.limit, checks, every, opts.innerMax).map(toHit);
    // Every word common, in a scope named inside MATCH: the one statement would score every in-scope match of the
    // least common word (thousands at 100k: the slowest scoped queries), and the conjunctive expression costs as
    // much to match over the whole index. So the scoped conjunctive matches are listed first (no BM25, stopped at
    // the limit). Fewer than the limit: they are the one statement's every-term set (its disjunctive matches are
    // all in scope). As many: the two passes below, whose conjunctive pass may fill the limit alone and spare
    // scoring the disjunctive matches (bench/README.md, "Every word common: the scoped conjunctive matches first").
    const conj = matchedRowids(db, all.expr, q.limit);
    if (conj.length < q.limit) return ranked(db, any, q.limit, checks, conj, opts.innerMax).map(toHit);
  }
  const run = (m: Match, limit: number) => ranked(db, m, limit, checks, null, opts.innerMax);
  const out: ArmHit[] = [];
  const seen = new Set<number>();
  if (all)
    for (const r of run(all, q.limit)) {
      seen.add(r.rowid);
      out.push(toHit(r));
    }
  if (out.length < q.limit && any) {
    for (const r of run(any, q.limit + out.length)) {
      if (seen.has(r.rowid) || out.length >= q.limit) continue;
      out.push(toHit(r));
    }
  }
  return out;
}
