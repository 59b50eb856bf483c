/**
 * Episode capture in the editor (cairn.episodes.capture, off by default; docs/episodes.md#capture): @cairn's turns
 * and the language-model tools' calls become events of the current task's episode.
 *
 * - One episode per agent task (`vscode-task:<task id>`, titled like the task), or, without an active task, one per
 *   window session (`vscode-session:<session id>`), in this window's namespace (the project, else `user`).
 *   `episodes/start` is sent once per episode; starting an episode that already exists (the task's, from an earlier
 *   session) continues after its events.
 * - Each event gets its client sequence number before it is first sent and keeps it: a batch that failed (daemon
 *   gone, time-out) is sent again with the same numbers, so the daemon stores it once (`events/append` is idempotent
 *   per episode and seq). A number already taken on the first send (another window capturing in the same task's
 *   episode) is replaced by one after the episode's events.
 * - Recording never delays or fails a chat turn or a tool call: events are appended in order in the background. A
 *   daemon that cannot be reached keeps them queued (at most MAX_PENDING, oldest dropped) until it is back; an episode
 *   the daemon refuses (a team namespace, bad input) is logged once and not captured further.
 */
import { CairnError } from '../../../daemon/src/protocol/errors';
import { EpisodeLimits, type EventContext, type EventInput, type GitWrite } from '../../../daemon/src/protocol/types';
import type { ParamsOf, RequestName, ResultOf } from '../../../daemon/src/protocol/methods';

/** Characters kept of a tool's result or @cairn's answer (the turn's text is kept whole, up to the event limit). */
export const RESULT_CHARS = 4000;
const MAX_PENDING = 1000;
/** Errors after which the same batch is sent again later (with the same seq numbers); any other stops the episode. */
const RETRIED = new Set(['Unavailable', 'StoreBusy', 'Overloaded', 'RequestTimeLimit', 'Internal']);

export interface CapturedEvent {
  kind: 'user' | 'agent' | 'tool_call' | 'tool_result';
  text: string;
  actor: string;
  context?: EventContext;
}

/** What capture needs from the editor (the agent service; unit tests pass a stand-in over an in-process daemon). */
export interface CaptureHost {
  /** cairn.episodes.capture */
  enabled(): boolean;
  /** The namespace episodes start in: the project's, else `user`. */
  root(): string;
  activeTaskId(): string | undefined;
  /** The git branch and HEAD commit a write to `namespace` records (git-aware memory, GitWatch.write), if any. */
  git?(namespace: string): GitWrite | undefined;
  /** A daemon request whose Cairn errors reject as CairnError. */
  request<K extends RequestName>(name: K, params: ParamsOf<K>): Promise<ResultOf<K>>;
  log(level: 'info' | 'warn', message: string): void;
  /** This window's session id (vscode.env.sessionId) and workspace name. */
  readonly sessionId: string;
  workspaceName(): string | undefined;
}

interface EpisodeState {
  id: string;
  taskId?: string;
  started: boolean;
  nextSeq: number;
  /** Events not yet stored, in order; each keeps the seq it was first sent with. */
  pending: (EventInput & { seq?: number; tries?: number })[];
  /** Times events were renumbered because another window had taken their seq numbers. */
  collisions: number;
  /** The daemon refused the episode: nothing more is captured in it. */
  refused: boolean;
}

/** The episode id for a task, or for a window session without one (characters outside the id alphabet become '-'). */
export function episodeIdFor(taskId: string | undefined, sessionId: string): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9_.:-]/g, '-');
  return (taskId ? `vscode-task:${clean(taskId)}` : `vscode-session:${clean(sessionId)}`).slice(0, 128);
}

export class EditorCapture {
  private readonly episodes = new Map<string, EpisodeState>();
  private chain: Promise<void> = Promise.resolve();

  /** The agent service calls flush() again when the daemon (re)connects: events queued meanwhile go then. */
  constructor(private readonly host: CaptureHost) {}

  get enabled(): boolean {
    return this.host.enabled();
  }

  /** Events recorded but not stored yet (waiting for the daemon). */
  get pending(): number {
    let n = 0;
    for (const ep of this.episodes.values()) n += ep.pending.length;
    return n;
  }

