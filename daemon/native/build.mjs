// Compiles cairn_bm25.c and malloc_trim.c into one loadable SQLite extension (dist/cairn_bm25.so, .dylib on macOS)
// against the SQLite that better-sqlite3 compiles in: its sqlite3ext.h, and fts5.h cut out of its amalgamation. No
// compiler, or a failed compile, is not fatal: the daemon then ranks with FTS5's bm25() (same order, slower) and says
// so at start (and the C heap keeps what it freed: cairn_malloc_trim is absent too).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, '..', 'dist', process.platform === 'darwin' ? 'cairn_bm25.dylib' : 'cairn_bm25.so');

export function buildRankingExtension() {
  if (process.platform === 'win32') {
    console.warn('[build] cairn_bm25: not built on Windows; full-text ranking uses FTS5 bm25()');
    return;
  }
  // The ranking function, and cairn_malloc_trim (malloc_trim.c) registered by the same entry point.
  const sources = ['cairn_bm25.c', 'malloc_trim.c'].map((f) => path.join(here, f));
  const sqliteDir = path.join(path.dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')), 'deps', 'sqlite3');
  const amalgamation = path.join(sqliteDir, 'sqlite3.c');
  const newest = Math.max(...sources.map((f) => statSync(f).mtimeMs), statSync(amalgamation).mtimeMs);
  if (existsSync(out) && statSync(out).mtimeMs >= newest) return;
  const text = readFileSync(amalgamation, 'utf8');
  const begin = text.indexOf('/******** Begin file fts5.h *********/');
  const end = text.indexOf('/******** End of fts5.h *********/');
  if (begin < 0 || end < begin) {
    console.warn("[build] cairn_bm25: fts5.h not found in better-sqlite3's sqlite3.c; full-text ranking uses FTS5 bm25()");
    return;
  }
  const inc = mkdtempSync(path.join(tmpdir(), 'cairn-fts5-'));
  writeFileSync(path.join(inc, 'fts5.h'), text.slice(begin, end));
  const cc = process.env.CC || 'cc';
  const args = ['-O2', '-fPIC', '-shared', '-I', sqliteDir, '-I', inc, '-o', out, ...sources, '-lm'];
  try {
    execFileSync(cc, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (e) {
    rmSync(out, { force: true }); // never leave an older build of it to be loaded
    console.warn(`[build] cairn_bm25: ${cc} failed (${e.message.split('\n')[0]}); full-text ranking uses FTS5 bm25()`);
  } finally {
    rmSync(inc, { recursive: true, force: true });
  }
}
