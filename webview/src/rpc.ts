/**
 * The webview's end of the dashboard protocol (daemon/src/protocol/webview.ts): every request gets a fresh id
 * and resolves or rejects exactly once, when the extension's reply with that id arrives.
 */
import type { ToHost, ToWebview, WebviewError, WebviewMethod, WebviewParams, WebviewResult } from '../../daemon/src/protocol/webview';

/** A failed request, carrying the typed error (its name, code and data.field). */
export class RequestError extends Error {
  constructor(readonly error: WebviewError) {
    super(error.message);
    this.name = 'RequestError';
  }
  get errorName(): WebviewError['name'] {
    return this.error.name;
  }
  /** The params field the daemon blames, when it names one. */
  get field(): string | undefined {
    return typeof this.error.data.field === 'string' ? this.error.data.field : undefined;
  }
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: RequestError) => void;
  onProgress?: (done: number, total: number) => void;
}

export class RpcClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(private readonly post: (m: ToHost) => void) {}

  request<M extends WebviewMethod>(
    method: M,
    params: WebviewParams<M>,
    opts: { onProgress?: (done: number, total: number) => void } = {},
  ): Promise<WebviewResult<M>> {
    const id = this.nextId++;
    return new Promise<WebviewResult<M>>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, onProgress: opts.onProgress });
      this.post({ type: 'request', id, method, params });
    });
  }

  /** Route one message from the extension. Returns true when it answered (or reported progress on) a request. */
  handle(m: ToWebview): boolean {
    if (m.type !== 'response' && m.type !== 'error' && m.type !== 'progress') return false;
    const p = this.pending.get(m.id);
    if (!p) return false; // a reply to a request from before a reload: nobody waits for it
    if (m.type === 'progress') {
      p.onProgress?.(m.done, m.total);
      return true;
    }
    this.pending.delete(m.id);
    if (m.type === 'response') p.resolve(m.result);
    else p.reject(new RequestError(m.error));
    return true;
  }

  get inFlight(): number {
    return this.pending.size;
  }
}
