/**
 * The dashboard webview's message protocol, declared once for both sides: the webview (webview/src) imports
 * its types, the extension (extension/src/dashboard) validates every incoming message with these schemas.
 *
 * The webview never reaches the daemon. It sends `request` messages with an id; the extension answers each with
 * exactly one `response` or `error` carrying the same id. Daemon requests are named by their key in `Requests`
 * (methods.ts) and carry that method's own params and result; only the ones listed in WEBVIEW_DAEMON_REQUESTS
 * are forwarded. `host/*` requests are answered by the extension itself (files, editors, import in chunks).
 * Errors are typed, from Cairn's closed set: a daemon error keeps its code, name and data (data.field names the
 * offending field); a daemon the extension cannot reach is `Unavailable`.
 */
import { z } from 'zod';
import type { CairnErrorData, ErrorCodeName } from './errors';
import type { ParamsOf, ResultOf } from './methods';
import * as T from './types';

/** Daemon requests the dashboard may send; the extension forwards them unchanged. */
export const WEBVIEW_DAEMON_REQUESTS = [
  'search',
  'get',
  'list',
  'upsert',
  'delete',
  'restore',
  'forget',
  'history',
  'link',
  'unlink',
  'neighbors',
  'namespacesList',
  'status',
  'overview',
  'injectLog',
  'tasksList',
  // The Timeline tab (docs/episodes.md): episodes by time, their events, search with expand, proposals.
  'episodesList',
  'episodesGet',
  'eventsSearch',
  'eventsExpand',
  'episodesTimeline',
  'episodesPropose',
  // The Branches tab (docs/branches.md): open memory branches, a new one, their diff, merge with resolutions, discard.
  'branchList',
  'branchCreate',
  'branchDiff',
  'branchMerge',
  'branchDiscard',
] as const;
export type WebviewDaemonRequest = (typeof WEBVIEW_DAEMON_REQUESTS)[number];

/** A view of the dashboard the extension asks it to show (e.g. "Cairn: Review Memory Branches"). */
export const WebviewShow = z.object({ tab: z.literal('branches'), branch: z.string().optional() });
export type WebviewShow = z.infer<typeof WebviewShow>;

/** What the dashboard needs to know about its window at start. */
export const WebviewInit = z.object({
  /** This workspace's namespace (`project.<slug>`), or null without a folder. */
  projectNamespace: z.string().nullable(),
  kinds: z.array(z.string()),
  statuses: z.array(z.string()),
  linkTypes: z.array(z.string()),
  searchModes: z.array(z.string()),
  connected: z.boolean(),
  /** The view a command opened the dashboard on, shown once at start. */
  show: WebviewShow.optional(),
});
export type WebviewInit = z.infer<typeof WebviewInit>;

export const ImportApplyResult = z.object({
  memories: z.number().int(),
  history: z.number().int(),
  links: z.number().int(),
  skipped: z.number().int(),
  position: z.number().int(),
  episodes: z.number().int().optional(),
  events: z.number().int().optional(),
});

/** A previewed import: the records stay in the extension under `token` until applied. */
export const ImportPreviewHostResult = z.object({
  token: z.string(),
  name: z.string(),
  lines: z.number().int(),
  preview: T.ImportPreviewResult,
});

/** Requests the extension answers itself: params and result schemas. */
export const HostRequests = {
  'host/init': { params: z.object({}).strict(), result: WebviewInit },
  /** Open the anchored code location in an editor beside the dashboard (never in its place). */
  'host/openAnchor': { params: z.object({ anchor: T.Anchor }).strict(), result: z.object({ opened: z.boolean() }) },
  /**
   * Ask before an action that cannot simply be taken back (delete, forget, reject, discarding an unsaved edit): a
   * modal dialog in the editor, as the extension's own commands ask. `confirmed` is true only when the user chose
   * the `confirm` button.
   */
  'host/confirm': {
    params: z
      .object({ message: z.string().min(1).max(500), detail: z.string().max(2000).optional(), confirm: z.string().min(1).max(60) })
      .strict(),
    result: z.object({ confirmed: z.boolean() }),
  },
  /** Export a scope to a JSON Lines file the user picks; file is null when the user cancelled. */
  'host/export': {
    params: z.object({ scope: T.Scope.optional() }).strict(),
    result: z.object({ file: z.string().nullable(), records: z.number().int() }),
  },
  /** Parse a JSON Lines export (the file's text, read in the webview) and preview it; the records stay in the extension under `token`. */
  'host/importPreview': {
    params: z.object({ name: z.string().max(1000), text: z.string().max(T.Limits.messageBytes) }).strict(),
    result: ImportPreviewHostResult,
  },
  /** Ask for a file in the editor's own open dialog, read it in the extension and preview it; null when cancelled. */
  'host/importPick': { params: z.object({}).strict(), result: ImportPreviewHostResult.nullable() },
  /** Apply a previewed import in chunks; `progress` messages with this request's id report memories done. */
  'host/importApply': { params: z.object({ token: z.string().min(1).max(100) }).strict(), result: ImportApplyResult },
} as const;
export type HostMethod = keyof typeof HostRequests;

export type WebviewMethod = WebviewDaemonRequest | HostMethod;
export type WebviewParams<M extends WebviewMethod> = M extends WebviewDaemonRequest
  ? ParamsOf<M>
  : M extends HostMethod
    ? z.input<(typeof HostRequests)[M]['params']>
    : never;
export type WebviewResult<M extends WebviewMethod> = M extends WebviewDaemonRequest
  ? ResultOf<M>
  : M extends HostMethod
    ? z.infer<(typeof HostRequests)[M]['result']>
    : never;

/** webview → extension */
export const WebviewRequestMessage = z
  .object({ type: z.literal('request'), id: z.number().int().min(0), method: z.string().min(1).max(100), params: z.unknown() })
  .strict();
export type WebviewRequestMessage = z.infer<typeof WebviewRequestMessage>;
export type ToHost = WebviewRequestMessage;

/**
 * Every error is one of Cairn's closed set (errors.ts): a daemon error keeps its code, name and data; a daemon the
 * extension cannot reach, or that does not answer in time, is `Unavailable` (data.sent says whether it was sent).
 */
export type WebviewErrorName = ErrorCodeName;
export interface WebviewError {
  code: number;
  name: WebviewErrorName;
  message: string;
  data: Partial<CairnErrorData>;
}

/** extension → webview */
export type ToWebview =
  | { type: 'response'; id: number; result: unknown }
  | { type: 'error'; id: number; error: WebviewError }
  | { type: 'progress'; id: number; done: number; total: number }
  /** Forwarded memory/didChange. */
  | { type: 'didChange'; change: T.DidChangeParams }
  | { type: 'connection'; connected: boolean; state: string }
  /** Show this view (a command asked for it while the dashboard was open). */
  | { type: 'show'; show: WebviewShow };

export function isWebviewMethod(m: string): m is WebviewMethod {
  return (WEBVIEW_DAEMON_REQUESTS as readonly string[]).includes(m) || Object.prototype.hasOwnProperty.call(HostRequests, m);
}
