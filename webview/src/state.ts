/**
 * The dashboard's state that is not drawing: scope and filter chips turned into the protocol's scope and
 * filter tree, search params, snippet highlights, paging, what a store change must refresh, and the state
 * kept across reloads (vscode.setState). Pure functions, unit-tested in test/unit/webview-*.test.ts.
 */
import type { DidChangeParams, Filter, FilterLeaf, Include, Scope, SearchParams } from '../../daemon/src/protocol/types';
import type { WebviewInit } from '../../daemon/src/protocol/webview';
import { FORM_FIELDS, type Form } from './form';

export const TABS = ['search', 'review', 'timeline', 'overview', 'branches', 'import'] as const;
export type Tab = (typeof TABS)[number];
export const SCOPES = ['project', 'user', 'team', 'all'] as const;
export type ScopeKey = (typeof SCOPES)[number];
export const PAGE_SIZE = 20;
/** Results fetched per search (the daemon's cap is 200); pages are cut from these. */
export const SEARCH_LIMIT = 100;
/** The selection that shows the "New memory" form instead of a memory (memory ids are UUIDs, never this). */
export const NEW_MEMORY = 'new';
/** Proposed memories listed in the review queue (and counted on its tab). */
export const REVIEW_LIMIT = 200;

export interface Chips {
  kinds: string[];
  statuses: string[];
  sources: string[];
  tags: string[];
  /** yyyy-mm-dd, inclusive, on updatedAt (UTC). */
  from: string;
  to: string;
}

/**
 * An edit not saved yet: the form as the user left it and the version it was made from (saved with ifVersion =
 * base, so a change made meanwhile shows the conflict view instead of being overwritten). Kept in the webview's
 * state, so hiding the panel, opening code in its place or reloading the window never loses it.
 */
export interface Draft {
  /** namespace/key, to name the memory when asking before the edit is discarded. */
  label: string;
  base: number;
  form: Form;
  /** The fields that differ from the stored form. */
  changed: string[];
}
/** Unsaved edits kept at most (the newest win); each is one memory's form. */
export const MAX_DRAFTS = 20;

export interface PersistedState {
  tab: Tab;
  query: string;
  mode: 'hybrid' | 'fts';
  scope: ScopeKey;
  chips: Chips;
  page: number;
  selectedId: string | null;
  explain: boolean;
  /** Unsaved edits by memory id, oldest first. */
  drafts: Record<string, Draft>;
  /** The memory branch open in the Branches tab. */
  branch: string | null;
}

export const emptyChips = (): Chips => ({ kinds: [], statuses: [], sources: [], tags: [], from: '', to: '' });
export const initialState = (): PersistedState => ({
  tab: 'search',
  query: '',
  mode: 'hybrid',
  scope: 'project',
  chips: emptyChips(),
  page: 0,
  selectedId: null,
  explain: false,
  drafts: {},
  branch: null,
});

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string').slice(0, 64) : []);
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** Whatever getState() returned (maybe from an older version, maybe nothing) as a valid state. */
export function restoreState(raw: unknown): PersistedState {
  const s = initialState();
  if (!raw || typeof raw !== 'object') return s;
  const r = raw as Record<string, unknown>;
  if (TABS.includes(r.tab as Tab)) s.tab = r.tab as Tab;
  if (typeof r.query === 'string') s.query = r.query.slice(0, 4096);
  if (r.mode === 'fts' || r.mode === 'hybrid') s.mode = r.mode;
  if (SCOPES.includes(r.scope as ScopeKey)) s.scope = r.scope as ScopeKey;
  if (typeof r.page === 'number' && Number.isInteger(r.page) && r.page >= 0) s.page = r.page;
  if (typeof r.selectedId === 'string') s.selectedId = r.selectedId;
  if (typeof r.explain === 'boolean') s.explain = r.explain;
  if (typeof r.branch === 'string') s.branch = r.branch.slice(0, 255);
  s.drafts = restoreDrafts(r.drafts);
  const c = (r.chips ?? {}) as Record<string, unknown>;
  s.chips = {
    kinds: strings(c.kinds),
    statuses: strings(c.statuses),
    sources: strings(c.sources),
    tags: strings(c.tags),
    from: typeof c.from === 'string' && DAY.test(c.from) ? c.from : '',
    to: typeof c.to === 'string' && DAY.test(c.to) ? c.to : '',
  };
  return s;
}

function restoreDrafts(raw: unknown): Record<string, Draft> {
  const out: Record<string, Draft> = {};
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return out;
  for (const [id, d] of Object.entries(raw as Record<string, unknown>).slice(-MAX_DRAFTS)) {
    const r = (d ?? {}) as Record<string, unknown>;
    const f = (r.form ?? {}) as Record<string, unknown>;
    if (typeof r.base !== 'number' || !Number.isInteger(r.base) || r.base < 0 || typeof r.label !== 'string') continue;
    if (!FORM_FIELDS.every((k) => typeof f[k] === 'string')) continue;
    const form = Object.fromEntries(FORM_FIELDS.map((k) => [k, f[k] as string])) as Form;
    out[id] = {
      label: r.label,
      base: r.base,
      form,
      changed: strings(r.changed).filter((k) => (FORM_FIELDS as readonly string[]).includes(k)),
    };
  }
  return out;
}

