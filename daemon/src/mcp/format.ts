/**
 * Tool results as text written for a model to read: one memory per block,
 * the facts an agent needs to act (namespace/key, id, kind, status, value),
 * nothing it does not.
 */
import { CairnError, errorDescriptions, errorSentence, type ErrorCodeName } from '../protocol/errors';
import type { Memory, NeighborsResult, SearchResult, StoreStatusResult, UpsertResult } from '../protocol/types';
import { oneLine } from '../text/format';

/** Values longer than this are shown by their summary (or cut) in lists; cairn_recall shows them whole. */
export const LIST_VALUE_CHARS = 400;

function anchorText(a: Memory['anchors'][number]): string {
  const state = a.stale
    ? ` [stale: ${a.staleReason ?? 'the code moved or disappeared'}]`
    : a.relocated
      ? a.relocated.how === 'similar'
        ? ' [the code changed since it was anchored]'
        : ` [re-located from ${a.relocated.from}]`
      : '';
  return `${a.path}${a.startLine ? `:${a.startLine}${a.endLine && a.endLine !== a.startLine ? `-${a.endLine}` : ''}` : ''}${a.symbol ? ` (${a.symbol})` : ''}${state}`;
}

/** `namespace/key` plus the facts in one line. */
export function memoryHeading(m: Memory): string {
  const facts = [m.kind, `importance ${m.importance}`];
  if (m.status !== 'active')
    facts.push(m.status === 'proposed' ? 'proposed (awaiting the user’s review)' : `superseded by ${m.supersededBy}`);
  if (m.deletedAt) facts.push(`deleted ${m.deletedAt}`);
  return `${m.namespace}/${m.key} — ${facts.join(', ')} — id ${m.id}`;
}

/** A memory in a list: heading, shortened value, tags and anchors. */
export function memoryBrief(m: Memory, text?: string): string {
  const lines = [memoryHeading(m)];
  const body = text ?? (m.value.length > LIST_VALUE_CHARS ? (m.summary ?? oneLine(m.value, LIST_VALUE_CHARS)) : m.value);
  lines.push(...body.split('\n').map((l) => `   ${l}`));
  if (m.tags.length) lines.push(`   tags: ${m.tags.join(', ')}`);
  if (m.anchors.length) lines.push(`   anchors: ${m.anchors.map(anchorText).join('; ')}`);
  return lines.join('\n');
}

/** A memory in full (cairn_recall). */
export function memoryFull(m: Memory): string {
  const lines = [memoryHeading(m)];
  lines.push(`version ${m.version}, updated ${m.updatedAt}, source ${m.source}, confidence ${m.confidence}`);
  if (m.tags.length) lines.push(`tags: ${m.tags.join(', ')}`);
  for (const a of m.anchors) lines.push(`anchor: ${anchorText(a)}`);
  if (m.validFrom || m.validTo) lines.push(`valid: ${m.validFrom ?? '…'} → ${m.validTo ?? '…'}`);
  if (m.expiresAt) lines.push(`expires: ${m.expiresAt}`);
  const props = Object.entries(m.properties);
  if (props.length) lines.push(`properties: ${props.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}`);
  lines.push('', m.value);
  return lines.join('\n');
}

export function scopeText(s: { root?: string; namespaces?: string[]; includeUser?: boolean }): string {
  const parts = [...(s.root ? [`${s.root} (and below)`] : []), ...(s.namespaces ?? [])];
  if (s.includeUser !== false) parts.push('user');
  return parts.join(' + ');
}

export function searchText(query: string, r: SearchResult, scope: string): string {
  const head =
    r.hits.length === 0
      ? `No memories match "${oneLine(query, 80)}" in ${scope}.`
      : `${r.hits.length} memor${r.hits.length === 1 ? 'y' : 'ies'} for "${oneLine(query, 80)}" in ${scope}, best first:`;
  const lines = [head];
  if (r.degraded) lines.push(`(search mode ${r.mode}: ${r.degraded})`);
  r.hits.forEach((h, i) => {
    const m = h.memory;
    const text =
      m.value.length > LIST_VALUE_CHARS ? `${m.summary ?? h.snippet}\n(value shortened: cairn_recall id ${m.id} for all of it)` : m.value;
    lines.push('', `${i + 1}. ${memoryBrief(m, text)}`);
  });
  return lines.join('\n');
}

export function listText(items: Memory[], nextCursor: string | null, scope: string): string {
  const lines = [
    items.length === 0
      ? `No memories in ${scope}.`
      : `${items.length} memor${items.length === 1 ? 'y' : 'ies'} in ${scope}, most recently updated first:`,
  ];
  items.forEach((m, i) => lines.push('', `${i + 1}. ${memoryBrief(m)}`));
  if (nextCursor) lines.push('', `More memories follow: call cairn_list again with cursor "${nextCursor}".`);
  return lines.join('\n');
}

