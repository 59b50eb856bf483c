/**
 * Every Cairn method and notification, declared once.
 *
 * Each entry holds the method name, a typed vscode-jsonrpc message type, and the
 * zod schemas of its params and result. The daemon dispatches from this table,
 * clients send through `.type`, the JSON Schema file and docs/protocol.md are
 * checked against it.
 */
import { NotificationType, ParameterStructures, RequestType } from 'vscode-jsonrpc';
import { z } from 'zod';
import * as T from './types';

export interface RequestDef<P extends z.ZodType, R extends z.ZodType> {
  kind: 'request';
  method: string;
  params: P;
  result: R;
  type: RequestType<z.infer<P>, z.infer<R>, unknown>;
  doc: string;
}
export interface NotificationDef<P extends z.ZodType> {
  kind: 'notification';
  method: string;
  params: P;
  type: NotificationType<z.infer<P>>;
  doc: string;
}

function request<P extends z.ZodType, R extends z.ZodType>(method: string, params: P, result: R, doc: string): RequestDef<P, R> {
  return { kind: 'request', method, params, result, type: new RequestType(method, ParameterStructures.byName), doc };
}
function notification<P extends z.ZodType>(method: string, params: P, doc: string): NotificationDef<P> {
  return { kind: 'notification', method, params, type: new NotificationType(method, ParameterStructures.byName), doc };
}

/** Version of the Cairn protocol (bumped on any incompatible change). */
export const PROTOCOL_VERSION = '1.0';

const Null = z.null();

