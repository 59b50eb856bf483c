/**
 * One memory: the edit form (saved with ifVersion; a conflict shows both versions side by side to choose or
 * merge; daemon validation errors next to the field they name), history with diffs and restore, the relations
 * graph with link/unlink, and "Used by" from the injection log.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { HistoryEntry, Memory, NeighborsResult } from '../../daemon/src/protocol/types';
import { describeState, lineDiff } from './diff';
import {
  conflictingFields,
  FORM_FIELDS,
  formFieldOf,
  FormError,
  formFromMemory,
  mergeForms,
  upsertFromForm,
  type Choice,
  type Form,
  type FormField,
} from './form';
import { RequestError } from './rpc';
import { deleteQuestion, discardQuestion, forgetQuestion } from './confirm';
import { ErrorLine, errorText, Icon, label, Time, useEnv, type Shown } from './ui';

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

function FieldError({ id, error }: { id: string; error: NonNullable<Shown> }) {
  const p = typeof error === 'string' ? { text: error, details: null } : error;
  return (
    <span class="field-error" id={id} role="alert">
      <span class="error-text">{p.text}</span>
      {p.details ? <span class="error-details">{`Details: ${p.details}`}</span> : null}
    </span>
  );
}

const FIELD_LABEL: Record<FormField, string> = {
  value: 'Value',
  kind: 'Kind',
  tags: 'Tags (comma separated)',
  importance: 'Importance (0–1)',
  confidence: 'Confidence (0–1)',
  validFrom: 'Valid from (ISO-8601)',
  validTo: 'Valid to (ISO-8601)',
  expiresAt: 'Expires at (ISO-8601)',
  anchors: 'Anchors (path:start-end#symbol, one a line)',
  properties: 'Properties (JSON object)',
};

export function EditForm({ memory, onSaved, approve }: { memory: Memory; onSaved: (m: Memory) => void; approve?: boolean }) {
  const env = useEnv();
  const draft = env.drafts[memory.id];
  const [form, setForm] = useState<Form>(() => draft?.form ?? formFromMemory(memory));
  const [base, setBase] = useState(draft?.base ?? memory.version);
  const [errors, setErrors] = useState<Partial<Record<FormField, Shown>>>({});
  const [error, setError] = useState<Shown>(null);
  const [conflict, setConflict] = useState<Memory | null>(null);
  const [choices, setChoices] = useState<Partial<Record<FormField, Choice>>>({});
  const [saved, setSaved] = useState<string | null>(null);
  // A new version from the store replaces the form, unless the user has an unsaved edit of it (kept, and saved
  // against the version it was made from, so the conflict view shows both).
  useEffect(() => {
    const d = env.drafts[memory.id];
    setForm(d?.form ?? formFromMemory(memory));
    setBase(d?.base ?? memory.version);
    setConflict(null);
    setErrors({});
  }, [memory.id, memory.version]);
  const change = (f: FormField, v: string) => {
    const next = { ...form, [f]: v };
    setForm(next);
    setSaved(null);
    if (errors[f]) setErrors({ ...errors, [f]: undefined });
    env.setDraft(memory.id, { label: label(memory), form: next, stored: formFromMemory(memory), base });
  };
  const discard = async () => {
    const d = env.drafts[memory.id];
    if (d && !(await env.ask(discardQuestion(d.label, d.changed, 'The form shows the stored version again.')).catch(() => false))) return;
    env.setDraft(memory.id, null);
    setForm(formFromMemory(memory));
    setBase(memory.version);
    setErrors({});
    setError(null);
  };
  const save = async (toSave: Form, ifVersion: number) => {
    setErrors({});
    setError(null);
    try {
      const params = upsertFromForm(toSave, memory, ifVersion, {
        reason: approve ? 'approved after editing in the dashboard' : 'edited in the dashboard',
        ...(approve ? { status: 'active' as const } : {}),
      });
      const r = await env.rpc.request('upsert', params);
      setConflict(null);
      setSaved(r.changed ? `Saved version ${r.memory.version}.` : 'Nothing changed.');
      env.setDraft(memory.id, null);
      onSaved(r.memory);
    } catch (e) {
      if (e instanceof FormError) return setErrors({ [e.field]: e.message });
      if (e instanceof RequestError && e.errorName === 'VersionConflict') {
        try {
          const theirs = await env.rpc.request('get', { id: memory.id, includeDeleted: true });
          setConflict(theirs);
          setChoices({});
        } catch (e2) {
          setError(errorText(e2));
        }
        return;
      }
      const f = e instanceof RequestError ? formFieldOf(e.field) : undefined;
      if (f) setErrors({ [f]: errorText(e) });
      else setError(errorText(e));
    }
  };
  if (conflict) {
    const fields = conflictingFields(form, conflict);
    const theirs = formFromMemory(conflict);
    return (
      <section class="conflict" aria-label="Version conflict">
        <h3>{`Version conflict: you edited version ${base}, the store now holds version ${conflict.version}`}</h3>
        <p class="meta">{`${fields.length} field${fields.length === 1 ? '' : 's'} differ. Choose a side per field, or keep one version whole.`}</p>
        <table class="sidebyside">
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Your version</th>
              <th scope="col">{`Stored version ${conflict.version}`}</th>
            </tr>
          </thead>
          <tbody>
            {fields.map((f) => (
              <tr key={f}>
                <th scope="row">{f}</th>
                <td>
                  <label class="choice">
                    <input
                      type="radio"
                      name={`pick-${f}`}
                      checked={(choices[f] ?? 'mine') === 'mine'}
                      onChange={() => setChoices({ ...choices, [f]: 'mine' })}
                      aria-label={`Use your ${f}`}
                    />
                    <pre>{form[f]}</pre>
                  </label>
                </td>
                <td>
                  <label class="choice">
                    <input
                      type="radio"
                      name={`pick-${f}`}
                      checked={choices[f] === 'theirs'}
                      onChange={() => setChoices({ ...choices, [f]: 'theirs' })}
                      aria-label={`Use stored ${f}`}
                    />
                    <pre>{theirs[f]}</pre>
                  </label>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <div class="row">
          <button type="button" onClick={() => save(form, conflict.version)}>
            Keep mine
          </button>
          <button
            type="button"
            onClick={() => {
              setConflict(null);
              env.setDraft(memory.id, null);
              onSaved(conflict);
            }}
          >
            Take stored
          </button>
          <button type="button" onClick={() => save(mergeForms(form, conflict, choices), conflict.version)}>
            Save merge
          </button>
        </div>
        <ErrorLine error={error} />
      </section>
    );
  }
  return (
    <form
      class="edit"
      aria-label="Edit memory"
      onSubmit={(e) => {
        e.preventDefault();
        void save(form, base);
      }}
    >
      {FORM_FIELDS.map((f) => {
        const id = `field-${f}`;
        const err = errors[f];
        return (
          <div class="field" key={f}>
            <label for={id}>{FIELD_LABEL[f]}</label>
            {f === 'kind' ? (
              <select id={id} value={form.kind} onChange={(e) => change('kind', (e.target as HTMLSelectElement).value)}>
                {env.init.kinds.map((k) => (
                  <option value={k}>{k}</option>
                ))}
              </select>
            ) : f === 'value' || f === 'anchors' || f === 'properties' ? (
              <textarea
                id={id}
                rows={f === 'value' ? 5 : 3}
                value={form[f]}
                aria-invalid={!!err}
                aria-describedby={err ? `${id}-error` : undefined}
                onInput={(e) => change(f, (e.target as HTMLTextAreaElement).value)}
              />
            ) : (
              <input
                id={id}
                value={form[f]}
                aria-invalid={!!err}
                aria-describedby={err ? `${id}-error` : undefined}
                onInput={(e) => change(f, (e.target as HTMLInputElement).value)}
              />
            )}
            {err ? <FieldError id={`${id}-error`} error={err} /> : null}
          </div>
        );
      })}
      <div class="row">
        <button type="submit">
          <Icon name={approve ? 'check' : 'save'} />
          {approve ? 'Save and approve' : 'Save'}
        </button>
        {env.drafts[memory.id] ? (
          <>
            <button type="button" class="secondary" onClick={discard}>
              Discard changes
            </button>
            <span class="meta" role="status">
              Unsaved changes
            </span>
          </>
        ) : saved ? (
          <span role="status">{saved}</span>
        ) : null}
      </div>
      <ErrorLine error={error} />
    </form>
  );
}

function History({ memory, onRestore }: { memory: Memory; onRestore: () => void }) {
  const env = useEnv();
  const [entries, setEntries] = useState<HistoryEntry[] | null>(null);
  const [picked, setPicked] = useState<number[]>([]);
  const [error, setError] = useState<Shown>(null);
  useEffect(() => {
    env.rpc.request('history', { id: memory.id, limit: 200 }).then(
      (r) => {
        setEntries(r.entries);
        setError(null);
      },
      (e) => setError(errorText(e)),
    );
  }, [memory.id, memory.version, env.changeTick]);
  if (error) return <ErrorLine error={error} />;
  if (!entries) return <p class="meta">Loading…</p>;
  const pick = (seq: number) => setPicked(picked.includes(seq) ? picked.filter((s) => s !== seq) : [...picked.slice(-1), seq]);
  const chosen = entries.filter((e) => picked.includes(e.seq)).sort((a, b) => a.seq - b.seq);
  const chain = entries.filter((e) => e.op === 'supersede' || (e.detail && 'supersededBy' in e.detail));
  return (
    <section aria-label="History">
      {memory.deletedAt ? (
        <p>
          {'Deleted '}
          <Time iso={memory.deletedAt} />
          {` by ${memory.deletedBy ?? 'unknown'}. `}
          <button type="button" onClick={onRestore}>
            Restore this memory
          </button>
        </p>
      ) : null}
      <p class="meta">Pick two versions to compare them (or one to compare it with the one before).</p>
      <div class="table-scroll">
        <table class="history">
          <thead>
            <tr>
              <th scope="col">
                <span class="visually-hidden">Compare</span>
              </th>
              <th scope="col">Version</th>
              <th scope="col">Op</th>
              <th scope="col">Actor</th>
              <th scope="col">Reason</th>
              <th scope="col">Time</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.seq}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Compare version ${e.version} (${e.op})`}
                    checked={picked.includes(e.seq)}
                    onChange={() => pick(e.seq)}
                  />
                </td>
                <td>{e.version}</td>
                <td>{e.op}</td>
                <td>{e.actor}</td>
                <td>{e.reason ?? ''}</td>
                <td>
                  <Time iso={e.at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {chain.length ? (
        <p class="meta">{`Supersession: ${chain.map((e) => `${e.op} at version ${e.version}${e.detail?.supersededBy ? ` → ${String(e.detail.supersededBy)}` : ''}`).join('; ')}`}</p>
      ) : null}
      {chosen.length ? (
        <Diff
          from={chosen.length === 2 ? chosen[0].state : chosen[0].previous}
          to={chosen.length === 2 ? chosen[1].state : chosen[0].state}
          title={
            chosen.length === 2
              ? `Version ${chosen[0].version} → ${chosen[1].version}`
              : `Before → after ${chosen[0].op} (version ${chosen[0].version})`
          }
        />
      ) : null}
    </section>
  );
}

function Diff({ from, to, title }: { from: Memory | null; to: Memory | null; title: string }) {
  const lines = lineDiff(describeState(from), describeState(to));
  return (
    <figure class="diff" aria-label="Diff">
      <figcaption>{title}</figcaption>
      <pre>
        {lines.map((l, i) => (
          <div key={i} class={`diff-${l.op}`}>
            {`${l.op === 'add' ? '+ ' : l.op === 'del' ? '- ' : '  '}${l.text}`}
          </div>
        ))}
      </pre>
    </figure>
  );
}

interface GraphApi {
  draw(
    container: HTMLElement,
    nodes: { id: string; label: string; kind?: string; center?: boolean }[],
    edges: { from: string; to: string; type: string }[],
    onSelect: (id: string) => void,
  ): { destroy(): void };
}
let graphLoad: Promise<GraphApi> | null = null;
/** Loads the graph bundle once, as a script with this page's nonce (the CSP allows nothing else). */
function loadGraph(): Promise<GraphApi> {
  const w = window as unknown as { cairnGraph?: GraphApi };
  if (w.cairnGraph) return Promise.resolve(w.cairnGraph);
  graphLoad ??= new Promise<GraphApi>((resolve, reject) => {
    const src = document.getElementById('cairn-dashboard-root')?.dataset.graphSrc;
    const nonce = (document.querySelector('script[nonce]') as HTMLScriptElement | null)?.nonce;
    if (!src) return reject(new Error('graph bundle not configured'));
    const el = document.createElement('script');
    el.src = src;
    if (nonce) el.nonce = nonce;
    el.onload = () => (w.cairnGraph ? resolve(w.cairnGraph) : reject(new Error('graph bundle did not load')));
    el.onerror = () => {
      graphLoad = null;
      reject(new Error('graph bundle did not load'));
    };
    document.body.appendChild(el);
  });
  return graphLoad;
}

