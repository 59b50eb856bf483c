/**
 * One memory: the edit form (edit-form.tsx), history with diffs and restore (memory-history.tsx), the relations
 * graph with link/unlink and "Used by" from the injection log (relations.tsx), as tabs.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Memory } from '../../daemon/src/protocol/types';
import { deleteQuestion, discardQuestion, forgetQuestion } from './confirm';
import { ErrorLine, errorText, Icon, label, Time, useEnv, type Shown } from './ui';

import { EditForm } from './edit-form';
import { History } from './memory-history';
import { Relations, UsedBy } from './relations';
type Sub = 'edit' | 'history' | 'relations' | 'usedBy';
const SUBS: [Sub, string][] = [
  ['edit', 'Details'],
  ['history', 'History'],
  ['relations', 'Relations'],
  ['usedBy', 'Used by'],
];

export function Detail({ id }: { id: string }) {
  const env = useEnv();
  const [memory, setMemory] = useState<Memory | null>(null);
  const [error, setError] = useState<Shown>(null);
  const [sub, setSub] = useState<Sub>('edit');
  const [changedElsewhere, setChangedElsewhere] = useState(false);
  const draft = env.drafts[id];
  const load = () =>
    env.rpc
      .request('get', { id, includeDeleted: true })
      .then((m) => {
        setMemory(m);
        setError(null);
        // an edit kept from before (hidden panel, reload) was made from an older version: saving shows the conflict
        const d = env.drafts[id];
        setChangedElsewhere(!!d && d.base !== m.version);
      })
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    setMemory(null);
    void load();
  }, [id]);
  // A change elsewhere reloads the memory, unless the user is editing it: then it is announced, and saving shows the conflict.
  useEffect(() => {
    if (!memory || env.changeTick === 0) return;
    if (env.drafts[id]) {
      void env.rpc.request('get', { id, includeDeleted: true }).then(
        (m) => m.version !== env.drafts[id]?.base && setChangedElsewhere(true),
        () => undefined,
      );
    } else void load();
  }, [env.changeTick]);

  if (!memory) return error ? <ErrorLine error={error} /> : <p class="meta">Loading…</p>;
  const act = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
      setError(null);
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  };
  /** Acting on the stored memory drops an unsaved edit of it: ask first. */
  const discardFirst = async (then: string): Promise<boolean> => {
    const d = env.drafts[id];
    if (!d) return true;
    if (!(await env.ask(discardQuestion(d.label, d.changed, then)).catch(() => false))) return false;
    env.setDraft(id, null);
    return true;
  };
  const del = async () => {
    if (!(await env.ask(deleteQuestion(memory, !!draft)).catch(() => false))) return;
    env.setDraft(id, null);
    await act(async () => {
      await env.rpc.request('delete', { id: memory.id, actor: 'dashboard', reason: 'deleted in the dashboard' });
      env.notify({
        text: `Deleted ${label(memory)}.`,
        undo: () => env.rpc.request('restore', { id: memory.id, actor: 'dashboard', reason: 'undo of a delete in the dashboard' }),
      });
    });
  };
  const forget = async () => {
    if (!(await env.ask(forgetQuestion(memory, !!draft)).catch(() => false))) return;
    env.setDraft(id, null);
    await act(async () => {
      await env.rpc.request('forget', { id: memory.id, actor: 'dashboard', reason: 'forgotten in the dashboard' });
      env.notify({ text: `Forgot ${label(memory)}; Cairn refuses this value in ${memory.namespace} from now on.` });
    });
  };
  return (
    <section class="detail" aria-label={`Memory ${label(memory)}`}>
      <header>
        <h2>{memory.key}</h2>
        <p class="meta">
          {`${memory.namespace} · ${memory.kind} · ${memory.deletedAt ? 'deleted' : memory.status} · version ${memory.version} · source ${memory.source} · updated `}
          <Time iso={memory.updatedAt} />
        </p>
        {memory.summary ? <p class="summary">{`Summary: ${memory.summary}`}</p> : null}
        {memory.git ? <p class="meta">{`Written on git branch ${memory.git.branch} at ${memory.git.commit.slice(0, 12)}`}</p> : null}
        {memory.supersededBy ? (
          <p>
            Superseded by{' '}
            <button type="button" class="link" onClick={() => env.select(memory.supersededBy)}>
              {memory.supersededBy}
            </button>
          </p>
        ) : null}
        <div class="row actions">
          {memory.status === 'proposed' && !memory.deletedAt ? (
            <button
              type="button"
              onClick={async () => {
                if (!(await discardFirst('The stored version is approved as it is.'))) return;
                await act(() =>
                  env.rpc.request('upsert', {
                    namespace: memory.namespace,
                    key: memory.key,
                    value: memory.value,
                    status: 'active',
                    ifVersion: memory.version,
                    actor: 'dashboard',
                    reason: 'approved in the dashboard',
                  }),
                );
              }}
            >
              Approve
            </button>
          ) : null}
          {memory.anchors.map((a) =>
            // a stale anchor's lines no longer hold its code: say so instead of opening them
            a.stale ? (
              <span class="anchor-stale" title={a.staleReason ?? ''}>
                {`${a.path}: the code it describes changed${a.staleReason ? ` (${a.staleReason})` : ''}`}
              </span>
            ) : (
              <button
                type="button"
                class="secondary"
                title={`Open ${a.path} in an editor beside the dashboard${a.relocated ? ` (re-located from ${a.relocated.from})` : ''}`}
                onClick={() => act(() => env.rpc.request('host/openAnchor', { anchor: a }))}
              >
                <Icon name="go-to-file" />
                {`Open ${a.path}${a.startLine ? `:${a.startLine}` : ''}${
                  a.relocated ? (a.relocated.how === 'similar' ? ' (code changed since)' : ' (re-located)') : ''
                }`}
              </button>
            ),
          )}
          {memory.deletedAt ? (
            <button
              type="button"
              class="secondary"
              onClick={() =>
                act(() => env.rpc.request('restore', { id: memory.id, actor: 'dashboard', reason: 'restored in the dashboard' }))
              }
            >
              <Icon name="discard" />
              Restore
            </button>
          ) : (
            <>
              <button type="button" class="danger" onClick={del}>
                <Icon name="trash" />
                Delete…
              </button>
              <button type="button" class="danger" onClick={forget}>
                <Icon name="circle-slash" />
                Forget…
              </button>
            </>
          )}
          <button type="button" class="secondary" onClick={() => env.select(null)}>
            <Icon name="close" />
            Close
          </button>
        </div>
      </header>
      <ErrorLine error={error} />
      {changedElsewhere ? (
        <p class="notice" role="status">
          This memory changed elsewhere while you were editing; saving will show both versions.
        </p>
      ) : null}
      <div role="tablist" aria-label="Memory sections" class="row subtabs">
        {SUBS.map(([k, t]) => (
          <button
            type="button"
            role="tab"
            aria-selected={sub === k}
            onClick={() => {
              setSub(k);
              setError(null); // an error belongs to the section it came from
            }}
          >
            {t}
          </button>
        ))}
      </div>
      <div role="tabpanel">
        {sub === 'edit' ? (
          <EditForm
            memory={memory}
            onSaved={(m) => {
              setMemory(m);
              setChangedElsewhere(false);
            }}
          />
        ) : null}
        {sub === 'history' ? (
          <History
            memory={memory}
            onRestore={() =>
              act(() => env.rpc.request('restore', { id: memory.id, actor: 'dashboard', reason: 'restored in the dashboard' }))
            }
          />
        ) : null}
        {sub === 'relations' ? <Relations memory={memory} /> : null}
        {sub === 'usedBy' ? <UsedBy memory={memory} /> : null}
      </div>
    </section>
  );
}
