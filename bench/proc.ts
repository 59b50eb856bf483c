/**
 * What the benches read of a daemon process and its store from outside (Linux /proc, the store's files): memory,
 * CPU time, disk, and the machine's load.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';

/** A process's resident memory in MiB: `VmRSS` now, or `VmHWM` its peak (since resetPeak). */
export function memoryMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : NaN;
}

/** Start a process's peak resident memory (VmHWM) again from now. */
export function resetPeak(pid: number): void {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    /* not permitted here: the peak then covers the daemon's whole life */
  }
}

/** CPU ms of a process, all its threads (utime + stime, fields 14 and 15 of /proc/<pid>/stat, 100 ticks a second). */
export function cpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
}

/** CPU ms per thread of a process (every thread is named `node`): `main` (the event loop) and the others by thread id. */
export function threadCpuMs(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const f = fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
      out[t === String(pid) ? 'main' : t] = ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
    } catch {
      /* the thread ended */
    }
  }
  return out;
}

/** CPU ms per thread between two threadCpuMs readings, per unit of work (`n` records, queries): threads that used some. */
export function perThread(a: Record<string, number>, b: Record<string, number>, n: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(b)
      .map(([k, v]) => [k, Math.round(((v - (a[k] ?? 0)) / n) * 1000) / 1000] as const)
      .filter(([, v]) => v > 0),
  );
}

/** A SQLite store's size on disk in MiB: the database file, its WAL and its shared-memory file. */
export function diskMiB(db: string): number {
  let bytes = 0;
  for (const f of [db, db + '-wal', db + '-shm']) {
    try {
      bytes += fs.statSync(f).size;
    } catch {
      /* absent */
    }
  }
  return Math.round((bytes / 1048576) * 10) / 10;
}

/** The machine's load averages (1, 5, 15 minutes): other work moves wall-clock figures. */
export const loadAvg = () => os.loadavg().map((x) => Math.round(x * 100) / 100);
