/**
 * The public API of the Cairn extension for other extensions (version 1).
 *
 *   const cairn = await vscode.extensions.getExtension<CairnExtensionApi>('cairn.cairn')?.activate();
 *   if (cairn?.apiVersion === 1) { const hits = await cairn.search('how do we deploy'); ... }
 *
 * Documented in docs/extension-api.md. Every data type comes from the Cairn protocol module
 * (daemon/src/protocol), so what the API returns is exactly what the daemon returns.
 *
 * Compatibility: `apiVersion` changes only on an incompatible change; members may be added within a version.
 */
import type * as vscode from 'vscode';
import type { CairnError } from '../../../daemon/src/protocol/errors';
import type {
  DidChangeParams,
  InjectBlockResult,
  Memory,
  MemoryKind,
  Scope,
  SearchHit,
  SearchMode,
  Task,
  TaskDidChangeParams,
} from '../../../daemon/src/protocol/types';

export type { CairnError, DidChangeParams, InjectBlockResult, Memory, MemoryKind, Scope, SearchHit, SearchMode, Task, TaskDidChangeParams };

export const CAIRN_API_VERSION = 1 as const;

/** What `onDidChange` reports: a memory write (from anyone), a task change, or a new active task in this window. */
export type CairnChangeEvent =
  | { kind: 'memory'; change: DidChangeParams }
  | { kind: 'task'; change: TaskDidChangeParams }
  | { kind: 'activeTask'; taskId: string | null };

export interface CairnSearchOptions {
  /** Most hits (default 10, at most 50). */
  limit?: number;
  /** hybrid (default), fts or vector. */
  mode?: SearchMode;
  /** Narrower scope, inside the workspace scope (the project namespace and `user`); wider scopes fail with InvalidParams. */
  scope?: Scope;
  /** Also return proposed (unreviewed) memories. Default false. */
  includeProposed?: boolean;
}

export interface CairnRememberInput {
  key: string;
  value: string;
  /** Default: the workspace's project namespace (`user` without a folder). Must lie in the workspace scope. */
  namespace?: string;
  kind?: MemoryKind;
  tags?: string[];
  importance?: number;
  confidence?: number;
  /** Recorded as `agent:<source>` (default `agent:extension`): your extension's name, for the user's review. */
  source?: string;
  /** Why it is saved (kept in the history). */
  reason?: string;
}

/** A memory by id, or by key (namespace default: the project namespace, then `user`). */
export type CairnMemoryTarget = { id: string } | { key: string; namespace?: string };

export interface CairnTaskOptions {
  /** Start with "Don't inject memories" on. */
  dontInject?: boolean;
  /** Default: the workspace scope (project namespace + `user`). */
  scope?: Scope;
  /** Make it this window's active task (the one @cairn and the tools use). */
  activate?: boolean;
  /** Give it its own burner memory branch of the scope's root (with `cairn.branches.followGit`, following the git branch). */
  branch?: boolean;
}

export interface CairnInjectionOptions {
  /** Most memories (default: setting cairn.injection.k). */
  k?: number;
  /** Character budget (default: setting cairn.injection.budgetChars). */
  budgetChars?: number;
  /** 'auto' when you inject on your own initiative: refused (skipped: 'auto-off') unless automatic injection is on. Default 'explicit'. */
  trigger?: 'explicit' | 'auto';
}

/**
 * Version 1. Every method talks to the Cairn daemon; failures reject with a {@link CairnError} (from the protocol
 * module: `code`, `data.name` such as `NotFound` or `InvalidNamespace`, `data.field`), or a plain Error when the
 * daemon is not reachable.
 */
export interface CairnExtensionApi {
  readonly apiVersion: typeof CAIRN_API_VERSION;

  /** The workspace scope every call works in: the project namespace subtree plus `user`. */
  workspaceScope(): Scope;

  /** Ranked hybrid search in the workspace scope. Proposed, deleted, expired and superseded memories are left out. */
  search(query: string, options?: CairnSearchOptions): Promise<SearchHit[]>;
  /** One memory in full. */
  recall(target: CairnMemoryTarget): Promise<Memory>;
  /** Create or update a memory. An agent write: `proposed` while the user's cairn.review.agentWrites setting is on. */
  remember(input: CairnRememberInput): Promise<Memory>;
  /** Delete a memory and reject its value (it is not stored again). Resolves with the deleted memory. */
  forget(target: CairnMemoryTarget, reason?: string): Promise<Memory>;

  /** Create an agent task (shown in the Agent Tasks view). */
  createTask(title: string, options?: CairnTaskOptions): Promise<Task>;
  listTasks(): Promise<Task[]>;
  getTask(taskId: string): Promise<Task>;
  deleteTask(taskId: string): Promise<void>;
  /** The "Don't inject memories" toggle of a task (the same code path as the checkbox in the Agent Tasks view). */
  setDontInject(taskId: string, dontInject: boolean): Promise<Task>;
  /**
   * This window's active task, if any. While it has a memory branch (`createTask` with `branch: true`), search, recall,
   * remember and forget use it: reads see the branch, writes under its root stay there until the user merges it.
   */
  activeTaskId(): string | undefined;
  setActiveTask(taskId: string | undefined): Promise<void>;

  /**
   * The `<workspace_memories>` block for a prompt: the top memories in the task's scope (no task: the workspace
   * scope), recorded in the injection log. A task with "Don't inject memories" gets an empty block and
   * `skipped: 'disabled'`; nothing relevant gives `skipped: 'no-matches'`.
   */
  injectionBlock(taskId: string | undefined, prompt: string, options?: CairnInjectionOptions): Promise<InjectBlockResult>;

  /** Fires after memory writes (from any client), task changes and active-task changes. */
  readonly onDidChange: vscode.Event<CairnChangeEvent>;
}
