/**
 * inject/block: the top-K relevant memories for a prompt, rendered as a
 * <workspace_memories> block that memory text cannot break out of.
 *
 * - A task with "don't inject" gets no block (skipped: 'disabled'), whatever the caller asks.
 * - trigger 'auto' gets no block while automatic injection is off (the default; store/configure injectAuto).
 * - Candidates come from hybrid search inside the task's scope (or the given scope) with the default
 *   visibility rules — so deleted, expired, superseded, out-of-validity and proposed memories are never
 *   candidates — and with memories tagged `secret` (in any spelling: tags compare normalized) filtered out
 *   inside the query, unless the caller passes `allowSecrets` (the user's cairn.agents.allowSecrets setting).
 * - Minimum relevance: a memory must match the prompt's words (full-text arm) or be at least
 *   MIN_VECTOR_SIMILARITY close in meaning (vector arm).
 * - Budget: the whole block stays within the character budget; a long memory is cut to fit rather than dropped.
 * - Every call is recorded in the injection log (task, memory ids, event positions, prompt hash, time, skip reason).
 * - With `events: n`, up to n relevant events (never secret ones) with their neighbours follow as a <workspace_events>
 *   section inside the same budget (inject-events.ts).
 * - Escaping: every character of memory-derived text that could open or close markup (<, >, &, and " in
 *   attributes) is replaced by its XML entity, so no value can fake or close a tag of the block.
 * - Citations: a memory's anchors that still match are listed in its `anchors` attribute (re-located ones say so).
 *   With `root`, each chosen memory's anchors are first checked against the files there (anchors/check.ts, the
 *   just-in-time citation check): moved code is followed, and a memory whose code is gone goes to review instead of
 *   into the block.
 */
import type { Anchor, Filter, InjectBlockParams, InjectBlockResult, Memory, Scope, SearchParams, SearchResult } from '../protocol/types';
import { Limits } from '../protocol/types';
import type { Store } from '../store/store';
import type { Tasks } from '../store/tasks';
import { sha256 } from '../text/hash';
import { isSecretTagged, SECRET_TAG } from '../text/secrets';
import { search, type VectorSearcher } from './search';
import { diskFiles, inUserTree, recheckAnchors } from '../anchors/check';
import { relevantEvents, renderEvents, type EventSources } from './inject-events';

export const INJECT_DEFAULT_K = 8;
export const INJECT_DEFAULT_BUDGET = 4000;
export const MIN_VECTOR_SIMILARITY = 0.35;
export { SECRET_TAG };
const OPEN = '<workspace_memories>\n';
const CLOSE = '</workspace_memories>';
const MIN_EXCERPT = 80;