export function rememberText(r: UpsertResult): string {
  const m = r.memory;
  const verb = r.created ? 'Saved new memory' : r.changed ? 'Updated memory' : 'Memory unchanged (same content)';
  const lines = [`${verb} ${m.namespace}/${m.key} (id ${m.id}, version ${m.version}).`];
  if (m.status === 'proposed')
    lines.push(
      'Its status is proposed: the user reviews it in the Cairn view before it is used in prompts; it is not returned by cairn_search unless includeProposed is true.',
    );
  for (const w of r.warnings ?? []) lines.push(`Warning: ${w.message}. Do not store credentials in memories.`);
  for (const d of r.possibleDuplicates ?? []) {
    lines.push(
      `Possible duplicate: ${d.namespace}/${d.key} (id ${d.id}, similarity ${d.similarity}). If it says the same thing, update that memory instead (same namespace and key) and forget this one.`,
    );
  }
  return lines.join('\n');
}

export function neighborsText(id: string, r: NeighborsResult): string {
  if (r.neighbors.length === 0) return `Memory ${id} has no linked memories in scope.`;
  const lines = [`${r.neighbors.length} memor${r.neighbors.length === 1 ? 'y is' : 'ies are'} linked to ${id}:`];
  for (const n of r.neighbors) {
    lines.push('', `${n.direction === 'out' ? `${id} —${n.type}→ this` : `this —${n.type}→ ${id}`}: ${memoryBrief(n.memory)}`);
  }
  return lines.join('\n');
}

export function statusText(
  s: StoreStatusResult,
  session: { root: string; rootSource: string; dir: string | null; review: boolean; actor: string; branch?: string | null },
): string {
  const c = s.counts;
  const e = s.embeddings;
  return [
    `Cairn store ${s.path} (schema v${s.schemaVersion}, ${(s.sizeBytes / 1024).toFixed(0)} KiB).`,
    `Memories: ${c.active} active, ${c.proposed} proposed, ${c.superseded} superseded, ${c.deleted} deleted, in ${c.namespaces} namespaces; ${c.links} links.`,
    `Search: full-text always; vectors ${e.state}${e.model ? ` (${e.model}${e.dimension ? `, ${e.dimension}-d` : ''})` : ''}${e.fallbackReason ? ` — ${e.fallbackReason}` : ''}${e.pending ? `, ${e.pending} memories waiting to be embedded` : ''}.`,
    ...(s.daemon ? [`Daemon: pid ${s.daemon.pid}, version ${s.daemon.version}, ${s.daemon.clients} client(s).`] : []),
    `This session: scope ${session.root} (from ${session.rootSource === 'option' ? '--root' : session.rootSource === 'env' ? 'CAIRN_SCOPE_ROOT' : `the ${session.rootSource === 'git-remote' ? 'git remote' : 'folder name'} of ${session.dir}`}) plus user; new memories are ${session.review ? 'proposed for the user’s review' : 'active at once'}; writes are recorded as ${session.actor}.`,
    ...(session.branch
      ? [`Active task's memory branch: ${session.branch} (writes under its root stay there until the user merges it).`]
      : []),
  ].join('\n');
}

const hints: Partial<Record<ErrorCodeName, string>> = {
  InvalidNamespace: 'Namespaces are lowercase dotted segments such as project.web or user.preferences ([a-z0-9][a-z0-9_-]* each).',
  NotFound: 'Check the id, or the namespace and key, with cairn_search or cairn_list.',
  Deleted: 'The user deleted this key. Use another key, or ask the user to restore it.',
  RejectedValue: 'The user told Cairn to forget this value in this namespace. Do not store it again unless the user asks.',
  VersionConflict: 'The memory changed since you read it: cairn_recall it again and retry with its current version.',
  ValueTooLarge: 'Store a shorter value: summarize, or split it into several memories.',
  StoreBusy: 'The store is busy; try again in a moment.',
  InvalidState: 'The request does not fit the memory’s current state.',
};

/** The text of a failed tool call: code name, number, offending field, message and what to do. */
export function errorText(e: CairnError): string {
  const field = e.data.field ? ` in field "${e.data.field}"` : '';
  const hint = hints[e.data.name] ?? errorDescriptions[e.data.name] ?? '';
  return `Cairn error ${e.data.name} (${e.code})${field}: ${errorSentence(e)}${hint ? `\n${hint}` : ''}`;
}
