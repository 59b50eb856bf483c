/** A memory's relations graph with link and unlink, and "Used by" from the injection log (the detail view's tabs). */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Memory, NeighborsResult } from '../../daemon/src/protocol/types';
import { ErrorLine, errorText, Icon, label, Time, useEnv, type Shown } from './ui';

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

export function Relations({ memory }: { memory: Memory }) {
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

export function UsedBy({ memory }: { memory: Memory }) {
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
