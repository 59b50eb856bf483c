/** Human-readable output of the CLI (the --json output is the protocol's own objects). */
import type { HistoryResult, Memory, SearchResult, StoreStatusResult } from '../protocol/types';
import { describeFree } from '../protocol/store-space';
import { oneLine } from '../text/format';
import { highlight, paint, type Paint } from './colour';

type Out = (s: string) => void;

export function printMemory(out: Out, m: Memory): void {
  out(`${m.namespace}/${m.key}  (${m.kind}, v${m.version}, ${m.status}${m.deletedAt ? `, deleted ${m.deletedAt} by ${m.deletedBy}` : ''})`);
  out(`id:         ${m.id}`);
  if (m.tags.length) out(`tags:       ${m.tags.join(', ')}`);
  out(`source:     ${m.source}   importance ${m.importance}   confidence ${m.confidence}`);
  out(`updated:    ${m.updatedAt}   created ${m.createdAt}`);
  if (m.validFrom || m.validTo) out(`valid:      ${m.validFrom ?? '…'} → ${m.validTo ?? '…'}`);
  if (m.expiresAt) out(`expires:    ${m.expiresAt}`);
  if (m.supersededBy) out(`superseded by ${m.supersededBy}`);
  if (m.git) out(`git:        ${m.git.branch} @ ${m.git.commit.slice(0, 12)}`);
  for (const a of m.anchors)
    out(
      `anchor:     ${a.path}${a.startLine ? `:${a.startLine}${a.endLine ? `-${a.endLine}` : ''}` : ''}${a.symbol ? ` (${a.symbol})` : ''}${a.stale ? ' [stale]' : ''}`,
    );
  if (m.summary) out(`summary:    ${m.summary}`);
  out('');
  out(m.value);
}

export function printMemories(out: Out, items: Memory[]): void {
  if (items.length === 0) return out('no memories');
  const rows = items.map((m) => [
    `${m.namespace}/${m.key}`,
    m.kind,
    `v${m.version}`,
    m.updatedAt.slice(0, 19).replace('T', ' '),
    oneLine(m.summary ?? m.value, 60),
  ]);
  table(out, ['MEMORY', 'KIND', 'VER', 'UPDATED', 'VALUE'], rows);
}

/**
 * Search hits: namespace/key (what `cairn get` takes), kind and score; the snippet with its matches bold on a
 * terminal and unmarked otherwise. Ids are left to --json (and `cairn get`).
 */
export function printSearch(out: Out, r: SearchResult, p: Paint = paint(false)): void {
  if (r.degraded) out(p.dim(`(${r.mode} only: ${r.degraded})`));
  if (r.hits.length === 0) return out('no matches');
  r.hits.forEach((h, i) => {
    out(
      `${String(i + 1).padStart(2)}. ${p.bold(`${h.memory.namespace}/${h.memory.key}`)}  ${p.dim(`[${h.memory.kind}] score ${h.score.toFixed(4)}`)}`,
    );
    out(`    ${highlight(h.snippet, p)}`);
    if (h.explain)
      out(
        `    fts ${h.explain.fts ? `#${h.explain.fts.rank} ${h.explain.fts.score.toFixed(3)}` : '-'}  vector ${h.explain.vector ? `#${h.explain.vector.rank} ${h.explain.vector.score.toFixed(3)}` : '-'}  fused ${h.explain.fused.toFixed(4)}  boost ${h.explain.boost.toFixed(3)}`,
      );
  });
}

export function printHistory(out: Out, r: HistoryResult): void {
  for (const e of r.entries) {
    out(
      `#${e.seq} v${e.version} ${e.op.padEnd(9)} ${e.at}  by ${e.actor}${e.reason ? ` — ${e.reason}` : ''}${e.detail ? ` ${JSON.stringify(e.detail)}` : ''}`,
    );
    if (e.previous && e.state && e.previous.value !== e.state.value) {
      out(`    - ${oneLine(e.previous.value, 100)}`);
      out(`    + ${oneLine(e.state.value, 100)}`);
    } else if (!e.previous && e.state) out(`    + ${oneLine(e.state.value, 100)}`);
  }
  if (r.capped) out('(history is capped on this store: older entries may have been dropped)');
}

export function printStatus(
  out: Out,
  s: StoreStatusResult,
  via: string,
  project?: { namespace: string; source: 'git-remote' | 'folder'; folder: string },
): void {
  if (project)
    out(
      `project:    ${project.namespace} (from the ${project.source === 'git-remote' ? 'git remote' : 'name'} of ${project.folder}): the editor's "This project"; "." on the command line`,
    );
  out(`store:      ${s.path} (${(s.sizeBytes / 1024).toFixed(0)} KiB${describeFree(s.free)}, schema v${s.schemaVersion}) via ${via}`);
  if (s.daemon)
    out(`daemon:     pid ${s.daemon.pid}, v${s.daemon.version}, ${s.daemon.clients} client(s), socket ${s.daemon.socket ?? '-'}`);
  else if (via === 'direct') out('daemon:     not running (read from the store directly; commands that need one start it)');
  const c = s.counts;
  out(
    `memories:   ${c.active} active, ${c.proposed} proposed, ${c.superseded} superseded, ${c.deleted} deleted (${c.namespaces} namespaces)`,
  );
  out(
    `history:    ${c.history} entries${s.historyCap ? `, capped at ${s.historyCap} per memory` : ', complete'}; ${c.links} links; ${c.rejectedValues} rejected values`,
  );
  out(
    `changes:    position ${s.position}; ${s.indexes.map((i) => `${i.name} at ${i.watermark}${i.behind ? ` (${i.behind} behind)` : ''}`).join(', ')}`,
  );
  const e = s.embeddings;
  out(
    `embeddings: ${e.state}${e.model ? ` — ${e.model} (${e.dimension}-d)` : ''}; ${e.vectors} vectors, ${e.pending} pending${e.vectorExtension ? '' : '; sqlite-vec unavailable'}`,
  );
  if (e.fallbackReason) out(`            fell back from ${e.configuredModel}: ${e.fallbackReason}`);
  if (e.servingModel && e.servingModel !== e.model) out(`            searches use ${e.servingModel}'s vectors until the re-embed is done`);
}

function table(out: Out, head: string[], rows: string[][]): void {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]))).join('  ');
  out(line(head));
  for (const r of rows) out(line(r));
}
