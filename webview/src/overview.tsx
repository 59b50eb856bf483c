/** Overview: counts by namespace, kind and status; index, model and store size; writes per day by source (an SVG chart). */
import { useEffect, useState } from 'preact/hooks';
import { describeFree } from '../../daemon/src/protocol/store-space';
import type { OverviewResult, StoreStatusResult } from '../../daemon/src/protocol/types';
import { chartModel, dayTitle, shortDay, type ChartModel } from './chart';
import { overviewTotals, scopeFor, type ScopeKey } from './state';
import { ErrorLine, errorText, useEnv, type Shown } from './ui';

const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;

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
  const chart = chartModel(o.writesPerDay, o.days, new Date().toISOString().slice(0, 10));
  return (
    <section aria-label="Overview" class="overview">
      <p class="headline">
        {`${totals.live} ${totals.live === 1 ? 'memory' : 'memories'} in this scope${totals.deleted ? ` (and ${totals.deleted} deleted)` : ''}`}
      </p>
      <p class="meta">
        {`Whole store: ${mib(st.sizeBytes)}${describeFree(st.free)}, ${st.counts.memories} memories in all scopes · schema ${st.schemaVersion} · model ${st.embeddings.model ?? 'none'} (${st.embeddings.state}) · ${st.embeddings.vectors} vectors, ${st.embeddings.pending} pending · ${st.indexes.map((i) => `${i.name} ${i.behind ? `${i.behind} behind` : 'up to date'}`).join(', ')}`}
      </p>
      <div class="row wrap">
        <Counts title="By namespace" rows={o.byNamespace} />
        <Counts title="By kind" rows={o.byKind} />
        <Counts title="By status" rows={o.byStatus} />
      </div>
      <WritesChart chart={chart} days={o.days} />
    </section>
  );
}

/** Chart geometry (px): plot area inside the axes' margins. */
const G = { left: 32, right: 12, top: 14, bottom: 22, height: 150, bar: 12 };

/** Memories written (created, changed or restored) per day, stacked by source, with axes, values and tooltips. */
function WritesChart({ chart, days }: { chart: ChartModel; days: number }) {
  const { bars, ticks, sources } = chart;
  const top = ticks[ticks.length - 1];
  const plotH = G.height - G.top - G.bottom;
  const y = (v: number) => G.top + plotH - (v / top) * plotH;
  const width = G.left + bars.length * G.bar + G.right;
  // about six day labels, the last day always (and no label crowding it)
  const every = Math.max(1, Math.ceil(bars.length / 6));
  const summary = chart.total
    ? `${chart.total} ${chart.total === 1 ? 'write' : 'writes'} (memories created, changed or restored) in the last ${days} days; busiest ${shortDay(chart.busiest!.day)} with ${chart.busiest!.total}.`
    : `No memory written in the last ${days} days.`;
  return (
    <figure class="chart">
      <figcaption>{`Memories written per day by source (last ${days} days)`}</figcaption>
      <p class="meta">{summary}</p>
      <svg
        width={width}
        height={G.height}
        viewBox={`0 0 ${width} ${G.height}`}
        role="img"
        aria-label={`${summary} ${bars
          .filter((b) => b.total)
          .map(dayTitle)
          .join('; ')}`}
      >
        {ticks.map((t) => (
          <g key={t} class="tick">
            <line x1={G.left} x2={width - G.right} y1={y(t)} y2={y(t)} class={t ? 'grid' : 'axis-line'} />
            <text x={G.left - 6} y={y(t) + 3} text-anchor="end" class="axis">
              {t}
            </text>
          </g>
        ))}
        {bars.map((b, i) => {
          const x = G.left + i * G.bar;
          return (
            <g key={b.day} class="day">
              <title>{dayTitle(b)}</title>
              {/* the whole column answers the hover, not just the (maybe tiny) bar */}
              <rect x={x} y={G.top} width={G.bar} height={plotH} class="hover" />
              {b.parts.map((p) => (
                <rect
                  key={p.source}
                  x={x + 2}
                  y={y(p.y1)}
                  width={G.bar - 4}
                  height={y(p.y0) - y(p.y1)}
                  class={`bar src-${sources.indexOf(p.source) % 6}`}
                />
              ))}
              {b.total ? (
                <text x={x + G.bar / 2} y={y(b.total) - 3} text-anchor="middle" class="value">
                  {b.total}
                </text>
              ) : null}
              {(i % every === 0 && bars.length - 1 - i >= every / 2) || i === bars.length - 1 ? (
                <text x={x + G.bar / 2} y={G.height - 6} text-anchor="middle" class="axis">
                  {shortDay(b.day)}
                </text>
              ) : null}
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
  );
}
