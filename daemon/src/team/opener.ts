/**
 * Opening the team database, and opening it again until it opens. The first
 * attempt runs in the background when the daemon starts; while it fails (the
 * server is down, the login is refused, the schema is missing, the role has no
 * grant) attempts repeat with back-off (0.5 s doubling to 30 s, jittered), and a
 * team request that arrives meanwhile tries at once (or joins the attempt under
 * way), so a daemon started during an outage recovers exactly like one whose
 * connection dropped later: as soon as the server answers. `store/status` shows
 * the last failure and when the next attempt is due.
 *
 * A failure is logged when it starts and when it changes, never once per
 * attempt or per request; the recovery is logged once.
 */
import { CairnError } from '../protocol/errors';
import type { PgBackend } from '../store/pg/backend';

export interface OpenerOptions {
  log?: (m: string) => void;
  /** Called after every successful open (the change feed, the embedding backlog). */
  onOpen?: () => void;
  firstDelayMs?: number;
  maxDelayMs?: number;
}

export class TeamOpener {
  /** The last attempt's failure, null once open. */
  error: CairnError | null = null;
  /** When the next background attempt is due (ms since the epoch), null when open or closed. */
  nextAttemptAt: number | null = null;
  private attempt: Promise<boolean> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private delay: number;
  private closed = false;
  private logged: string | null = null;

  constructor(
    readonly backend: PgBackend,
    private readonly o: OpenerOptions = {},
  ) {
    this.delay = o.firstDelayMs ?? 500;
  }

  get open(): boolean {
    return this.backend.schemaVersion > 0 && this.backend.user !== '';
  }

  /** Start (or join) an attempt; resolves true when the database is open. */
  tryOpen(): Promise<boolean> {
    if (this.open) return Promise.resolve(true);
    if (this.attempt) return this.attempt;
    const a = this.backend.open().then(
      () => {
        this.attempt = null;
        if (this.timer) clearTimeout(this.timer);
        this.timer = null;
        this.nextAttemptAt = null;
        this.delay = this.o.firstDelayMs ?? 500;
        this.error = null;
        this.logged = null;
        this.o.onOpen?.();
        return true;
      },
      (e: unknown) => {
        this.attempt = null;
        this.error =
          e instanceof CairnError
            ? e
            : new CairnError('Unavailable', `the team database cannot be opened: ${String(e)}`, { store: 'team' });
        // Requests that try meanwhile do not push the background attempts further apart.
        if (!this.closed && !this.timer) this.schedule();
        if (this.logged !== this.error.message) {
          this.logged = this.error.message;
          this.log(
            `team memory: ${this.error.message} (retrying with back-off; team namespaces answer ${this.error.codeName} until it opens)`,
          );
        }
        return false;
      },
    );
    this.attempt = a;
    return a;
  }

  /** For a team request: resolves when the database is open, else throws why it is not (after trying now). */
  async ensure(): Promise<void> {
    if (this.open) return;
    if (this.closed) throw new CairnError('Unavailable', 'the team database connection is closed', { store: 'team' });
    if (!(await this.tryOpen())) throw this.error!;
  }

  close(): void {
    this.closed = true;
    this.nextAttemptAt = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    const wait = Math.round(this.delay * (0.8 + 0.4 * Math.random()));
    this.delay = Math.min(this.o.maxDelayMs ?? 30_000, this.delay * 2);
    this.nextAttemptAt = Date.now() + wait;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.tryOpen();
    }, wait);
    this.timer.unref?.();
  }

  private log(m: string): void {
    this.o.log?.(m);
  }
}
