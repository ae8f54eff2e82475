/**
 * W4: one overall deadline for an attempt (connect + headers + body), combined with the
 * caller's cancellation signal, remembering which of the two ended it first. A class, not a
 * bundle of closures: it is created on every request (the hot path).
 */

import { DeadlineAbortError, type DeadlineCause } from '../contract/errors.ts';

export class Deadline {
  readonly #endsAt: number;
  readonly #timer: NodeJS.Timeout;
  readonly #callerSignal: AbortSignal | undefined;
  #cause: DeadlineCause | undefined;
  #reason: DeadlineAbortError | undefined;
  #listeners: Array<() => void> | undefined;
  #controller: AbortController | undefined;

  constructor(timeoutMs: number, callerSignal?: AbortSignal) {
    this.#endsAt = performance.now() + timeoutMs;
    this.#callerSignal = callerSignal;
    // No per-request closures: a module-level timer callback, and the instance itself as listener.
    this.#timer = setTimeout(expire, timeoutMs, this);
    if (callerSignal?.aborted) this.end('cancelled');
    else callerSignal?.addEventListener('abort', this, { once: true });
  }

  /**
   * The deadline as an AbortSignal, for APIs that need a real one (the QStash client). Made on
   * first use: an AbortController per request costs ~8 µs, so undici gets the deadline itself,
   * through the EventEmitter-shaped signal it accepts (`aborted`, `reason`, `on`/`once`,
   * `removeListener`).
   */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#reason !== undefined;
  }

  get reason(): DeadlineAbortError | undefined {
    return this.#reason;
  }

  on(event: string, listener: () => void): this {
    if (event !== 'abort') return this;
    if (this.#listeners === undefined) this.#listeners = [listener];
    else this.#listeners.push(listener);
    return this;
  }

  once(event: string, listener: () => void): this {
    return this.on(event, listener);
  }

  removeListener(event: string, listener: () => void): this {
    if (event === 'abort' && this.#listeners !== undefined) {
      const i = this.#listeners.indexOf(listener);
      if (i >= 0) this.#listeners.splice(i, 1);
    }
    return this;
  }

  /** What ended the attempt, if anything did. */
  cause(): DeadlineCause | undefined {
    return this.#cause;
  }

  /** Milliseconds left before the deadline (0 when passed). */
  remainingMs(): number {
    return Math.max(0, this.#endsAt - performance.now());
  }

  /** Stops the timer and detaches from the caller's signal. */
  dispose(): void {
    clearTimeout(this.#timer);
    this.#callerSignal?.removeEventListener('abort', this);
  }

  /** The caller's signal aborted (EventListener protocol). */
  handleEvent(): void {
    this.end('cancelled');
  }

  end(why: DeadlineCause): void {
    if (this.#cause !== undefined) return;
    this.#cause = why;
    this.#reason = new DeadlineAbortError(why);
    // Listeners fire once, like an AbortSignal's.
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
    this.#controller?.abort(this.#reason);
  }
}

function expire(deadline: Deadline): void {
  deadline.end('timeout');
}

export function startDeadline(timeoutMs: number, callerSignal?: AbortSignal): Deadline {
  return new Deadline(timeoutMs, callerSignal);
}