/**
 * The drafts after the form of memory `id` changed: kept while it differs from the stored form it was made from,
 * dropped when it is back to that (or `form` is null: saved or discarded). At most MAX_DRAFTS, the newest kept.
 */
export function withDraft(
  drafts: Record<string, Draft>,
  id: string,
  edit: { label: string; form: Form; stored: Form; base: number } | null,
): Record<string, Draft> {
  const { [id]: _old, ...rest } = drafts;
  const changed = edit ? FORM_FIELDS.filter((k) => edit.form[k] !== edit.stored[k]) : [];
  if (!edit || !changed.length) return rest;
  const kept = Object.entries(rest).slice(-(MAX_DRAFTS - 1));
  return { ...Object.fromEntries(kept), [id]: { label: edit.label, base: edit.base, form: edit.form, changed } };
}

/** The protocol scope of a scope choice; undefined = the whole store. */
export function scopeFor(key: ScopeKey, projectNamespace: string | null): Scope | undefined {
  switch (key) {
    case 'project':
      return projectNamespace ? { root: projectNamespace } : { root: 'user', includeUser: false };
    case 'user':
      return { root: 'user', includeUser: false };
    case 'team':
      return { root: 'team', includeUser: false };
    case 'all':
      return undefined;
  }
}

/** The filter chips as the protocol's filter tree (undefined when no chip is set). Statuses go to `include`. */
export function filterFor(chips: Chips): Filter | undefined {
  const leaves: FilterLeaf[] = [];
  if (chips.kinds.length) leaves.push({ field: 'kind', op: 'in', value: chips.kinds });
  if (chips.sources.length) leaves.push({ field: 'source', op: 'in', value: chips.sources });
  if (chips.statuses.length) leaves.push({ field: 'status', op: 'in', value: chips.statuses });
  if (chips.tags.length) leaves.push({ field: 'tags', op: 'hasAny', value: chips.tags });
  if (chips.from) leaves.push({ field: 'updatedAt', op: 'gte', value: `${chips.from}T00:00:00.000Z` });
  if (chips.to) leaves.push({ field: 'updatedAt', op: 'lte', value: `${chips.to}T23:59:59.999Z` });
  if (!leaves.length) return undefined;
  return leaves.length === 1 ? leaves[0] : { and: leaves };
}

/** Statuses other than active are hidden unless asked for; a status chip asks for them. */
export function includeFor(chips: Chips): Include | undefined {
  const inc: Include = {};
  if (chips.statuses.includes('proposed')) inc.proposed = true;
  if (chips.statuses.includes('superseded')) inc.superseded = true;
  return Object.keys(inc).length ? inc : undefined;
}

export function searchParams(s: PersistedState, init: Pick<WebviewInit, 'projectNamespace'>): SearchParams {
  const scope = scopeFor(s.scope, init.projectNamespace);
  const filter = filterFor(s.chips);
  const include = includeFor(s.chips);
  return {
    query: s.query.trim(),
    mode: s.mode,
    limit: SEARCH_LIMIT,
    ...(scope ? { scope } : {}),
    ...(filter ? { filter } : {}),
    ...(include ? { include } : {}),
    ...(s.explain ? { explain: true } : {}),
  };
}

/** Chip toggling: adds the value when absent, removes it when present. */
export function toggle(list: string[], value: string): string[] {
  return list.includes(value) ? list.filter((v) => v !== value) : [...list, value];
}

/** "a, b ,,c" -> ["a", "b", "c"] */
export function splitList(text: string): string[] {
  return [
    ...new Set(
      text
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  ];
}

export interface Segment {
  text: string;
  hit: boolean;
}

/** A snippet with matches wrapped in «…» as text segments (drawn as text, never parsed as HTML). */
export function splitSnippet(snippet: string): Segment[] {
  const out: Segment[] = [];
  const re = /«([^«»]*)»/g;
  let last = 0;
  for (let m = re.exec(snippet); m; m = re.exec(snippet)) {
    if (m.index > last) out.push({ text: snippet.slice(last, m.index), hit: false });
    if (m[1]) out.push({ text: m[1], hit: true });
    last = m.index + m[0].length;
  }
  if (last < snippet.length) out.push({ text: snippet.slice(last), hit: false });
  return out;
}

export function pageCount(total: number, size = PAGE_SIZE): number {
  return Math.max(1, Math.ceil(total / size));
}

export function pageOf<T>(items: T[], page: number, size = PAGE_SIZE): T[] {
  const p = Math.min(Math.max(0, page), pageCount(items.length, size) - 1);
  return items.slice(p * size, p * size + size);
}

export interface ChangeEffects {
  /** Run the current search again. */
  search: boolean;
  /** The open memory changed elsewhere. */
  selected: boolean;
  review: boolean;
  overview: boolean;
}

/** What a memory/didChange must refresh. `access` (a read) changes nothing on screen. */
export function changeEffects(change: DidChangeParams, selectedId: string | null): ChangeEffects {
  if (change.op === 'access') return { search: false, selected: false, review: false, overview: false };
  return { search: true, selected: !!selectedId && change.id === selectedId, review: true, overview: true };
}

/** Collapses bursts of calls (typing, change notifications) into one call after `ms` of quiet. */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(t: unknown): void;
}
/** The real timers, called as plain functions (a browser refuses setTimeout called on another object). */
export const realTimers: Timers = { set: (fn, ms) => setTimeout(fn, ms), clear: (t) => clearTimeout(t as ReturnType<typeof setTimeout>) };

