/**
 * Timeline: episodes by time (docs/episodes.md), an episode's events with their files (a click opens the code at the
 * range), search over events with each hit shown in context and expandable (events/search, then events/expand), and
 * a form to propose a memory from chosen events (episodes/propose: it waits in the Review tab with its source events).
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Episode, EpisodeEvent, EventHit, EventSearchResult, Scope } from '../../daemon/src/protocol/types';
import {
  anchorLabel,
  draftProblem,
  EPISODE_PAGE,
  eventAnchor,
  eventDetail,
  eventSearchParams,
  expandParams,
  groupByDay,
  proposeParams,
  type ProposalDraft,
} from './episodes';
import { debounce, relativeTime, scopeFor, type ScopeKey } from './state';
import { ErrorLine, errorText, label, Snippet, useEnv, type Shown } from './ui';

/** Events shown each side when a hit is expanded further. */
const EXPANDED = 10;

export function EventRow({
  ev,
  hit,
  picked,
  onPick,
}: {
  ev: EpisodeEvent;
  hit?: boolean;
  /** Without onPick the event cannot be chosen for a proposal (the Review tab's source events). */
  picked?: boolean;
  onPick?: (position: number) => void;
}) {
  const env = useEnv();
  const [error, setError] = useState<Shown>(null);
  const anchor = eventAnchor(ev);
  return (
    <li class={`event ${hit ? 'hit' : ''}`} aria-current={hit ? 'true' : undefined}>
      <div class="row">
        {onPick ? (
          <input
            type="checkbox"
            aria-label={`Use event #${ev.position} for a proposal`}
            checked={!!picked}
            onChange={() => onPick(ev.position)}
          />
        ) : null}
        <span class="badge">{ev.kind}</span>
        <span class="meta">{`#${ev.position} · ${relativeTime(ev.at, Date.now())} · ${eventDetail(ev)}${ev.secret ? ' · secret' : ''}`}</span>
        {anchor ? (
          <button
            type="button"
            class="link"
            aria-label={`Open ${anchorLabel(anchor)}`}
            onClick={() =>
              env.rpc.request('host/openAnchor', { anchor }).then(
                () => setError(null),
                (e) => setError(errorText(e)),
              )
            }
          >
            {anchorLabel(anchor)}
          </button>
        ) : null}
      </div>
      <p class="value event-text">{ev.text}</p>
      <ErrorLine error={error} />
    </li>
  );
}

/** A proposal's source events (properties.sourceEvents), each read with events/expand, shown next to it in the Review tab. */
export function SourceEvents({ positions, scope }: { positions: number[]; scope: Scope | undefined }) {
  const env = useEnv();
  const [events, setEvents] = useState<EpisodeEvent[] | null>(null);
  const [error, setError] = useState<Shown>(null);
  useEffect(() => {
    Promise.allSettled(positions.map((p) => env.rpc.request('eventsExpand', expandParams(p, 0, scope)))).then((rs) => {
      const found = rs.flatMap((r) => (r.status === 'fulfilled' ? r.value.events : []));
      const missing = positions.length - found.length;
      setEvents(found);
      setError(missing ? `${missing} source event${missing === 1 ? ' is' : 's are'} not in this scope or gone.` : null);
    });
  }, [positions.join(','), env.changeTick]);
  if (!events) return <p class="meta">Loading source events…</p>;
  return (
    <div class="sources">
      <p class="meta">{`From ${positions.length} event${positions.length === 1 ? '' : 's'}:`}</p>
      <ol class="events" aria-label="Source events">
        {events.map((ev) => (
          <EventRow key={ev.position} ev={ev} />
        ))}
      </ol>
      {error ? <p class="meta">{error}</p> : null}
    </div>
  );
}

