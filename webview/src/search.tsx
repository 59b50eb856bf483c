/** Search: one field (debounced as you type), mode, scope, filter chips, highlighted results, explain, paging. */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { SearchResult } from '../../daemon/src/protocol/types';
import {
  dayRangeError,
  debounce,
  noResultsHint,
  pageCount,
  pageOf,
  parseDay,
  resultSummary,
  SCOPES,
  SEARCH_LIMIT,
  searchParams,
  splitList,
  toggle,
  type PersistedState,
  type ScopeKey,
} from './state';
import { ErrorLine, errorText, Icon, Snippet, useEnv, type Shown } from './ui';

const SCOPE_LABEL: Record<ScopeKey, string> = { project: 'This project', user: 'User', team: 'Team', all: 'Everything' };

export function SearchTab({ s, set, onNew }: { s: PersistedState; set: (p: Partial<PersistedState>) => void; onNew: () => void }) {
  const env = useEnv();
  const [result, setResult] = useState<(SearchResult & { ms: number; query: string; listing: boolean }) | null>(null);
  const [error, setError] = useState<Shown>(null);
  const [busy, setBusy] = useState(false);
  const seq = useRef(0);
  const run = useMemo(
    () =>
      debounce((state: PersistedState) => {
        const mine = ++seq.current;
        const t0 = performance.now();
        setBusy(true);
        const params = searchParams(state, env.init);
        // An empty query lists the newest memories of the scope instead.
        const request: Promise<SearchResult> = params.query
          ? env.rpc.request('search', params)
          : env.rpc
              .request('list', {
                ...(params.scope ? { scope: params.scope } : {}),
                ...(params.filter ? { filter: params.filter } : {}),
                ...(params.include ? { include: params.include } : {}),
                limit: params.limit,
              })
              .then((l) => ({
                mode: params.mode ?? 'hybrid',
                hits: l.items.map((memory) => ({ memory, score: 0, snippet: memory.summary ?? memory.value.slice(0, 200) })),
              }));
        request
          .then((r) => {
            if (mine !== seq.current) return;
            setResult({ ...r, ms: Math.round(performance.now() - t0), query: state.query, listing: !params.query });
            setError(null);
          })
          .catch((e) => mine === seq.current && setError(errorText(e)))
          .finally(() => mine === seq.current && setBusy(false));
      }, 200),
    [env.rpc, env.init],
  );
  useEffect(() => run(s), [s.query, s.mode, s.scope, s.chips, s.explain, env.changeTick]);
  useEffect(() => () => run.cancel(), []);

  const hits = result?.hits ?? [];
  const pages = pageCount(hits.length);
  const page = Math.min(s.page, pages - 1);
  const teamScope = env.hasTeam;
  return (
    <section aria-label="Search" class="search">
      <div class="row">
        <input
          type="search"
          class="grow"
          aria-label="Search memories"
          placeholder="Search memories (words or meaning)"
          value={s.query}
          onInput={(e) => set({ query: (e.target as HTMLInputElement).value, page: 0 })}
        />
        <select
          aria-label="Search mode"
          value={s.mode}
          onChange={(e) => set({ mode: (e.target as HTMLSelectElement).value as PersistedState['mode'], page: 0 })}
        >
          <option value="hybrid">Hybrid</option>
          <option value="fts">Full text</option>
        </select>
        <select
          aria-label="Scope"
          value={s.scope}
          onChange={(e) => set({ scope: (e.target as HTMLSelectElement).value as ScopeKey, page: 0 })}
        >
          {SCOPES.filter((k) => k !== 'team' || teamScope).map((k) => (
            <option value={k}>{SCOPE_LABEL[k]}</option>
          ))}
        </select>
        <button type="button" class="secondary" onClick={onNew}>
          <Icon name="add" />
          New memory
        </button>
      </div>
      <div class="chips" role="group" aria-labelledby="chips-kind">
        <span class="group-label" id="chips-kind">
          Kind
        </span>
        {env.init.kinds.map((k) => (
          <button
            type="button"
            class="chip"
            aria-pressed={s.chips.kinds.includes(k)}
            onClick={() => set({ chips: { ...s.chips, kinds: toggle(s.chips.kinds, k) }, page: 0 })}
          >
            {k}
          </button>
        ))}
      </div>
      <div class="chips" role="group" aria-labelledby="chips-status">
        <span class="group-label" id="chips-status">
          Status
        </span>
        {env.init.statuses.map((k) => (
          <button
            type="button"
            class="chip status"
            aria-pressed={s.chips.statuses.includes(k)}
            onClick={() => set({ chips: { ...s.chips, statuses: toggle(s.chips.statuses, k) }, page: 0 })}
          >
            {k}
          </button>
        ))}
      </div>
      <div class="row small">
        <label>
          Tags{' '}
          <input
            aria-label="Tags (comma separated)"
            value={s.chips.tags.join(', ')}
            onChange={(e) => set({ chips: { ...s.chips, tags: splitList((e.target as HTMLInputElement).value) }, page: 0 })}
          />
        </label>
        <label>
          Source{' '}
          <input
            aria-label="Sources (comma separated)"
            value={s.chips.sources.join(', ')}
            onChange={(e) => set({ chips: { ...s.chips, sources: splitList((e.target as HTMLInputElement).value) }, page: 0 })}
          />
        </label>
        <DayField label="From" name="Updated from" value={s.chips.from} onDay={(from) => set({ chips: { ...s.chips, from }, page: 0 })} />
        <DayField label="To" name="Updated to" value={s.chips.to} onDay={(to) => set({ chips: { ...s.chips, to }, page: 0 })} />
        <label>
          <input type="checkbox" checked={s.explain} onChange={(e) => set({ explain: (e.target as HTMLInputElement).checked })} /> Explain
        </label>
      </div>
      {dayRangeError(s.chips.from, s.chips.to) ? (
        <p class="field-error" role="alert">
          {dayRangeError(s.chips.from, s.chips.to)}
        </p>
      ) : null}
      <ErrorLine error={error} />
      <div class={busy ? 'busy' : 'idle'} aria-hidden="true" />
      <p class="meta" role="status" aria-live="polite" data-testid="result-count">
        {busy && !result
          ? 'Searching…'
          : result
            ? `${resultSummary({ count: hits.length, limit: SEARCH_LIMIT, ms: result.ms, mode: result.mode, listing: result.listing, degraded: result.degraded })}${busy ? ' · searching…' : ''}`
            : ''}
      </p>
      {result && !hits.length && !busy ? <p class="hint">{noResultsHint(s)}</p> : null}
      <ul class="results" aria-label="Search results" aria-busy={busy}>
        {pageOf(hits, page).map((h) => (
          <li key={h.memory.id}>
            <button type="button" class="result" onClick={() => env.select(h.memory.id)}>
              <span class="key">{h.memory.key}</span>
              <span class="ns">{h.memory.namespace}</span>
              <span class={`badge kind-${h.memory.kind}`}>{h.memory.kind}</span>
              {h.memory.status !== 'active' ? <span class="badge">{h.memory.status}</span> : null}
              <Snippet text={h.snippet} />
              {h.explain ? (
                <span class="explain">
                  {`score ${h.score.toFixed(3)} · fts ${h.explain.fts ? `#${h.explain.fts.rank}` : '–'} · vector ${h.explain.vector ? `#${h.explain.vector.rank}` : '–'} · fused ${h.explain.fused.toFixed(3)} · boost ${h.explain.boost.toFixed(3)}`}
                </span>
              ) : null}
            </button>
          </li>
        ))}
      </ul>
      {pages > 1 ? (
        <nav class="row pager" aria-label="Result pages">
          <button type="button" disabled={page === 0} onClick={() => set({ page: page - 1 })}>
            Previous
          </button>
          <span>{`Page ${page + 1} of ${pages}`}</span>
          <button type="button" disabled={page >= pages - 1} onClick={() => set({ page: page + 1 })}>
            Next
          </button>
        </nav>
      ) : null}
    </section>
  );
}

/**
 * A day typed as YYYY-MM-DD in a text field drawn like the editor's inputs (the browser's date control shows
 * "mm/dd/yyyy" and a picker that looks like no part of VS Code). Applied on Enter or leaving the field; a
 * mistyped day is said in words under the field and leaves the filter as it was.
 */
function DayField({ label, name, value, onDay }: { label: string; name: string; value: string; onDay: (day: string) => void }) {
  const [text, setText] = useState(value);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    setText(value);
    setProblem(null);
  }, [value]);
  const id = `day-${label.toLowerCase()}`;
  const apply = () => {
    const r = parseDay(text);
    if ('error' in r) return setProblem(r.error);
    setProblem(null);
    setText(r.day);
    if (r.day !== value) onDay(r.day);
  };
  return (
    <label class="day">
      {label}{' '}
      <input
        aria-label={name}
        placeholder="YYYY-MM-DD"
        size={11}
        inputMode="numeric"
        value={text}
        aria-invalid={problem ? 'true' : undefined}
        aria-describedby={problem ? `${id}-error` : undefined}
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
        onChange={apply}
        onKeyDown={(e) => e.key === 'Enter' && apply()}
      />
      {problem ? (
        <span class="field-error" id={`${id}-error`} role="alert">
          {problem}
        </span>
      ) : null}
    </label>
  );
}
