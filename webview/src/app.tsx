/** The dashboard: tabs (search, review, timeline, overview, branches, import/export) beside the open memory. */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ToWebview, WebviewInit } from '../../daemon/src/protocol/webview';
import { BranchesTab } from './branch-tab';
import { NewMemory } from './create';
import { Detail } from './detail';
import { ImportTab } from './importer';
import { OverviewTab } from './overview';
import { ReviewTab } from './review';
import type { RpcClient } from './rpc';
import { SearchTab } from './search';
import { TimelineTab } from './timeline';
import { discardQuestion, type Question } from './confirm';
import { changeEffects, debounce, NEW_MEMORY, REVIEW_LIMIT, scopeFor, TABS, withDraft, type PersistedState, type Tab } from './state';
import { EnvContext, ErrorLine, errorText, Icon, type Env, type Notice, type Shown } from './ui';

const TAB_LABEL: Record<Tab, string> = {
  search: 'Search',
  review: 'Review',
  timeline: 'Timeline',
  overview: 'Overview',
  branches: 'Branches',
  import: 'Import / Export',
};
const TAB_ICON: Record<Tab, string> = {
  search: 'search',
  review: 'inbox',
  timeline: 'history',
  overview: 'graph',
  branches: 'git-branch',
  import: 'arrow-swap',
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
  const [error, setError] = useState<Shown>(null);
  const [notice, setNotice] = useState<Notice | null>(null);
  const [undoing, setUndoing] = useState(false);
  const [reviewCount, setReviewCount] = useState<number | null>(null);
  const set = (p: Partial<PersistedState>) => setS((old) => ({ ...old, ...p }));
  // the latest state, for questions asked from callbacks made during an older render
  const latest = useRef(s);
  latest.current = s;
  useEffect(() => persist(s), [s]);
  useEffect(() => {
    rpc.request('host/init', {}).then(
      (i) => {
        setInit(i);
        setConnected(i.connected);
        if (i.show) set({ tab: i.show.tab, ...(i.show.branch ? { branch: i.show.branch } : {}) });
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
      if (m.type === 'show') set({ tab: m.show.tab, ...(m.show.branch ? { branch: m.show.branch } : {}) });
      if (m.type === 'connection') {
        setConnected(m.connected);
        if (m.connected) bump();
      }
    });
  }, []);
  // the count on the Review tab: proposed memories in scope
  useEffect(() => {
    if (!init) return;
    const sc = scopeFor(s.scope, init.projectNamespace);
    rpc
      .request('list', {
        ...(sc ? { scope: sc } : {}),
        filter: { field: 'status', op: 'eq', value: 'proposed' },
        include: { proposed: true },
        limit: REVIEW_LIMIT,
      })
      .then(
        (r) => setReviewCount(r.items.length),
        () => setReviewCount(null),
      );
  }, [init, s.scope, tick]);
  if (!init) return error ? <ErrorLine error={error} /> : <p class="meta">Connecting…</p>;
  const ask = (q: Question) => rpc.request('host/confirm', q).then((r) => r.confirmed);
  const select = async (id: string | null) => {
    const cur = latest.current.selectedId;
    const draft = cur && cur !== id ? latest.current.drafts[cur] : undefined;
    if (cur && draft) {
      const then = id ? 'Another memory opens instead.' : 'The memory closes.';
      const ok = await ask(discardQuestion(draft.label, draft.changed, then)).catch(() => false);
      if (!ok) return;
      setS((old) => ({ ...old, drafts: withDraft(old.drafts, cur, null) }));
    }
    set({ selectedId: id });
  };
  const env: Env = {
    rpc,
    init,
    changeTick: tick,
    hasTeam,
    select: (id) => void select(id),
    drafts: s.drafts,
    setDraft: (id, edit) => setS((old) => ({ ...old, drafts: withDraft(old.drafts, id, edit) })),
    ask,
    notify: setNotice,
  };
  const undo = async () => {
    if (!notice?.undo) return;
    setUndoing(true);
    try {
      await notice.undo();
      setNotice({ text: `Undone: ${notice.text.replace(/\.$/, '')}.` });
    } catch (e) {
      setNotice({ text: `Could not undo: ${errorText(e).text}` });
    } finally {
      setUndoing(false);
    }
  };
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
        {notice ? (
          <div class="toast" role="status">
            <span>{notice.text}</span>
            {notice.undo ? (
              <button type="button" class="secondary" disabled={undoing} onClick={undo}>
                Undo
              </button>
            ) : null}
            <button type="button" class="icon" aria-label="Dismiss" title="Dismiss" onClick={() => setNotice(null)}>
              <Icon name="close" />
            </button>
          </div>
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
                <Icon name={TAB_ICON[t]} />
                {TAB_LABEL[t]}
                {t === 'review' && reviewCount ? (
                  <span class="badge count">
                    {reviewCount >= REVIEW_LIMIT ? `${REVIEW_LIMIT}+` : reviewCount}
                    <span class="visually-hidden"> waiting</span>
                  </span>
                ) : null}
              </button>
            ))}
          </div>
          <div role="tabpanel" id={`panel-${s.tab}`} aria-labelledby={`tab-${s.tab}`}>
            {s.tab === 'search' ? <SearchTab s={s} set={set} onNew={() => env.select(NEW_MEMORY)} /> : null}
            {s.tab === 'review' ? <ReviewTab scope={s.scope} /> : null}
            {s.tab === 'timeline' ? <TimelineTab scope={s.scope} /> : null}
            {s.tab === 'overview' ? <OverviewTab scope={s.scope} /> : null}
            {s.tab === 'branches' ? <BranchesTab selected={s.branch} select={(branch) => set({ branch })} /> : null}
            {s.tab === 'import' ? <ImportTab /> : null}
          </div>
        </div>
        {s.selectedId ? (
          <div class="pane detail-pane">
            {s.selectedId === NEW_MEMORY ? (
              <NewMemory onCreated={(id) => set({ selectedId: id })} onCancel={() => set({ selectedId: null })} />
            ) : (
              <Detail id={s.selectedId} />
            )}
          </div>
        ) : null}
      </main>
    </EnvContext.Provider>
  );
}
