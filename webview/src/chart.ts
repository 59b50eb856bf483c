/**
 * The overview's "writes per day" chart as plain numbers (the SVG in overview.tsx only draws them): every day of
 * the window, empty ones included, stacked by source, on a y scale with round ticks.
 */

export interface ChartRow {
  day: string;
  source: string;
  count: number;
}
export interface DayBar {
  day: string;
  total: number;
  /** Stacked parts, bottom first: y0..y1 in counts. */
  parts: { source: string; count: number; y0: number; y1: number }[];
}
export interface ChartModel {
  bars: DayBar[];
  /** y-axis ticks from 0; the last is the top of the scale (>= the busiest day). */
  ticks: number[];
  sources: string[];
  total: number;
  busiest: DayBar | null;
}

const DAY_MS = 86_400_000;

/** The `days` calendar days (UTC, YYYY-MM-DD) ending with `lastDay`, oldest first. */
export function dayRange(lastDay: string, days: number): string[] {
  const end = Date.parse(`${lastDay}T00:00:00Z`);
  if (!Number.isFinite(end) || days < 1) return [];
  return Array.from({ length: days }, (_, i) => new Date(end - (days - 1 - i) * DAY_MS).toISOString().slice(0, 10));
}

/** Round ticks from 0 to at least `max` (steps of 1, 2 or 5 times a power of ten), about `count` of them. */
export function niceTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) ?? 10 * pow);
  const top = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let t = 0; t <= top; t += step) ticks.push(t);
  return ticks;
}

/**
 * The chart of `rows` over the `days` days ending `today` (or the newest row's day, when the daemon's clock is
 * ahead of this one); rows before the window are left out.
 */
export function chartModel(rows: ChartRow[], days: number, today: string): ChartModel {
  const lastDay = rows.reduce((d, r) => (r.day > d ? r.day : d), today);
  const sources = [...new Set(rows.map((r) => r.source))].sort();
  const byDay = new Map<string, ChartRow[]>();
  for (const r of rows) byDay.set(r.day, [...(byDay.get(r.day) ?? []), r]);
  const bars = dayRange(lastDay, days).map((day): DayBar => {
    let y = 0;
    const parts = sources
      .map((source) => ({ source, count: (byDay.get(day) ?? []).filter((r) => r.source === source).reduce((a, r) => a + r.count, 0) }))
      .filter((p) => p.count > 0)
      .map((p) => ({ ...p, y0: y, y1: (y += p.count) }));
    return { day, total: y, parts };
  });
  const busiest = bars.reduce<DayBar | null>((b, x) => (x.total > (b?.total ?? 0) ? x : b), null);
  return { bars, ticks: niceTicks(busiest?.total ?? 0), sources, total: bars.reduce((a, b) => a + b.total, 0), busiest };
}

/** "Mar 10" for a YYYY-MM-DD day (UTC, as the daemon counts days). */
export function shortDay(day: string): string {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString('en', { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

/** A day's tooltip: its total and each source's share. */
export function dayTitle(b: DayBar): string {
  const n = `${b.total} ${b.total === 1 ? 'write' : 'writes'}`;
  return `${shortDay(b.day)} (${b.day}): ${n}${b.parts.length ? ` — ${b.parts.map((p) => `${p.source} ${p.count}`).join(', ')}` : ''}`;
}
