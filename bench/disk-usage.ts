/**
 * Disk use of a store by table and index (issue 8's disk target), from SQLite's `dbstat` virtual table:
 * bytes in pages, payload and unused bytes per b-tree, plus the WAL file and the free-page count.
 *
 *   node --import tsx bench/disk-usage.ts path/to/cairn.db [--json out.json]
 *
 * Opens the file read-only, so a running daemon's store can be measured (the WAL's pages are counted by dbstat
 * where they are the newest copy; the `-wal` file's own size is reported separately).
 */
import * as fs from 'node:fs';
import Database from 'better-sqlite3';
import { arg } from './stats';

const file = process.argv[2];
if (!file || file.startsWith('--')) throw new Error('usage: disk-usage.ts path/to/cairn.db [--json out.json]');
const db = new Database(file, { readonly: true });
const rows = db
  .prepare(
    `SELECT name, count(*) AS pages, sum(pgsize) AS bytes, sum(payload) AS payload, sum(unused) AS unused
       FROM dbstat GROUP BY name ORDER BY bytes DESC`,
  )
  .all() as { name: string; pages: number; bytes: number; payload: number; unused: number }[];
const mib = (b: number) => Math.round((b / 1048576) * 100) / 100;
const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
const total = rows.reduce((a, r) => a + r.bytes, 0);
const out = {
  file,
  fileMiB: mib(size(file)),
  walMiB: mib(size(file + '-wal')),
  freePages: db.pragma('freelist_count', { simple: true }) as number,
  tables: rows.map((r) => ({ name: r.name, MiB: mib(r.bytes), payloadMiB: mib(r.payload), unusedMiB: mib(r.unused) })),
  totalMiB: mib(total),
};
db.close();
console.log('| table or index | MiB | payload MiB | unused MiB |\n| --- | --- | --- | --- |');
for (const t of out.tables) if (t.MiB >= 0.05) console.log(`| ${t.name} | ${t.MiB} | ${t.payloadMiB} | ${t.unusedMiB} |`);
console.log(`| all b-trees | ${out.totalMiB} | | |`);
console.log(`file ${out.fileMiB} MiB, WAL ${out.walMiB} MiB, free pages ${out.freePages}`);
const json = arg('json', '');
if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
