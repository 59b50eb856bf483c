/**
 * The dashboard's state that is not drawing: scope and filter chips turned into the protocol's scope and
 * filter tree, search params, snippet highlights, paging, what a store change must refresh, and the state
 * kept across reloads (vscode.setState). Pure functions, unit-tested in test/unit/webview-*.test.ts.
 */
import type { DidChangeParams, Filter, FilterLeaf, Include, Scope, SearchParams } from '../../daemon/src/protocol/types';
import type { WebviewInit } from '../../daemon/src/protocol/webview';

export const TABS = ['search', 'review', 'timeline', 'overview', 'import'] as const;
export type Tab = (typeof TABS)[number];
export const SCOPES = ['project', 'user', 'team', 'all'] as const;
export type ScopeKey = (typeof SCOPES)[number];
export const PAGE_SIZE = 20;
/** Results fetched per search (the daemon's cap is 200); pages are cut from these. */
export const SEARCH_LIMIT = 100;

export interface Chips {
  kinds: string[];
  statuses: string[];
  sources: string[];
  tags: string[];
  /** yyyy-mm-dd, inclusive, on updatedAt (UTC). */
  from: string;
  to: string;
}

export interface PersistedState {
  tab: Tab;
  query: string;
  mode: 'hybrid' | 'fts';
  scope: ScopeKey;
  chips: Chips;
  page: number;
  selectedId: string | null;
  explain: boolean;
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
