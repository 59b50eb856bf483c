/** Boots the dashboard: the VS Code webview API, the request client, restored state, and the app. */
import { render } from 'preact';
import type { ToHost, ToWebview } from '../../daemon/src/protocol/webview';
import { App } from './app';
import { RpcClient } from './rpc';
import { restoreState, type PersistedState } from './state';

declare function acquireVsCodeApi(): { postMessage(m: ToHost): void; getState(): unknown; setState(s: PersistedState): void };

const vscode = acquireVsCodeApi();
const rpc = new RpcClient((m) => vscode.postMessage(m));
const listeners: ((m: ToWebview) => void)[] = [];
window.addEventListener('message', (e: MessageEvent<ToWebview>) => {
  const m = e.data;
  if (!m || typeof m !== 'object' || typeof m.type !== 'string') return;
  if (rpc.handle(m)) return;
  for (const l of listeners) l(m);
});
render(
  <App rpc={rpc} initial={restoreState(vscode.getState())} persist={(s) => vscode.setState(s)} onMessage={(fn) => listeners.push(fn)} />,
  document.getElementById('cairn-dashboard-root')!,
);
