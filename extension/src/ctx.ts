/**
 * The extension's lifetime: owns the config, the daemon client, the views and every disposable.
 * Commands and views receive the Ctx; nothing else holds global state.
 */
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as vscode from 'vscode';
import { DaemonClient } from './client';
import { Config } from './config';
import type { MemoryFileSystem, ViewDocuments } from './documents';
import { decorateHover, type HoverStats } from './hover';
import type { GitWatch } from './git';
import type { MemoryTree } from './memoryTree';
import type { StatusBar } from './statusBar';
import { deriveProjectNamespace, type ProjectNamespace } from './project';
import { windowUi, type Ui } from './ui';

/** Milestones since activate() began, in ms; each recorded once. */
export class Metrics {
  readonly startedAt = performance.now();
  readonly marks: Record<string, number> = {};
  private readonly emitter = new vscode.EventEmitter<string>();
  readonly onDidMark = this.emitter.event;

  mark(name: string, when = true): void {
    if (!when || name in this.marks) return;
    this.marks[name] = Math.round(performance.now() - this.startedAt);
    this.emitter.fire(name);
  }

  /** Resolves with the milestone's time once it happened. */
  when(name: string): Promise<number> {
    if (name in this.marks) return Promise.resolve(this.marks[name]);
    return new Promise((resolve) => {
      const d = this.onDidMark((n) => {
        if (n === name) {
          d.dispose();
          resolve(this.marks[name]);
        }
      });
    });
  }
}

export class Ctx implements vscode.Disposable {
  readonly config = new Config();
  readonly output: vscode.LogOutputChannel;
  readonly client: DaemonClient;
  readonly metrics = new Metrics();
  readonly hoverStats: HoverStats = { count: 0, totalMs: 0, lastMs: 0 };
  /** Things tests wait for (search results shown, ...); no production listener. */
  readonly events = new vscode.EventEmitter<{ type: string; data?: unknown }>();
  /** Swappable for tests (see ui.ts). */
  ui: Ui = windowUi();
  /** The workspace repository's checkout (git-aware memory, git.ts). */
  git!: GitWatch;
  tree!: MemoryTree;
  statusBar!: StatusBar;
  views!: ViewDocuments;
  memoryFs!: MemoryFileSystem;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(readonly extension: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('Cairn', { log: true });
    this.push(this.output, this.events);
    this.client = new DaemonClient({
      extensionPath: extension.extensionPath,
      logFile: path.join(extension.logUri.fsPath, 'daemon.log'),
      output: this.output,
      config: this.config,
      ui: () => this.ui,
      hover: (doc, pos, token, next) => decorateHover(this, doc, pos, token, next),
      initializationOptions: () => ({
        projectNamespace: this.project?.namespace ?? null,
        includeUser: this.config.includeUser,
        gitVisibility: this.config.get('cairn.git.visibility'),
      }),
    });
  }

  push(...d: vscode.Disposable[]): void {
    this.disposables.push(...d);
  }

  /** The workspace's namespace (`project.<slug>`), or null without a folder. */
  get project(): ProjectNamespace | null {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    return deriveProjectNamespace(folder?.scheme === 'file' ? folder.fsPath : undefined, this.config.get('cairn.scope.projectNamespace'));
  }

  /** Namespace new memories go to by default. */
  get defaultNamespace(): string {
    return this.project?.namespace ?? 'user';
  }

  async dispose(): Promise<void> {
    for (const d of this.disposables.splice(0).reverse()) {
      try {
        d.dispose();
      } catch {
        // keep disposing the rest
      }
    }
    await this.client.dispose();
  }
}