export function debounce<A extends unknown[]>(fn: (...a: A) => void, ms: number, timers: Timers = realTimers) {
  let t: unknown;
  const d = (...a: A) => {
    if (t !== undefined) timers.clear(t);
    t = timers.set(() => {
      t = undefined;
      fn(...a);
    }, ms);
  };
  d.cancel = () => {
    if (t !== undefined) timers.clear(t);
    t = undefined;
  };
  return d;
}

/** "just now", "5 min ago", "3 h ago", "yesterday", "4 days ago", then the date (UTC); a time ahead reads "in …". */
export function relativeTime(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return iso;
  const s = Math.round((now - t) / 1000);
  const ahead = s < 0;
  const a = Math.abs(s);
  const say = (n: number, unit: string) => (ahead ? `in ${n} ${unit}` : `${n} ${unit} ago`);
  if (a < 45) return ahead ? 'in a moment' : 'just now';
  if (a < 3600) return say(Math.max(1, Math.round(a / 60)), 'min');
  if (a < 86400) return say(Math.round(a / 3600), 'h');
  const days = Math.round(a / 86400);
  if (days === 1) return ahead ? 'tomorrow' : 'yesterday';
  if (days < 30) return say(days, 'days');
  return iso.slice(0, 10);
}

/** The exact time, for a tooltip: "2026-03-10 12:00:05 UTC". */
export function exactTime(iso: string): string {
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
}

/**
 * The line above the results: how many (at the page cap it says "first 100", as there may be more), how long it
 * took, and what ran: the search mode, or "newest first" when an empty query lists the scope's newest memories.
 */
export function resultSummary(r: { count: number; limit: number; ms: number; mode: string; listing: boolean; degraded?: string }): string {
  const n = r.count >= r.limit ? `First ${r.limit} results` : r.count === 0 ? 'No results' : `${r.count} result${r.count === 1 ? '' : 's'}`;
  const what = r.listing ? 'newest first' : r.mode === 'fts' ? 'full text' : 'hybrid';
  return `${n} in ${r.ms} ms (${what}${r.degraded ? `, degraded: ${r.degraded}` : ''})`;
}

/** What to try when nothing matched, from what narrowed the search. */
export function noResultsHint(s: Pick<PersistedState, 'query' | 'mode' | 'scope' | 'chips'>): string {
  const tries: string[] = [];
  const c = s.chips;
  if (c.kinds.length || c.statuses.length || c.tags.length || c.sources.length || c.from || c.to) tries.push('clear the filters');
  if (s.query.trim().split(/\s+/).length > 3) tries.push('use fewer words');
  if (s.query.trim() && s.mode === 'fts') tries.push('switch to Hybrid to match by meaning');
  if (s.scope !== 'all') tries.push('search Everything instead of one scope');
  if (!s.query.trim() && !tries.length)
    return 'Nothing is stored here yet: add a memory with "New memory", from the editor, or with `cairn add`.';
  if (!tries.length) return 'Try other words, or a shorter query.';
  return `Try to ${tries.length > 1 ? `${tries.slice(0, -1).join(', ')} or ${tries[tries.length - 1]}` : tries[0]}.`;
}

/**
 * The overview's headline counts, taken from the same rows as its tables so they always agree: live memories in
 * scope (the by-namespace, by-kind and live by-status rows each add up to it) and deleted ones in scope.
 */
export function overviewTotals(o: { byNamespace: { count: number }[]; byStatus: { name: string; count: number }[] }): {
  live: number;
  deleted: number;
} {
  return {
    live: o.byNamespace.reduce((a, r) => a + r.count, 0),
    deleted: o.byStatus.find((r) => r.name === 'deleted')?.count ?? 0,
  };
}

/**
 * A date typed into the From/To fields (a text field in the editor's style, not the browser's date picker):
 * empty clears it; YYYY-MM-DD (one-digit month or day allowed) is a day; anything else, or a day that does not
 * exist, is an error in words.
 */
export function parseDay(text: string): { day: string } | { error: string } {
  const t = text.trim();
  if (!t) return { day: '' };
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(t);
  if (!m) return { error: 'Type a date as YYYY-MM-DD, such as 2026-05-01, or leave it empty.' };
  const day = `${m[1]}-${m[2].padStart(2, '0')}-${m[3].padStart(2, '0')}`;
  const d = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== day) return { error: `${t} is not a day of the calendar.` };
  return { day };
}

/** Why a From/To pair cannot be used (From after To), or null. */
export function dayRangeError(from: string, to: string): string | null {
  return from && to && from > to ? 'From is after To: no memory can match; swap them.' : null;
}