function ProposeForm({ events, scope, onDone }: { events: number[]; scope: Scope | undefined; onDone: (message: string) => void }) {
  const env = useEnv();
  const [d, setD] = useState<ProposalDraft>({ key: '', value: '', kind: 'fact' });
  const [error, setError] = useState<Shown>(null);
  const submit = (e: Event) => {
    e.preventDefault();
    const problem = draftProblem(d);
    if (problem) return setError(problem);
    env.rpc.request('episodesPropose', proposeParams(d, events, scope)).then(
      (r) => {
        setError(null);
        setD({ key: '', value: '', kind: d.kind });
        onDone(`Proposed ${label(r.memory)} from events ${r.sourceEvents.map((p) => `#${p}`).join(', ')}: approve it in the Review tab.`);
      },
      (err) => setError(errorText(err)),
    );
  };
  return (
    <form class="propose" aria-label="Propose a memory from the chosen events" onSubmit={submit}>
      <p class="meta">{`Propose a memory from ${events.length} chosen event${events.length === 1 ? '' : 's'} (${events.map((p) => `#${p}`).join(', ')}):`}</p>
      <div class="row">
        <input
          aria-label="Proposal key"
          placeholder="key"
          value={d.key}
          onInput={(e) => setD({ ...d, key: (e.target as HTMLInputElement).value })}
        />
        <select
          aria-label="Proposal kind"
          value={d.kind}
          onChange={(e) => setD({ ...d, kind: (e.target as HTMLSelectElement).value as ProposalDraft['kind'] })}
        >
          {(['fact', 'decision', 'procedure', 'preference'] as const).map((k) => (
            <option value={k}>{k}</option>
          ))}
        </select>
      </div>
      <textarea
        aria-label="Proposal value"
        placeholder="What the events show, as a memory"
        value={d.value}
        onInput={(e) => setD({ ...d, value: (e.target as HTMLTextAreaElement).value })}
      />
      <div class="row">
        <button type="submit">Propose for review</button>
      </div>
      <ErrorLine error={error} />
    </form>
  );
}

function HitView({
  hit,
  scope,
  picked,
  onPick,
}: {
  hit: EventHit;
  scope: Scope | undefined;
  picked: number[];
  onPick: (p: number) => void;
}) {
  const env = useEnv();
  const [events, setEvents] = useState<EpisodeEvent[]>(hit.context ?? [hit.event]);
  const [expanded, setExpanded] = useState(false);
  const [error, setError] = useState<Shown>(null);
  const expand = () =>
    env.rpc.request('eventsExpand', expandParams(hit.position, EXPANDED, scope)).then(
      (r) => {
        setEvents(r.events);
        setExpanded(true);
        setError(null);
      },
      (e) => setError(errorText(e)),
    );
  return (
    <li class="hit-group">
      <div class="row">
        <span class="key">{hit.episode.title}</span>
        <span class="meta">{`${hit.episode.source} · ${relativeTime(hit.event.at, Date.now())} · score ${hit.score.toFixed(3)}`}</span>
      </div>
      <p class="meta">
        <Snippet text={hit.snippet} />
      </p>
      <ol class="events" aria-label={`Event #${hit.position} in context`}>
        {events.map((ev) => (
          <EventRow key={ev.position} ev={ev} hit={ev.position === hit.position} picked={picked.includes(ev.position)} onPick={onPick} />
        ))}
      </ol>
      {!expanded ? (
        <button type="button" aria-label={`Expand event #${hit.position}`} onClick={() => void expand()}>
          {`Show ${EXPANDED} events each side`}
        </button>
      ) : null}
      <ErrorLine error={error} />
    </li>
  );
}

function EpisodeView({
  episode,
  scope,
  picked,
  onPick,
  tick,
}: {
  episode: Episode;
  scope: Scope | undefined;
  tick: number;
  picked: number[];
  onPick: (p: number) => void;
}) {
  const env = useEnv();
  const [events, setEvents] = useState<EpisodeEvent[] | null>(null);
  const [error, setError] = useState<Shown>(null);
  useEffect(() => {
    env.rpc.request('episodesGet', { id: episode.id, limit: EPISODE_PAGE, ...(scope ? { scope } : {}) }).then(
      (r) => {
        setEvents(r.events);
        setError(null);
      },
      (e) => setError(errorText(e)),
    );
  }, [episode.id, env.changeTick, tick]);
  if (error) return <ErrorLine error={error} />;
  if (!events) return <p class="meta">Loading events…</p>;
  return (
    <ol class="events" aria-label={`Events of ${episode.title}`}>
      {events.map((ev) => (
        <EventRow key={ev.position} ev={ev} picked={picked.includes(ev.position)} onPick={onPick} />
      ))}
      {episode.events > events.length ? <li class="meta">{`${episode.events - events.length} more events not shown.`}</li> : null}
    </ol>
  );
}

export function TimelineTab({ scope }: { scope: ScopeKey }) {
  const env = useEnv();
  const sc = scopeFor(scope, env.init.projectNamespace);
  const [query, setQuery] = useState('');
  const [episodes, setEpisodes] = useState<Episode[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [result, setResult] = useState<(EventSearchResult & { query: string }) | null>(null);
  const [picked, setPicked] = useState<number[]>([]);
  const [done, setDone] = useState<string | null>(null);
  const [error, setError] = useState<Shown>(null);
  /** Bumped by Refresh: events come with no change notification, so new ones show on demand. */
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    env.rpc.request('episodesList', { ...(sc ? { scope: sc } : {}), limit: 100 }).then(
      (r) => {
        setEpisodes(r.episodes);
        setError(null);
      },
      (e) => setError(errorText(e)),
    );
  }, [scope, env.changeTick, tick]);
  const search = useMemo(
    () =>
      debounce((q: string) => {
        const mine = ++seq.current;
        if (!q.trim()) return setResult(null);
        env.rpc.request('eventsSearch', eventSearchParams(q, scopeFor(scope, env.init.projectNamespace))).then(
          (r) => mine === seq.current && (setResult({ ...r, query: q }), setError(null)),
          (e) => mine === seq.current && setError(errorText(e)),
        );
      }, 200),
    [scope],
  );
  useEffect(() => () => search.cancel(), [search]);
  useEffect(() => search(query), [search, tick]); // the same query again in a new scope, or on Refresh
  const onPick = (p: number) => setPicked((old) => (old.includes(p) ? old.filter((x) => x !== p) : [...old, p]));
  const groups = groupByDay(episodes ?? []);
  return (
    <section aria-label="Timeline" class="timeline">
      <div class="row">
        <input
          type="search"
          class="grow"
          aria-label="Search events"
          placeholder="Search what happened (words, meaning, “last week”)"
          value={query}
          onInput={(e) => {
            const q = (e.target as HTMLInputElement).value;
            setQuery(q);
            search(q);
          }}
        />
        <button type="button" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
      </div>
      {picked.length ? (
        <ProposeForm
          events={picked}
          scope={sc}
          onDone={(m) => {
            setDone(m);
            setPicked([]);
          }}
        />
      ) : null}
      {done ? (
        <p class="meta" role="status">
          {done}
        </p>
      ) : null}
      <ErrorLine error={error} />
      {result ? (
        <div>
          <p class="meta" role="status">
            {`${result.hits.length} event${result.hits.length === 1 ? '' : 's'} for “${result.query}”${result.time ? ` · ${result.time.reading}` : ''}${result.degraded ? ` · ${result.degraded}` : ''}`}
          </p>
          <ul class="results" aria-label="Event search results">
            {result.hits.map((h) => (
              <HitView key={`${result.query}:${h.position}`} hit={h} scope={sc} picked={picked} onPick={onPick} />
            ))}
          </ul>
        </div>
      ) : !episodes ? (
        <p class="meta">Loading…</p>
      ) : !episodes.length ? (
        <p class="meta">
          No episodes in this scope yet. Turn on the cairn.episodes.capture setting and use @cairn or the Cairn tools, or import a
          transcript with `cairn episodes import`.
        </p>
      ) : (
        groups.map((g) => (
          <div key={g.day} class="day">
            <h2 class="small">{g.day}</h2>
            <ul class="results" aria-label={`Episodes of ${g.day}`}>
              {g.episodes.map((ep) => (
                <li key={ep.id}>
                  <button
                    type="button"
                    class="result"
                    aria-expanded={open === ep.id}
                    onClick={() => setOpen(open === ep.id ? null : ep.id)}
                  >
                    <span class="key">{ep.title}</span>{' '}
                    <span class="meta">{`${relativeTime(ep.startedAt, Date.now())} · ${ep.source} · ${ep.events} event${ep.events === 1 ? '' : 's'}${ep.branch ? ` · ${ep.branch}` : ''}${ep.endedAt ? '' : ' · open'}`}</span>
                  </button>
                  {open === ep.id ? <EpisodeView episode={ep} scope={sc} tick={tick} picked={picked} onPick={onPick} /> : null}
                </li>
              ))}
            </ul>
          </div>
        ))
      )}
    </section>
  );
}
