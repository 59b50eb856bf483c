/**
 * Episode capture of an MCP session (cairn.episodes.capture, off by default): each tool call the agent makes is
 * appended as a `tool_call` event (and its answer as a `tool_result`, except the episodic tools', whose answers are
 * events already stored) to one episode per session, started on the first call in the session's project namespace.
 * Capture never fails or delays a tool call: events are appended in order in the background, and a failure is logged
 * once and turns capture off for the session.
 */
import { randomUUID } from 'node:crypto';
import { Requests, type RequestDef } from '../protocol/methods';
import type * as T from '../protocol/types';
import type { z } from 'zod';

const RESULT_CHARS = 4000;
const EPISODIC = new Set(['cairn_events_search', 'cairn_episodes_search', 'cairn_events_timeline', 'cairn_events_expand']);

export class SessionCapture {
  private readonly id = `mcp:${randomUUID()}`;
  private started = false;
  private seq = 0;
  private chain: Promise<void> = Promise.resolve();
  private failed = false;

  constructor(
    private readonly call: <P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>) => Promise<z.infer<R>>,
    private readonly namespace: () => string,
    private readonly actor: () => string,
    private readonly log: (m: string) => void,
  ) {}

  /** The episode id of this session (events appear under it once the first call is recorded). */
  get episodeId(): string {
    return this.id;
  }

  record(tool: string, args: unknown, result: { text: string; error: boolean }): void {
    if (this.failed) return;
    const at = new Date().toISOString();
    const events: T.EventInput[] = [
      { seq: this.seq++, kind: 'tool_call', text: `${tool} ${JSON.stringify(args ?? {})}`.slice(0, 65_536), at, context: { tool } },
    ];
    if (!EPISODIC.has(tool) || result.error)
      events.push({
        seq: this.seq++,
        kind: 'tool_result',
        text: (result.error ? `error: ${result.text}` : result.text).slice(0, RESULT_CHARS),
        at,
        context: { tool },
      });
    this.chain = this.chain
      .then(() => this.append(events))
      .catch((e: Error) => {
        this.failed = true;
        this.log(`episode capture stopped for this session: ${e.message}`);
      });
  }

  private async append(events: T.EventInput[]): Promise<void> {
    const actor = this.actor();
    if (!this.started) {
      await this.call(Requests.episodesStart, {
        id: this.id,
        namespace: this.namespace(),
        title: `MCP session (${actor})`,
        source: actor,
        actor,
      });
      this.started = true;
    }
    await this.call(Requests.eventsAppend, { episodeId: this.id, actor, events });
  }

  /** Wait for the events recorded so far to be appended (tests, shutdown). */
  flush(): Promise<void> {
    return this.chain;
  }
}
