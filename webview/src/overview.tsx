/** Overview: counts by namespace, kind and status; index, model and store size; writes per day by source (SVG bars). */
import { useEffect, useState } from 'preact/hooks';
import type { OverviewResult, StoreStatusResult } from '../../daemon/src/protocol/types';
import { overviewTotals, scopeFor, type ScopeKey } from './state';
import { ErrorLine, errorText, useEnv, type Shown } from './ui';

const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;

/** Per-day totals stacked by source, for the chart. */
export function stackByDay(
  rows: OverviewResult['writesPerDay'],
): { day: string; parts: { source: string; count: number }[]; total: number }[] {
  const days = new Map<string, { source: string; count: number }[]>();
  for (const r of rows) days.set(r.day, [...(days.get(r.day) ?? []), { source: r.source, count: r.count }]);
  return [...days].map(([day, parts]) => ({ day, parts, total: parts.reduce((a, p) => a + p.count, 0) }));
}

function Counts({ title, rows }: { title: string; rows: { name: string; count: number }[] }) {
  return (
    <table class="counts" aria-label={title}>
      <caption>{title}</caption>
      <tbody>
        {rows.map((r) => (
          <tr key={r.name}>
            <th scope="row">{r.name}</th>
            <td>{r.count}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function OverviewTab({ scope }: { scope: ScopeKey }) {
  const env = useEnv();
  const [o, setO] = useState<OverviewResult | null>(null);
  const [st, setSt] = useState<StoreStatusResult | null>(null);
  const [error, setError] = useState<Shown>(null);
  useEffect(() => {
    const sc = scopeFor(scope, env.init.projectNamespace);
    Promise.all([env.rpc.request('overview', { ...(sc ? { scope: sc } : {}), days: 30 }), env.rpc.request('status', {})]).then(
      ([a, b]) => {
        setO(a);
        setSt(b);
        setError(null);
      },
      (e) => setError(errorText(e)),
    );
  }, [scope, env.changeTick]);
  if (error) return <ErrorLine error={error} />;
  if (!o || !st) return <p class="meta">Loading…</p>;
  const totals = overviewTotals(o);
  const stacks = stackByDay(o.writesPerDay);
  const sources = [...new Set(o.writesPerDay.map((r) => r.source))];
  const max = Math.max(1, ...stacks.map((s) => s.total));
  const W = 24,
    H = 120;
  return (
    <section aria-label="Overview" class="overview">
      <p class="headline">
        {`${totals.live} ${totals.live === 1 ? 'memory' : 'memories'} in this scope${totals.deleted ? ` (and ${totals.deleted} deleted)` : ''}`}
      </p>
      <p class="meta">
        {`Whole store: ${mib(st.sizeBytes)}, ${st.counts.memories} memories in all scopes · schema ${st.schemaVersion} · model ${st.embeddings.model ?? 'none'} (${st.embeddings.state}) · ${st.embeddings.vectors} vectors, ${st.embeddings.pending} pending · ${st.indexes.map((i) => `${i.name} ${i.behind ? `${i.behind} behind` : 'up to date'}`).join(', ')}`}
      </p>
      <div class="row wrap">
        <Counts title="By namespace" rows={o.byNamespace} />
        <Counts title="By kind" rows={o.byKind} />
        <Counts title="By status" rows={o.byStatus} />
      </div>
      <figure>
        <figcaption>{`Memories written per day by source (last ${o.days} days)`}</figcaption>
        <svg
          width={Math.max(W * stacks.length, 200)}
          height={H + 20}
          role="img"
          aria-label={stacks.map((s) => `${s.day}: ${s.total}`).join('; ') || 'no writes'}
        >
          {stacks.map((s, i) => {
            let y = H;
            return (
              <g key={s.day}>
                {s.parts.map((p) => {
                  const h = (p.count / max) * H;
                  y -= h;
                  return (
                    <rect x={i * W + 2} y={y} width={W - 4} height={h} class={`bar src-${sources.indexOf(p.source) % 6}`}>
                      <title>{`${s.day} ${p.source}: ${p.count}`}</title>
                    </rect>
                  );
                })}
                <text x={i * W + W / 2} y={H + 14} text-anchor="middle" class="axis">
                  {s.day.slice(8)}
                </text>
              </g>
            );
          })}
        </svg>
        <ul class="legend row" aria-label="Sources">
          {sources.map((src, i) => (
            <li key={src}>
              <span class={`swatch src-${i % 6}`} aria-hidden="true" /> {src}
            </li>
          ))}
        </ul>
      </figure>
    </section>
  );
}