export const Requests = {
  initialize: request(
    'initialize',
    T.InitializeParams,
    T.InitializeResult,
    'LSP lifecycle: returns server info, protocol version and capabilities.',
  ),
  shutdown: request(
    'shutdown',
    z.undefined().or(z.null()).optional(),
    Null,
    'LSP lifecycle: the client is about to exit; the daemon keeps serving other clients.',
  ),

  upsert: request('memory/upsert', T.UpsertParams, T.UpsertResult, 'Create or update the memory at (namespace, key).'),
  upsertBatch: request(
    'memory/upsertBatch',
    T.UpsertBatchParams,
    T.UpsertBatchResult,
    'Upsert many memories in one transaction; each item succeeds or fails on its own.',
  ),
  get: request('memory/get', T.GetParams, T.Memory, 'Read one memory by id or by (namespace, key).'),
  list: request('memory/list', T.ListParams, T.ListResult, 'Page through memories in scope, newest update first.'),
  delete: request('memory/delete', T.DeleteParams, T.WriteResult, 'Soft-delete a memory; the key stays deleted until restored.'),
  restore: request('memory/restore', T.RestoreParams, T.WriteResult, 'Bring a deleted memory back.'),
  forget: request('memory/forget', T.ForgetParams, T.WriteResult, 'Delete a memory and reject its value in its namespace.'),
  purge: request(
    'memory/purge',
    T.PurgeParams,
    T.PurgeResult,
    'Admin: remove a deleted memory from every table (history keeps a purge row).',
  ),
  erase: request(
    'memory/erase',
    T.EraseParams,
    T.EraseResult,
    'Remove a memory or a namespace subtree with its history, index rows and links, overwrite the freed space, truncate the WAL, and return a signed receipt.',
  ),
  history: request('memory/history', T.HistoryParams, T.HistoryResult, 'Every recorded operation on a memory, newest first.'),
  link: request('memory/link', T.LinkParams, T.LinkResult, 'Add a typed edge between two live memories.'),
  unlink: request('memory/unlink', T.UnlinkParams, T.UnlinkResult, 'Remove a typed edge.'),
  neighbors: request('memory/neighbors', T.NeighborsParams, T.NeighborsResult, 'Live memories linked to a memory.'),
  duplicates: request(
    'memory/duplicates',
    T.DuplicatesParams,
    T.DuplicatesResult,
    "The possible duplicates the vector index found for a memory's current version, or that its check is still pending.",
  ),
  search: request('memory/search', T.SearchParams, T.SearchResult, 'Ranked search (hybrid, full-text or vector) inside a scope.'),

  namespacesList: request('namespaces/list', T.NamespacesListParams, T.NamespacesListResult, 'Live namespaces with memory counts.'),
  namespacesRename: request(
    'namespaces/rename',
    T.NamespacesRenameParams,
    T.NamespacesRenameResult,
    'Rename a namespace subtree in one transaction.',
  ),
  namespacesDelete: request(
    'namespaces/delete',
    T.NamespacesDeleteParams,
    T.NamespacesDeleteResult,
    'Logically delete a namespace subtree; its memories vanish from reads at once.',
  ),

  status: request(
    'store/status',
    T.StoreStatusParams,
    T.StoreStatusResult,
    'Counts, schema version, change-log position, index watermarks, embeddings.',
  ),
  configure: request('store/configure', T.ConfigureParams, T.ConfigureResult, 'Store settings: the optional per-memory history cap.'),
  sweep: request(
    'store/sweep',
    T.SweepParams,
    T.SweepResult,
    'Expire memories past expiresAt, purge deleted namespaces and apply retention rules, in bounded batches.',
  ),
  retention: request(
    'store/retention',
    T.RetentionParams,
    T.RetentionResult,
    'Retention rules per namespace root (set one, clear one, or list them); the sweep enforces them.',
  ),
  audit: request(
    'store/audit',
    T.AuditParams,
    T.AuditResult,
    'History of every change (who, what, when, why) for a time range, in pages, oldest first.',
  ),
  exportRecords: request(
    'store/export',
    T.ExportParams,
    T.ExportResult,
    'Export namespaces, memories, history, links and rejected values.',
  ),
  exportPage: request(
    'store/exportPage',
    T.ExportPageParams,
    T.ExportPageResult,
    'Export in pages from one snapshot (cursor), for stores of any size; JSON Lines records as store/export, memory-major.',
  ),
  backup: request(
    'store/backup',
    T.BackupParams,
    T.BackupResult,
    'Online, consistent copy of the store (SQLite backup API) to a file the daemon writes, with store/progress notifications.',
  ),
  importRecords: request(
    'store/import',
    T.ImportParams,
    T.ImportResult,
    'Import records produced by store/export: exactly into the local store; into a team root through its write path.',
  ),
  importPreview: request(
    'store/importPreview',
    T.ImportPreviewParams,
    T.ImportPreviewResult,
    'Dry run of store/import: what each memory record would do (new, unchanged, changed, conflicting, refused); writes nothing.',
  ),
  overview: request(
    'store/overview',
    T.OverviewParams,
    T.OverviewResult,
    'Counts by namespace, kind and status, and writes per day by source, inside a scope.',
  ),

  branchCreate: request(
    'branch/create',
    T.BranchCreateParams,
    T.Branch,
    'Make a copy-on-write branch of a namespace subtree (nothing is copied); reads and writes with `branch` use it.',
  ),
  branchList: request('branch/list', T.BranchListParams, T.BranchListResult, 'Open branches (with `all`, merged and discarded ones too).'),
  branchDiff: request(
    'branch/diff',
    T.BranchNameParams,
    T.BranchDiffResult,
    "What a branch added, changed and deleted against the base, with each change's base version and conflicts.",
  ),
  branchMerge: request(
    'branch/merge',
    T.BranchMergeParams,
    T.BranchMergeResult,
    'Apply a branch to the base in one transaction through the normal write path; refused while a conflict has no resolution.',
  ),
  branchDiscard: request('branch/discard', T.BranchNameParams, T.BranchDiscardResult, 'Drop a branch and its rows.'),
  branchSync: request(
    'branch/sync',
    T.BranchSyncParams,
    T.BranchSyncResult,
    'Merge the memory branches whose followed git branch (branch/create `gitBranch`) this checkout shows merged.',
  ),
  gitMarkMerged: request(
    'git/markMerged',
    T.GitMarkMergedParams,
    T.GitMarkMergedResult,
    'Mark a git branch merged, so its memories are visible on every branch (a squash merge git cannot recognise), or unmark it.',
  ),

  tasksCreate: request(
    'tasks/create',
    T.TaskCreateParams,
    T.Task,
    'Create an agent task (a unit of agent work with its own scope and injection toggle).',
  ),
  tasksUpdate: request('tasks/update', T.TaskUpdateParams, T.Task, 'Change a task: title, scope, status, or the "don\'t inject" toggle.'),
  tasksGet: request('tasks/get', T.TaskGetParams, T.Task, 'Read one task.'),
  tasksList: request('tasks/list', T.TaskListParams, T.TaskListResult, 'Tasks, newest first.'),
  tasksDelete: request('tasks/delete', T.TaskGetParams, T.TaskDeleteResult, 'Delete a task (its injection log stays).'),
  injectBlock: request(
    'inject/block',
    T.InjectBlockParams,
    T.InjectBlockResult,
    'The top-K memories for a prompt rendered as a <workspace_memories> block, recorded in the injection log.',
  ),
  injectLog: request(
    'inject/log',
    T.InjectLogParams,
    T.InjectLogResult,
    'Which memories were injected into which task, and which tasks used a memory.',
  ),

  anchorsCheck: request(
    'anchors/check',
    T.AnchorsCheckParams,
    T.AnchorsCheckResult,
    'Re-check the anchors under a workspace folder against its files: follow moved code and git renames, mark the gone stale (their memories go to review).',
  ),
  episodesStart: request(
    'episodes/start',
    T.EpisodeStartParams,
    T.EpisodeStartResult,
    'Start an episode (a session) in a project namespace; starting a client-chosen id again returns it.',
  ),
  eventsAppend: request(
    'events/append',
    T.EventAppendParams,
    T.EventAppendResult,
    'Append a batch of events to an episode, idempotent per (episode, seq); credential-looking text is marked secret.',
  ),
  episodesEnd: request('episodes/end', T.EpisodeEndParams, T.Episode, 'Mark an episode ended; it takes no more events.'),
  episodesGet: request('episodes/get', T.EpisodeGetParams, T.EpisodeGetResult, 'One episode and its events in order, in pages.'),
  episodesList: request(
    'episodes/list',
    T.EpisodeListParams,
    T.EpisodeListResult,
    'Episodes in scope, newest start first, by time range, task, source or branch.',
  ),
  eventsSearch: request(
    'events/search',
    T.EventSearchParams,
    T.EventSearchResult,
    'Ranked search over events (hybrid, full-text or vector) in a scope, with filters, a time range and relative time phrases.',
  ),
  episodesSearch: request(
    'episodes/search',
    T.EpisodeSearchParams,
    T.EpisodeSearchResult,
    'Episodes ranked for a query by their matching events (each with its best events), in a scope, with filters and time phrases.',
  ),
  eventsExpand: request(
    'events/expand',
    T.EventExpandParams,
    T.EventExpandResult,
    'An event with its neighbours in its episode: n before and after, or a time window.',
  ),
  episodesTimeline: request(
    'episodes/timeline',
    T.EpisodeTimelineParams,
    T.EpisodeTimelineResult,
    'Short entries around an anchor event by reference time, across the episodes in scope.',
  ),
  episodesPropose: request(
    'episodes/propose',
    T.EpisodeProposeParams,
    T.EpisodeProposeResult,
    'Turn events into a proposed memory (review queue) whose provenance is the source event positions.',
  ),
  episodesErase: request(
    'episodes/erase',
    T.EpisodeEraseParams,
    T.EpisodeEraseResult,
    'Remove an episode, its events, their index rows and vectors from the disk, truncate the WAL, and return a signed receipt.',
  ),
  episodesRemovals: request(
    'episodes/removals',
    T.EpisodeRemovalsParams,
    T.EpisodeRemovalsResult,
    'The log of what erase and retention removed from the event log (counts and ids, no text), newest first.',
  ),

  indexWait: request('index/wait', T.IndexWaitParams, T.IndexWaitResult, 'Wait until the vector index includes a change-log position.'),
  indexRebuild: request('index/rebuild', T.IndexRebuildParams, T.IndexRebuildResult, 'Re-embed everything, optionally switching model.'),
} as const;

export const Notifications = {
  initialized: notification('initialized', z.unknown(), 'LSP lifecycle: client finished initializing.'),
  exit: notification('exit', z.unknown(), 'LSP lifecycle: the client connection ends.'),
  didChange: notification('memory/didChange', T.DidChangeParams, 'Broadcast to every client after each write.'),
  tasksDidChange: notification('tasks/didChange', T.TaskDidChangeParams, 'Broadcast after a task is created, updated or deleted.'),
  progress: notification('store/progress', T.ProgressParams, 'Progress of a long store operation (backup), broadcast to every client.'),
  indexProgress: notification('index/progress', T.IndexProgressParams, 'Progress of a background re-embed.'),
  possibleDuplicates: notification(
    'memory/possibleDuplicates',
    T.PossibleDuplicatesParams,
    'Broadcast when the background duplicate check of a write found possible duplicates.',
  ),
} as const;

export type RequestName = keyof typeof Requests;
export type ParamsOf<K extends RequestName> = z.infer<(typeof Requests)[K]['params']>;
export type ResultOf<K extends RequestName> = z.infer<(typeof Requests)[K]['result']>;
