/** Small shared pieces: the request context, error text, highlighted snippets. Memory text is always a text node. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Memory } from '../../daemon/src/protocol/types';
import type { WebviewInit } from '../../daemon/src/protocol/webview';
import { RequestError, type RpcClient } from './rpc';
import { describeProblem, sentence, type Problem } from './errors';
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

/** Anything a request threw, as a sentence with the daemon's own words kept as details. */
export function errorText(e: unknown): Problem {
  if (e instanceof RequestError) return describeProblem(e.error);
  return { text: sentence(e instanceof Error ? e.message : String(e)), details: null };
}
export type Shown = Problem | string | null;

export function Snippet({ text }: { text: string }) {
  return (
    <span class="snippet">{splitSnippet(text).map((s, i) => (s.hit ? <mark key={i}>{s.text}</mark> : <span key={i}>{s.text}</span>))}</span>
  );
}

export const label = (m: Pick<Memory, 'namespace' | 'key'>) => `${m.namespace}/${m.key}`;
export const when = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

/** An error for a person: the sentence, then the error's name, code and raw message on a details line. */
export function ErrorLine({ error, id }: { error: Shown; id?: string }) {
  if (!error) return null;
  const p = typeof error === 'string' ? { text: error, details: null } : error;
  return (
    <div class="error" role="alert" id={id}>
      <span class="error-text">{p.text}</span>
      {p.details ? <span class="error-details">{`Details: ${p.details}`}</span> : null}
    </div>
  );
}
