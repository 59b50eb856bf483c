/**
 * The connection to the Cairn daemon. The only module that imports vscode-languageclient.
 *
 * One daemon per store serves every window: connect to its socket when one runs, else start it detached
 * (bootstrap.ts) and connect. When the connection drops, reconnect (starting a new daemon when the old
 * one died) and tell the user; after repeated failures stop trying and say so. Requests never wait
 * forever: each has a timeout, and a window that is not connected fails them at once.
 */
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  type LanguageClientOptions,
  type ServerOptions,
  type StreamInfo,
} from 'vscode-languageclient/node';
import { Notifications, Requests, type ParamsOf, type RequestName, type ResultOf } from '../../daemon/src/protocol/methods';
import type { DidChangeParams, IndexProgressParams, InitializeResult } from '../../daemon/src/protocol/types';
import { checkParamsShape } from '../../daemon/src/protocol/shape';
import { BootstrapError, connectSocket, ensureDaemon, readDaemonInfo, resolveTarget, sleep, stopProcess, type Target } from './bootstrap';
import type { Config } from './config';
import { NotConnectedError, RequestTimeoutError } from './errors';
import { HOVER_COMMANDS } from './hover';
import type { Ui } from './ui';
import { withTimeout } from '../../daemon/src/wait';

export type DaemonState =
  | { kind: 'stopped' }
  | { kind: 'starting'; detail: string }
  | { kind: 'connected'; socket: string; pid: number | null; version: string | null }
  | { kind: 'error'; message: string };

export type HoverMiddleware = (
  document: vscode.TextDocument,
  position: vscode.Position,
  token: vscode.CancellationToken,
  next: () => Promise<vscode.Hover | null | undefined>,
) => Promise<vscode.Hover | null | undefined>;

export interface DaemonClientOptions {
  extensionPath: string;
  logFile: string;
  output: vscode.LogOutputChannel;
  config: Config;
  ui: () => Ui;
  hover: HoverMiddleware;
  initializationOptions: () => Record<string, unknown>;
}

/** Default and long request timeouts (ms). */
export const TIMEOUT_MS = 30_000;
export const LONG_TIMEOUT_MS = 10 * 60_000;

/** More than this many unexpected disconnects inside the window below: stop reconnecting. */
const MAX_RECONNECTS = 5;
const RECONNECT_WINDOW_MS = 3 * 60_000;

export class DaemonClient implements vscode.Disposable {
  private lc: LanguageClient | undefined;
  private _state: DaemonState = { kind: 'stopped' };
  private connecting: Promise<void> | undefined;
  private disposed = false;
  /** Set while a deliberate restart kills the daemon, so its disconnect is not reported as a crash. */
  private restarting = false;
  private drops: number[] = [];
  private _target: Target | undefined;
  private _serverInfo: InitializeResult['serverInfo'] | undefined;

  private readonly stateEmitter = new vscode.EventEmitter<DaemonState>();
  private readonly changeEmitter = new vscode.EventEmitter<DidChangeParams>();
  private readonly progressEmitter = new vscode.EventEmitter<IndexProgressParams>();
  private readonly connectedEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeState = this.stateEmitter.event;
  /** `memory/didChange`: any client (CLI, agent, another window) wrote to the store. */
  readonly onDidChangeMemories = this.changeEmitter.event;
  readonly onIndexProgress = this.progressEmitter.event;
  /** Fired after every successful (re)connection. */
  readonly onDidConnect = this.connectedEmitter.event;

  constructor(private readonly o: DaemonClientOptions) {}

  get state(): DaemonState {
    return this._state;
  }
  get target(): Target {
    return (this._target ??= resolveTarget(this.o.config.storePath));
  }
  get serverInfo(): InitializeResult['serverInfo'] | undefined {
    return this._serverInfo;
  }

  private setState(s: DaemonState): void {
    this._state = s;
    this.o.output.info(`state: ${describeState(s)}`);
    this.stateEmitter.fire(s);
  }

