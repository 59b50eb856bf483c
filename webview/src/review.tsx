/** Review queue: memories agents proposed (with their source events when proposed from episodes), with approve, edit-then-approve, reject (forget) and bulk actions. */
import { useEffect, useState } from 'preact/hooks';
import type { Memory } from '../../daemon/src/protocol/types';
import { discardQuestion, rejectQuestion } from './confirm';
import { EditForm } from './edit-form';
import { sourceEventsOf } from './episodes';
import { REVIEW_LIMIT, scopeFor, type ScopeKey } from './state';
import { SourceEvents } from './timeline';
import { ErrorLine, errorText, Icon, label, useEnv, type Shown } from './ui';

export function ReviewTab({ scope }: { scope: ScopeKey }) {
  const env = useEnv();
  const [items, setItems] = useState<Memory[] | null>(null);
  const [picked, setPicked] = useState<string[]>([]);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<Shown>(null);
  const [done, setDone] = useState<string | null>(null);
  const load = () => {
    const sc = scopeFor(scope, env.init.projectNamespace);
    return env.rpc
      .request('list', {
        ...(sc ? { scope: sc } : {}),
        filter: { field: 'status', op: 'eq', value: 'proposed' },
        include: { proposed: true },
        limit: REVIEW_LIMIT,
      })
      .then(
        (r) => {
          setItems(r.items);
          setPicked((p) => p.filter((id) => r.items.some((m) => m.id === id)));
        },
        (e) => setError(errorText(e)),
      );
  };
  useEffect(() => void load(), [scope, env.changeTick]);
  const approve = (m: Memory) =>
    env.rpc.request('upsert', {
      namespace: m.namespace,
      key: m.key,
      value: m.value,
      status: 'active',
      ifVersion: m.version,
      actor: 'dashboard',
      reason: 'approved in review',
    });
  const reject = (m: Memory) => env.rpc.request('forget', { id: m.id, actor: 'dashboard', reason: 'rejected in review' });
  const run = async (what: 'Approved' | 'Rejected', list: Memory[]) => {
    // Reject forgets the values: ask first (Approve is undone by editing or deleting, and asks nothing).
    if (what === 'Rejected' && !(await env.ask(rejectQuestion(list)).catch(() => false))) return;
    setError(null);
    const ok: Memory[] = [];
    const failed: string[] = [];
    for (const m of list) {
      try {
        await (what === 'Approved' ? approve(m) : reject(m));
        ok.push(m);
        env.setDraft(m.id, null);
      } catch (e) {
        failed.push(`${label(m)}: ${errorText(e).text}`);
      }
    }
    setDone(`${what} ${ok.length} of ${list.length}.`);
    if (what === 'Rejected' && ok.length)
      env.notify({
        text: `Rejected ${ok.length === 1 ? label(ok[0]) : `${ok.length} proposed memories`}.`,
        // restoring a rejected memory lifts the rejection of its value and puts it back in the queue
        undo: async () => {
          for (const m of ok) await env.rpc.request('restore', { id: m.id, actor: 'dashboard', reason: 'undo of a reject in review' });
        },
      });
    if (failed.length) setError(failed.join('\n'));
    setPicked([]);
    await load();
  };
  const toggleEdit = async (m: Memory) => {
    if (editing === m.id) {
      const d = env.drafts[m.id];
      if (d && !(await env.ask(discardQuestion(d.label, d.changed, 'The editor closes.')).catch(() => false))) return;
      env.setDraft(m.id, null);
      setEditing(null);
    } else setEditing(m.id);
  };
  if (!items) return error ? <ErrorLine error={error} /> : <p class="meta">Loading…</p>;
  const chosen = items.filter((m) => picked.includes(m.id));
  return (
    <section aria-label="Review queue">
      <p class="meta" role="status">
        {`${items.length} proposed memor${items.length === 1 ? 'y' : 'ies'} waiting for review.`} {done ?? ''}
      </p>
      {items.length ? (
        <div class="row">
          <label>
            <input
              type="checkbox"
              aria-label="Select all proposed memories"
              checked={chosen.length === items.length}
              onChange={(e) => setPicked((e.target as HTMLInputElement).checked ? items.map((m) => m.id) : [])}
            />{' '}
            All
          </label>
          <button type="button" disabled={!chosen.length} onClick={() => run('Approved', chosen)}>
            {`Approve ${chosen.length} selected`}
          </button>
          <button type="button" class="danger" disabled={!chosen.length} onClick={() => run('Rejected', chosen)}>
            {`Reject ${chosen.length} selected…`}
          </button>
        </div>
      ) : null}
      <ul class="review" aria-label="Proposed memories">
        {items.map((m) => (
          <li key={m.id}>
            <div class="row">
              <input
                type="checkbox"
                aria-label={`Select ${label(m)}`}
                checked={picked.includes(m.id)}
                onChange={() => setPicked(picked.includes(m.id) ? picked.filter((x) => x !== m.id) : [...picked, m.id])}
              />
              <button type="button" class="link key" onClick={() => env.select(m.id)}>
                {label(m)}
              </button>
              <span class="meta">{`${m.kind} · from ${m.source}`}</span>
            </div>
            <p class="value">{m.value}</p>
            {sourceEventsOf(m).length ? (
              <SourceEvents positions={sourceEventsOf(m)} scope={scopeFor(scope, env.init.projectNamespace)} />
            ) : null}
            <div class="row">
              <button type="button" aria-label={`Approve ${m.key}`} onClick={() => run('Approved', [m])}>
                <Icon name="check" />
                Approve
              </button>
              <button type="button" class="secondary" aria-label={`Edit, then approve ${m.key}`} onClick={() => void toggleEdit(m)}>
                Edit, then approve
              </button>
              <button type="button" class="danger" aria-label={`Reject ${m.key}`} onClick={() => run('Rejected', [m])}>
                <Icon name="close" />
                Reject…
              </button>
            </div>
            {editing === m.id ? (
              <EditForm
                memory={m}
                approve
                onSaved={() => {
                  setEditing(null);
                  void load();
                }}
              />
            ) : null}
          </li>
        ))}
      </ul>
      <ErrorLine error={error} />
    </section>
  );
}