  /** Record events in the current task's episode (nothing when capture is off). Returns the episode id, or undefined. */
  record(events: CapturedEvent[]): string | undefined {
    if (!this.enabled || !events.length) return undefined;
    const taskId = this.host.activeTaskId();
    const id = episodeIdFor(taskId, this.host.sessionId);
    let ep = this.episodes.get(id);
    if (!ep) {
      ep = { id, ...(taskId ? { taskId } : {}), started: false, nextSeq: 0, pending: [], refused: false, collisions: 0 };
      this.episodes.set(id, ep);
    }
    if (ep.refused) return undefined;
    const at = new Date().toISOString();
    for (const e of events)
      ep.pending.push({
        kind: e.kind,
        text: e.text.slice(0, EpisodeLimits.eventTextChars),
        at,
        actor: e.actor,
        ...(e.context ? { context: e.context } : {}),
      });
    if (ep.pending.length > MAX_PENDING) {
      const dropped = ep.pending.splice(0, ep.pending.length - MAX_PENDING);
      this.host.log('warn', `episode capture: dropped ${dropped.length} events of ${id} the daemon could not take`);
    }
    void this.flush();
    return id;
  }

  /** Send what is queued, in order; resolves when this attempt is over (tests, shutdown). Never rejects. */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.sendAll());
    return this.chain;
  }

  private async sendAll(): Promise<void> {
    for (const ep of this.episodes.values()) {
      if (ep.refused || !ep.pending.length) continue;
      try {
        await this.send(ep);
      } catch (e) {
        if (e instanceof CairnError && !RETRIED.has(e.data.name)) {
          ep.refused = true;
          ep.pending = [];
          this.host.log('warn', `episode capture stopped for ${ep.id}: ${e.message}`);
        } else {
          // Not reachable now: the events stay queued with their seq numbers and go again on reconnect.
          this.host.log('info', `episode capture: ${ep.pending.length} events of ${ep.id} wait for the daemon`);
        }
      }
    }
  }

  private async send(ep: EpisodeState): Promise<void> {
    if (!ep.started) {
      const namespace = this.host.root();
      const git = this.host.git?.(namespace);
      const r = await this.host.request('episodesStart', {
        id: ep.id,
        namespace,
        ...(git ? { branch: git.branch, commit: git.commit } : {}),
        title: await this.title(ep),
        source: 'vscode',
        actor: 'vscode',
        ...(ep.taskId ? { taskId: ep.taskId } : {}),
      });
      ep.started = true;
      // The task's episode from an earlier session: continue after its events (capture numbers them densely from 0).
      ep.nextSeq = Math.max(ep.nextSeq, r.episode.events);
    }
    const batch = ep.pending.slice(0, EpisodeLimits.appendEvents);
    for (const e of batch) {
      if (e.seq === undefined) e.seq = ep.nextSeq++;
      e.tries = (e.tries ?? 0) + 1;
    }
    const r = await this.host.request('eventsAppend', { episodeId: ep.id, actor: 'vscode', events: batch.map(({ tries: _t, ...e }) => e) });
    ep.pending.splice(0, batch.length);
    // An event already stored at a seq this window never sent before: another window captures in the same task's
    // episode. Those events go again after the episode's events, with new numbers.
    const created = new Map(r.results.map((x) => [x.seq, x.created]));
    const taken = batch.filter((e) => e.tries === 1 && created.get(e.seq!) === false);
    if (taken.length && ep.collisions++ < 3) {
      const now = await this.host.request('episodesGet', { id: ep.id, limit: 0 });
      ep.nextSeq = Math.max(ep.nextSeq, now.episode.events);
      ep.pending.unshift(...taken.map(({ seq: _s, tries: _t, ...e }) => e));
    } else if (taken.length) {
      this.host.log('warn', `episode capture: ${taken.length} events of ${ep.id} lost to another window's numbers`);
    }
    if (ep.pending.length) await this.send(ep);
  }

  private async title(ep: EpisodeState): Promise<string> {
    const where = this.host.workspaceName() ?? 'this window';
    if (!ep.taskId) return `Editor session in ${where}`.slice(0, 500);
    try {
      const t = await this.host.request('tasksGet', { id: ep.taskId });
      return t.title.slice(0, 500);
    } catch {
      return `Agent task ${ep.taskId}`;
    }
  }
}
