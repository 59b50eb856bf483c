/** The dashboard: tabs (search, review, timeline, overview, import/export) beside the open memory. */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ToWebview, WebviewInit } from '../../daemon/src/protocol/webview';
import { Detail } from './detail';
import { ImportTab } from './importer';
import { OverviewTab } from './overview';
import { ReviewTab } from './review';
import type { RpcClient } from './rpc';
import { SearchTab } from './search';
import { TimelineTab } from './timeline';
import { changeEffects, debounce, TABS, type PersistedState, type Tab } from './state';
import { EnvContext, ErrorLine, errorText, type Env } from './ui';

const TAB_LABEL: Record<Tab, string> = {
  search: 'Search',
  review: 'Review',
  timeline: 'Timeline',
  overview: 'Overview',
  import: 'Import / Export',
};

export interface AppProps {
  rpc: RpcClient;
  initial: PersistedState;
  persist: (s: PersistedState) => void;
  /** Subscribe to messages from the extension that are not replies. */
  onMessage: (fn: (m: ToWebview) => void) => void;
}

export function App({ rpc, initial, persist, onMessage }: AppProps) {
  const [s, setS] = useState(initial);
  const [init, setInit] = useState<WebviewInit | null>(null);
  const [hasTeam, setHasTeam] = useState(false);
  const [tick, setTick] = useState(0);
  const [connected, setConnected] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const set = (p: Partial<PersistedState>) => setS((old) => ({ ...old, ...p }));
  useEffect(() => persist(s), [s]);
  useEffect(() => {
    rpc.request('host/init', {}).then(
      (i) => {
        setInit(i);
        setConnected(i.connected);
      },
      (e) => setError(errorText(e)),
    );
    rpc.request('namespacesList', { root: 'team' }).then(
      (r) => setHasTeam(r.namespaces.length > 0),
      () => undefined,
    );
  }, []);
  const bump = useMemo(() => debounce(() => setTick((t) => t + 1), 150), []);
  useEffect(() => {
    onMessage((m) => {
      if (m.type === 'didChange' && changeEffects(m.change, null).search) bump();
      if (m.type === 'connection') {
        setConnected(m.connected);
        if (m.connected) bump();
      }
    });
  }, []);
  if (!init) return error ? <ErrorLine error={error} /> : <p class="meta">Connecting…</p>;
  const env: Env = { rpc, init, changeTick: tick, hasTeam, select: (id) => set({ selectedId: id }) };
  const onKey = (e: KeyboardEvent) => {
    const i = TABS.indexOf(s.tab);
    if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      const next = TABS[(i + (e.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length];
      set({ tab: next });
      (document.getElementById(`tab-${next}`) as HTMLElement | null)?.focus();
    }
  };
  return (
    <EnvContext.Provider value={env}>
      <main class={`dashboard ${s.selectedId ? 'with-detail' : ''}`}>
        <h1 class="visually-hidden">Cairn Dashboard</h1>
        {!connected ? (
          <p class="notice" role="alert">
            Cairn is not connected to its daemon; the dashboard updates when it is back.
          </p>
        ) : null}
        <div class="pane">
          <div role="tablist" aria-label="Dashboard sections" class="tabs" onKeyDown={onKey}>
            {TABS.map((t) => (
              <button
                type="button"
                role="tab"
                id={`tab-${t}`}
                aria-selected={s.tab === t}
                aria-controls={`panel-${t}`}
                tabIndex={s.tab === t ? 0 : -1}
                onClick={() => set({ tab: t })}
              >
                {TAB_LABEL[t]}
              </button>
            ))}
          </div>
          <div role="tabpanel" id={`panel-${s.tab}`} aria-labelledby={`tab-${s.tab}`}>
            {s.tab === 'search' ? <SearchTab s={s} set={set} /> : null}
            {s.tab === 'review' ? <ReviewTab scope={s.scope} /> : null}
            {s.tab === 'timeline' ? <TimelineTab scope={s.scope} /> : null}
            {s.tab === 'overview' ? <OverviewTab scope={s.scope} /> : null}
            {s.tab === 'import' ? <ImportTab /> : null}
          </div>
        </div>
        {s.selectedId ? (
          <div class="pane detail-pane">
            <Detail id={s.selectedId} />
          </div>
        ) : null}
      </main>
    </EnvContext.Provider>
  );
}
