/** Small shared pieces: the request context, error text, highlighted snippets. Memory text is always a text node. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Memory } from '../../daemon/src/protocol/types';
import type { WebviewInit } from '../../daemon/src/protocol/webview';
import { RequestError, type RpcClient } from './rpc';
import type { Question } from './confirm';
import { describeProblem, sentence, type Problem } from './errors';
import type { Form } from './form';
import { exactTime, relativeTime, splitSnippet, type Draft } from './state';

export interface Env {
  rpc: RpcClient;
  init: WebviewInit;
  /** Bumped on every store change that matters (debounced), so views reload. */
  changeTick: number;
  /** Whether a `team` namespace exists (the Team scope is offered then). */
  hasTeam: boolean;
  /** Open a memory (null closes it); asks first when that would discard an unsaved edit. */
  select(id: string | null): void;
  /** Unsaved edits by memory id (kept across hide, show and reload). */
  drafts: Record<string, Draft>;
  /** Record (or, with null, drop) the unsaved form of a memory. */
  setDraft(id: string, edit: { label: string; form: Form; stored: Form; base: number } | null): void;
  /** A yes/no question in the editor's modal dialog; true when the user chose to go ahead. */
  ask(q: Question): Promise<boolean>;
  /** Say what was just done, with an Undo button when it can be taken back. */
  notify(n: Notice | null): void;
}
export interface Notice {
  text: string;
  undo?: () => Promise<unknown>;
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
/** A time as "5 min ago", the exact time on hover (and for screen readers, in `datetime`). */
export function Time({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} title={exactTime(iso)}>
      {relativeTime(iso, Date.now())}
    </time>
  );
}

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

/** A codicon (@vscode/codicons, the editor's own icon font) beside a control's text; hidden from screen readers. */
export function Icon({ name }: { name: string }) {
  return <i class={`codicon codicon-${name}`} aria-hidden="true" />;
}
