/** Small shared pieces: the request context, error text, highlighted snippets. Memory text is always a text node. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Memory } from '../../daemon/src/protocol/types';
import type { WebviewInit } from '../../daemon/src/protocol/webview';
import { RequestError, type RpcClient } from './rpc';
import { splitSnippet } from './state';

export interface Env {
  rpc: RpcClient;
  init: WebviewInit;
  /** Bumped on every store change that matters (debounced), so views reload. */
  changeTick: number;
  /** Whether a `team` namespace exists (the Team scope is offered then). */
  hasTeam: boolean;
  select(id: string | null): void;
}
export const EnvContext = createContext<Env>(null as unknown as Env);
export const useEnv = () => useContext(EnvContext);

export function errorText(e: unknown): string {
  if (e instanceof RequestError) return `${e.errorName}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

export function Snippet({ text }: { text: string }) {
  return (
    <span class="snippet">{splitSnippet(text).map((s, i) => (s.hit ? <mark key={i}>{s.text}</mark> : <span key={i}>{s.text}</span>))}</span>
  );
}

export const label = (m: Pick<Memory, 'namespace' | 'key'>) => `${m.namespace}/${m.key}`;
export const when = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

export function ErrorLine({ error }: { error: string | null }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}