function Relations({ memory }: { memory: Memory }) {
  const env = useEnv();
  const [n, setN] = useState<NeighborsResult['neighbors'] | null>(null);
  const [error, setError] = useState<Shown>(null);
  const [target, setTarget] = useState('');
  const [type, setType] = useState(env.init.linkTypes[0] ?? 'relates_to');
  const box = useRef<HTMLDivElement>(null);
  const load = async () => {
    // a deleted memory has no live links to draw (the daemon answers NotFound): say so instead of an error
    if (memory.deletedAt) return setN([]);
    return env.rpc.request('neighbors', { id: memory.id, direction: 'both' }).then(
      (r) => {
        setN(r.neighbors);
        setError(null);
      },
      (e) => setError(errorText(e)),
    );
  };
  useEffect(() => {
    setError(null);
    void load();
  }, [memory.id, memory.version, !!memory.deletedAt, env.changeTick]);
  useEffect(() => {
    if (!n || !box.current) return;
    let g: { destroy(): void } | undefined;
    let gone = false;
    loadGraph().then(
      (api) => {
        if (gone || !box.current) return;
        const nodes = [
          { id: memory.id, label: memory.key, kind: memory.kind, center: true },
          ...n
            .filter((x, i, a) => a.findIndex((y) => y.memory.id === x.memory.id) === i)
            .map((x) => ({ id: x.memory.id, label: x.memory.key, kind: x.memory.kind })),
        ];
        const edges = n.map((x) =>
          x.direction === 'out' ? { from: memory.id, to: x.memory.id, type: x.type } : { from: x.memory.id, to: memory.id, type: x.type },
        );
        g = api.draw(box.current, nodes, edges, (id) => id !== memory.id && env.select(id));
        box.current.dataset.ready = 'true';
      },
      (e) => setError(errorText(e)),
    );
    return () => {
      gone = true;
      g?.destroy();
    };
  }, [n]);
  const link = async (op: 'link' | 'unlink', other: string, t: string, direction: 'out' | 'in' = 'out') => {
    try {
      const [from, to] = direction === 'out' ? [memory.id, other] : [other, memory.id];
      await env.rpc.request(op, { from, to, type: t as never, actor: 'dashboard' });
      setTarget('');
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const resolveTarget = async () => {
    const t = target.trim();
    if (!t) return setError('Name the memory to link to: its id, or namespace/key.');
    const slash = t.lastIndexOf('/');
    try {
      const other =
        slash > 0
          ? await env.rpc.request('get', { namespace: t.slice(0, slash), key: t.slice(slash + 1) })
          : await env.rpc.request('get', { id: t });
      await link('link', other.id, type);
    } catch (e) {
      setError(errorText(e));
    }
  };
  if (memory.deletedAt) return <p class="meta">This memory is deleted; restore it to see and change its links.</p>;
  return (
    <section aria-label="Relations">
      <div
        class="graph"
        ref={box}
        role="img"
        aria-label={`Graph of ${memory.key} and ${n?.length ?? 0} linked memories; the list below holds the same links`}
      />
      {n && n.length ? (
        <ul class="legend row graph-legend" aria-label="Node colours by kind">
          <li class="meta" aria-hidden="true">
            Kind:
          </li>
          {[...new Set([memory.kind, ...n.map((x) => x.memory.kind)])].map((k) => (
            <li key={k}>
              <span class={`swatch kind-${k}`} aria-hidden="true" /> {k}
            </li>
          ))}
        </ul>
      ) : null}
      <ul class="neighbors" aria-label="Linked memories">
        {(n ?? []).map((x) => (
          <li key={`${x.memory.id}-${x.type}-${x.direction}`}>
            <span class="direction">
              {x.direction === 'out' ? (
                <>
                  {x.type} <Icon name="arrow-right" />
                  <span class="visually-hidden">to</span>
                </>
              ) : (
                <>
                  <Icon name="arrow-left" />
                  <span class="visually-hidden">from</span> {x.type}
                </>
              )}
            </span>{' '}
            <button type="button" class="link" onClick={() => env.select(x.memory.id)}>
              {label(x.memory)}
            </button>{' '}
            <button
              type="button"
              class="secondary"
              aria-label={`Unlink ${x.memory.key}`}
              onClick={() => link('unlink', x.memory.id, x.type, x.direction)}
            >
              Unlink
            </button>
          </li>
        ))}
      </ul>
      {n && !n.length ? <p class="meta">No links yet.</p> : null}
      <div class="row">
        <input
          aria-label="Memory to link (id or namespace/key)"
          placeholder="namespace/key or id"
          value={target}
          onInput={(e) => {
            setTarget((e.target as HTMLInputElement).value);
            setError(null);
          }}
        />
        <select aria-label="Link type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
          {env.init.linkTypes.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>
        <button type="button" onClick={resolveTarget}>
          <Icon name="link" />
          Link
        </button>
      </div>
      <ErrorLine error={error} />
    </section>
  );
}

function UsedBy({ memory }: { memory: Memory }) {
  const env = useEnv();
  const [r, setR] = useState<{ usedBy: { taskId: string; title: string | null; count: number; lastAt: string }[] } | null>(null);
  const [error, setError] = useState<Shown>(null);
  useEffect(() => {
    env.rpc.request('injectLog', { memoryId: memory.id, limit: 200 }).then(setR, (e) => setError(errorText(e)));
  }, [memory.id, env.changeTick]);
  if (error) return <ErrorLine error={error} />;
  if (!r) return <p class="meta">Loading…</p>;
  if (!r.usedBy.length) return <p class="meta">No agent task has been given this memory yet.</p>;
  return (
    <table aria-label="Agent tasks this memory was injected into">
      <thead>
        <tr>
          <th scope="col">Task</th>
          <th scope="col">Injections</th>
          <th scope="col">Last</th>
        </tr>
      </thead>
      <tbody>
        {r.usedBy.map((u) => (
          <tr key={u.taskId}>
            <td>{u.title ?? u.taskId}</td>
            <td>{u.count}</td>
            <td>
              <Time iso={u.lastAt} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