export function escapeText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
export function escapeAttr(s: string): string {
  return escapeText(s)
    .replace(/"/g, '&quot;')
    .replace(/[\r\n]/g, ' ');
}

/** The anchors that still match, as "path:start-end", re-located ones marked. */
export function citations(anchors: Anchor[]): string {
  return anchors
    .filter((a) => !a.stale)
    .map((a) => {
      const lines =
        a.startLine === undefined ? '' : `:${a.startLine}${a.endLine !== undefined && a.endLine !== a.startLine ? `-${a.endLine}` : ''}`;
      const how = a.relocated ? (a.relocated.how === 'similar' ? ' (code changed since)' : ' (re-located)') : '';
      return `${a.path}${lines}${a.symbol ? `#${a.symbol}` : ''}${how}`;
    })
    .join(', ');
}

function entry(m: Memory, text: string): string {
  const cited = citations(m.anchors);
  return `<memory namespace="${escapeAttr(m.namespace)}" key="${escapeAttr(m.key)}" kind="${m.kind}"${cited ? ` anchors="${escapeAttr(cited)}"` : ''}>\n${escapeText(text)}\n</memory>\n`;
}

/** `searchAll`: the daemon's routed search (local + team stores, each inside its part of the scope), when team memory is attached. */
export async function injectBlock(
  store: Store,
  tasks: Tasks,
  p: InjectBlockParams,
  vectors?: VectorSearcher,
  searchAll?: (p: SearchParams) => Promise<SearchResult>,
  eventSources?: EventSources,
): Promise<InjectBlockResult> {
  const task = p.taskId !== undefined ? tasks.get(p.taskId) : null;
  const promptHash = sha256(p.prompt);
  const skip = (why: NonNullable<InjectBlockResult['skipped']>): InjectBlockResult => ({
    block: '',
    memoryIds: [],
    memories: [],
    skipped: why,
    logSeq: tasks.logInjection(task?.id ?? null, [], promptHash, why),
  });
  if (task?.dontInject) return skip('disabled');
  if ((p.trigger ?? 'explicit') === 'auto' && !tasks.injectAuto()) return skip('auto-off');

  const k = p.k ?? INJECT_DEFAULT_K;
  const budget = Math.min(p.budgetChars ?? INJECT_DEFAULT_BUDGET, p.budgetTokens !== undefined ? p.budgetTokens * 4 : Infinity);
  const scope: Scope | undefined = task ? task.scope : p.scope;
  // The events section (inject-events.ts): asked for, and relevant events found, it keeps a third of the budget from
  // the memories; it then fills what the memories left.
  const eventHits = p.events && eventSources ? await relevantEvents(store, eventSources, p.prompt, scope, p.events) : [];
  const memoryBudget = eventHits.length ? budget - Math.floor(budget / 3) : budget;
  const noSecrets: Filter | undefined = p.allowSecrets ? undefined : { field: 'tags', op: 'hasNone', value: [SECRET_TAG] };
  const sp: SearchParams = {
    query: p.prompt.slice(0, Limits.queryChars),
    scope,
    ...(noSecrets ? { filter: noSecrets } : {}),
    limit: Math.min(200, k * 3),
    mode: 'hybrid',
    explain: true,
    ...(task?.branch ? { branch: task.branch } : {}),
    ...(p.git ? { git: p.git } : {}),
  };
  const result = searchAll ? await searchAll(sp) : await search(store, sp, vectors);
  const relevant = result.hits.filter(
    (h) =>
      (p.allowSecrets || !isSecretTagged(h.memory.tags)) &&
      h.explain &&
      (h.explain.fts !== null || (h.explain.vector?.score ?? 0) >= MIN_VECTOR_SIMILARITY),
  );

  let used = OPEN.length + CLOSE.length;
  let block = OPEN;
  const chosen: InjectBlockResult['memories'] = [];
  const files = p.root ? diskFiles(p.root) : null;
  for (const h of relevant) {
    if (chosen.length >= k) break;
    let m = h.memory;
    if (files && h.store !== 'team' && !inUserTree(m.namespace) && m.anchors.some((a) => !a.stale)) {
      // the just-in-time citation check: the code this memory cites, as it is on disk now
      const row = store.anchorsOf(m.id);
      if (row && recheckAnchors(store, [row], files).stale > 0) continue; // it went to review
      const now = store.anchorsOf(m.id);
      if (now) m = { ...m, anchors: now.anchors };
    }
    let text = m.summary ?? m.value;
    let e = entry(m, text);
    if (used + e.length > memoryBudget) {
      const room = memoryBudget - used - (e.length - escapeText(text).length) - 1;
      if (room < MIN_EXCERPT) continue;
      // cut on the escaped length so the budget holds after escaping
      let cut = text.slice(0, room);
      while (escapeText(cut).length > room) cut = cut.slice(0, -Math.max(1, escapeText(cut).length - room));
      text = cut.trimEnd() + '…';
      e = entry(m, text);
      if (used + e.length > memoryBudget) continue;
    }
    block += e;
    used += e.length;
    chosen.push({ id: m.id, namespace: m.namespace, key: m.key, kind: m.kind, score: h.score });
  }
  block += CLOSE;
  if (chosen.length === 0) {
    block = '';
    used = 0;
  }
  const ev = renderEvents(eventHits, budget - used);
  if (chosen.length === 0 && ev.events.length === 0) return skip('no-matches');
  if (ev.text) block = block ? `${block}\n${ev.text}` : ev.text;
  const ids = chosen.map((c) => c.id);
  const positions = ev.events.map((e) => e.position);
  return {
    block,
    memoryIds: ids,
    memories: chosen,
    ...(p.events ? { events: ev.events } : {}),
    logSeq: tasks.logInjection(task?.id ?? null, ids, promptHash, null, positions),
  };
}
