/**
 * A notification's request (W3: the body is not interpreted) as one undici dispatch with its own
 * handler: no response stream, no listeners and no timers per chunk. The attempt's one deadline
 * (W4) bounds it all: before the status it ends the attempt; after it, it bounds the background
 * drain that keeps the connection reusable. Q8: up to `excerptBytes` of the body are kept,
 * waited for at most `excerptWaitMs` once the status is known; past `discardLimitBytes` (or the
 * deadline) the rest is not read and the socket is dropped. A failure of the body after the
 * status never fails the attempt.
 */
import { util as undiciUtil, type Dispatcher } from 'undici';
import type { Deadline } from './deadline.ts';

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export type DiscardLimits = {
  /** 0: none kept, the exchange resolves at the status. */
  excerptBytes: number;
  excerptWaitMs: number;
  discardLimitBytes: number;
};

export type DiscardedResponse = {
  status: number;
  headers: ResponseHeaders;
  /** With excerptBytes > 0: the first bytes of the body (possibly none). */
  excerpt?: Uint8Array;
};

const EMPTY = new Uint8Array(0);

/**
 * Sends `options` through `dispatcher`; resolves at the status (or with the excerpt), rejects
 * with the error that ended the attempt before a status arrived (the deadline's own reason
 * when it did). The deadline is disposed when the exchange ends, not when it resolves.
 */
export function dispatchDiscarding(
  dispatcher: Dispatcher,
  options: Dispatcher.DispatchOptions,
  deadline: Deadline,
  limits: DiscardLimits,
): Promise<DiscardedResponse> {
  return new Promise((resolve, reject) => {
    const handler = new DiscardHandler(deadline, limits, resolve, reject);
    if (!handler.ended()) dispatcher.dispatch(options, handler);
  });
}

class DiscardHandler implements Dispatcher.DispatchHandler {
  readonly #deadline: Deadline;
  readonly #limits: DiscardLimits;
  readonly #resolve: (response: DiscardedResponse) => void;
  readonly #reject: (error: unknown) => void;
  readonly #onDeadline = (): void => this.#deadlineEnded();
  #abort: ((error?: Error) => void) | undefined;
  #status = 0;
  #headers: ResponseHeaders | undefined;
  #chunks: Buffer[] | undefined;
  #excerptLength = 0;
  #received = 0;
  #settled = false;
  #ended = false;
  #excerptTimer: NodeJS.Timeout | undefined;

  constructor(deadline: Deadline, limits: DiscardLimits, resolve: (response: DiscardedResponse) => void, reject: (error: unknown) => void) {
    this.#deadline = deadline;
    this.#limits = limits;
    this.#resolve = resolve;
    this.#reject = reject;
    if (deadline.aborted) this.#deadlineEnded();
    else deadline.on('abort', this.#onDeadline);
  }

  ended(): boolean {
    return this.#ended;
  }

  onConnect(abort: (error?: Error) => void): void {
    // The deadline passed while the request waited for a connection: it is never written.
    if (this.#deadline.aborted) abort(this.#deadline.reason);
    else this.#abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    this.#status = statusCode;
    const headers = undiciUtil.parseHeaders(rawHeaders) as ResponseHeaders;
    this.#headers = headers;
    // No excerpt asked, or a response without a body (204, 304, content-length 0): settled at the status.
    if (this.#limits.excerptBytes <= 0 || statusCode === 204 || statusCode === 304 || headers['content-length'] === '0') this.#settle();
    // A short body usually arrives with its status (same read): the wait timer only when it did not.
    else queueMicrotask(() => this.#waitForExcerpt());
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.#received += chunk.length;
    if (!this.#settled && this.#limits.excerptBytes > 0) {
      if (this.#chunks === undefined) this.#chunks = [chunk];
      else this.#chunks.push(chunk);
      this.#excerptLength += chunk.length;
      if (this.#excerptLength >= this.#limits.excerptBytes) this.#settle();
    }
    // Too much to drain: the connection is not worth keeping.
    if (this.#received > this.#limits.discardLimitBytes) this.#abort?.();
    return true;
  }

  onComplete(): void {
    this.#settle();
    this.#end();
  }

  onError(error: Error): void {
    // After the status, a body that fails (or is dropped by us) never fails the attempt.
    if (this.#headers !== undefined) this.#settle();
    else if (!this.#settled) {
      this.#settled = true;
      this.#reject(error);
    }
    this.#end();
  }

  #waitForExcerpt(): void {
    if (this.#settled) return;
    this.#excerptTimer = setTimeout(settleExcerpt, Math.min(this.#limits.excerptWaitMs, this.#deadline.remainingMs()), this);
  }

  #deadlineEnded(): void {
    if (this.#headers !== undefined) this.#settle();
    else if (!this.#settled) {
      this.#settled = true;
      this.#reject(this.#deadline.reason);
    }
    if (this.#abort !== undefined) this.#abort(this.#deadline.reason);
    else this.#end();
  }

  settle(): void {
    this.#settle();
  }

  #settle(): void {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#excerptTimer !== undefined) clearTimeout(this.#excerptTimer);
    const status = this.#status;
    const headers = this.#headers ?? {};
    this.#resolve(this.#limits.excerptBytes > 0 ? { status, headers, excerpt: this.#excerpt() } : { status, headers });
  }

  #excerpt(): Uint8Array {
    const chunks = this.#chunks;
    if (chunks === undefined) return EMPTY;
    this.#chunks = undefined;
    const all = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#excerptLength);
    // A view, not a copy.
    return new Uint8Array(all.buffer, all.byteOffset, Math.min(all.length, this.#limits.excerptBytes));
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#excerptTimer !== undefined) clearTimeout(this.#excerptTimer);
    this.#deadline.removeListener('abort', this.#onDeadline);
    this.#deadline.dispose();
  }
}

function settleExcerpt(handler: DiscardHandler): void {
  handler.settle();
}