  /** Connect (starting the daemon if needed). Never throws: failures end in the `error` state. */
  start(): Promise<void> {
    if (this.disposed) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /** Resolves once connected, or rejects with a readable reason after `timeoutMs`. */
  async whenConnected(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this._state.kind !== 'connected') {
      if (this._state.kind === 'error') throw new NotConnectedError(this._state.message);
      if (Date.now() > deadline) throw new NotConnectedError(`still ${describeState(this._state)} after ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  private async connect(): Promise<void> {
    this._target = resolveTarget(this.o.config.storePath);
    const target = this._target;
    this.setState({ kind: 'starting', detail: `connecting to the daemon for ${target.db}` });
    await this.disposeClient();
    try {
      const ensured = await ensureDaemon({
        target,
        nodeSetting: this.o.config.nodePath,
        daemonSetting: this.o.config.daemonPath,
        extensionPath: this.o.extensionPath,
        logFile: this.o.logFile,
        env: this.o.config.daemonEnv(),
        log: (l) => this.o.output.info(l),
      });
      if (this.disposed) return;
      if (ensured.spawned) this.o.output.info(`started daemon pid ${ensured.spawned.pid} (log: ${ensured.spawned.log})`);
      const lc = this.createClient(ensured.socket);
      this.lc = lc;
      await timeLimit(lc.start(), 20_000, 'the daemon did not finish the initialize handshake within 20 s');
      const init = lc.initializeResult as unknown as InitializeResult | undefined;
      this._serverInfo = init?.serverInfo;
      const info = readDaemonInfo(target.db);
      this.setState({
        kind: 'connected',
        socket: ensured.socket,
        pid: info?.pid ?? null,
        version: init?.serverInfo?.version ?? info?.version ?? null,
      });
      this.connectedEmitter.fire();
    } catch (e) {
      const message = e instanceof BootstrapError || e instanceof Error ? e.message : String(e);
      this.o.output.error(`connection failed: ${message}`);
      await this.disposeClient();
      this.setState({ kind: 'error', message });
    }
  }

  private createClient(socket: string): LanguageClient {
    const serverOptions: ServerOptions = async (): Promise<StreamInfo> => {
      const s = await connectSocket(socket, 5000);
      return { reader: s, writer: s };
    };
    let client: LanguageClient | undefined;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.o.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      markdown: { isTrusted: { enabledCommands: HOVER_COMMANDS }, supportHtml: false },
      initializationOptions: this.o.initializationOptions(),
      initializationFailedHandler: (error) => {
        this.o.output.error(`initialize failed: ${String(error)}`);
        return false;
      },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          if (client) void this.onConnectionLost(client);
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      middleware: {
        provideHover: (document, position, token, next) =>
          this.o.hover(document, position, token, async () => (await next(document, position, token)) ?? undefined),
      },
    };
    client = new LanguageClient('cairn', 'Cairn', serverOptions, clientOptions);
    client.onNotification(Notifications.didChange.method, (p: DidChangeParams) => this.changeEmitter.fire(p));
    client.onNotification(Notifications.indexProgress.method, (p: IndexProgressParams) => this.progressEmitter.fire(p));
    return client;
  }

  private async onConnectionLost(client: LanguageClient): Promise<void> {
    if (client !== this.lc || this.disposed) return;
    const deliberate = this.restarting;
    const now = Date.now();
    this.drops = [...this.drops.filter((t) => now - t < RECONNECT_WINDOW_MS), now];
    this.o.output.warn(`connection to the daemon closed${deliberate ? ' (restart)' : ''}`);
    if (deliberate) return; // restartDaemon() reconnects itself
    if (this.drops.length > MAX_RECONNECTS) {
      const message = `the daemon connection dropped ${this.drops.length} times in ${RECONNECT_WINDOW_MS / 60_000} minutes; not reconnecting`;
      this.setState({ kind: 'error', message });
      void this.o
        .ui()
        .error(`Cairn: ${message}. See the log for the daemon's output.`, 'Restart Daemon', 'Show Log')
        .then((a) => this.onAction(a));
      return;
    }
    this.setState({ kind: 'starting', detail: 'the daemon connection was lost; reconnecting' });
    void this.o.ui().warn('Cairn: lost the connection to the memory daemon; reconnecting (restarting it if it stopped)…');
    await sleep(Math.min(200 * this.drops.length, 2000));
    await this.start();
    const s = this._state;
    if (s.kind === 'connected') void this.o.ui().info(`Cairn: reconnected to the memory daemon${s.pid ? ` (pid ${s.pid})` : ''}.`);
    else if (s.kind === 'error')
      void this.o
        .ui()
        .error(`Cairn: could not reconnect to the daemon: ${s.message}`, 'Restart Daemon', 'Show Log')
        .then((a) => this.onAction(a));
  }

  private onAction(action: string | undefined): void {
    if (action === 'Restart Daemon') void vscode.commands.executeCommand('cairn.restartDaemon');
    if (action === 'Show Log') this.o.output.show(true);
  }

  /**
   * Stop the daemon serving this store (every window's connection drops and reconnects) and start a new
   * one. Throws when the new daemon cannot start.
   */
  async restartDaemon(): Promise<void> {
    this.restarting = true;
    try {
      const target = resolveTarget(this.o.config.storePath);
      const pid = readDaemonInfo(target.db)?.pid ?? (this._state.kind === 'connected' ? this._state.pid : null);
      this.setState({ kind: 'starting', detail: 'restarting the daemon' });
      await this.disposeClient();
      if (pid && pid !== process.pid) {
        this.o.output.info(`stopping daemon pid ${pid}`);
        await stopProcess(pid);
      }
      this.drops = [];
    } finally {
      this.restarting = false;
    }
    await this.start();
    const s = this._state;
    if (s.kind !== 'connected') throw new Error(s.kind === 'error' ? s.message : `daemon is ${s.kind}`);
  }

  /** Send a Cairn request. Fails at once when not connected, and after `timeoutMs` when unanswered. */
  async request<K extends RequestName>(name: K, params: ParamsOf<K>, timeoutMs = TIMEOUT_MS): Promise<ResultOf<K>> {
    const lc = this.lc;
    if (this._state.kind !== 'connected' || !lc) {
      throw new NotConnectedError(this._state.kind === 'error' ? this._state.message : describeState(this._state));
    }
    const method = Requests[name].method;
    // The daemon's shape limits (params and filter depth and size) before JSON.stringify, which recurses, sends them.
    checkParamsShape(params);
    const cts = new vscode.CancellationTokenSource();
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        lc.sendRequest<ResultOf<K>>(method, params ?? {}, cts.token),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            cts.cancel();
            reject(new RequestTimeoutError(method, timeoutMs));
          }, timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      cts.dispose();
    }
  }

  private async disposeClient(): Promise<void> {
    const lc = this.lc;
    this.lc = undefined;
    if (!lc) return;
    try {
      // stop() sends shutdown + exit: the daemon drops this connection and keeps serving others.
      if (lc.isRunning()) await timeLimit(lc.stop(2000), 3000, 'stop timed out');
    } catch {
      // a dead connection cannot shut down cleanly; nothing to do
    }
    try {
      await timeLimit(lc.dispose(1000), 2000, 'dispose timed out');
    } catch {
      // already stopped
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.disposeClient();
    this.setState({ kind: 'stopped' });
    this.stateEmitter.dispose();
    this.changeEmitter.dispose();
    this.progressEmitter.dispose();
    this.connectedEmitter.dispose();
  }
}

export function describeState(s: DaemonState): string {
  switch (s.kind) {
    case 'stopped':
      return 'stopped';
    case 'starting':
      return `starting: ${s.detail}`;
    case 'connected':
      return `connected to ${s.socket}${s.pid ? ` (pid ${s.pid})` : ''}`;
    case 'error':
      return `error: ${s.message}`;
  }
}

/** A promise, rejected with `message` after `ms`. */
function timeLimit<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  return withTimeout(p, ms, () => {
    throw new Error(message);
  });
}
