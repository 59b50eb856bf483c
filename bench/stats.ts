/** Small helpers for benchmarks: percentiles and timers. */
import * as fs from 'node:fs';

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
export function summarize(ms: number[]): { n: number; p50: number; p95: number; p99: number; mean: number } {
  const s = [...ms].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: percentile(s, 50),
    p95: percentile(s, 95),
    p99: percentile(s, 99),
    mean: s.reduce((a, b) => a + b, 0) / s.length,
  };
}
export const now = () => Number(process.hrtime.bigint()) / 1e6;
/** This process's CPU time in ms (user + system, every thread's share included). */
export const cpuNow = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
export const fmt = (x: number, d = 2) => x.toFixed(d);

/** `--name value` from the command line, else the default. */
export function arg(name: string, dflt: string, argv: string[] = process.argv.slice(2)): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
}

/** Print a benchmark's result (JSON, one space of indent) and, with `--json FILE`, write it there too. */
export function report(result: unknown): void {
  const text = JSON.stringify(result, null, 1);
  console.log(text);
  const out = arg('json', '');
  if (out) fs.writeFileSync(out, text);
}
