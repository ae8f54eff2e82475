/**
 * W4: one overall deadline for an attempt (connect + headers + body), combined with the
 * caller's cancellation signal, remembering which of the two ended it first. A class, not a
 * bundle of closures: it is created on every request (the hot path).
 */

export type DeadlineCause = 'timeout' | 'cancelled';

export class Deadline {
  /** Aborts when the deadline passes or the caller cancels. */
  readonly signal: AbortSignal;
  readonly #controller = new AbortController();
  readonly #endsAt: number;
  readonly #timer: NodeJS.Timeout;
  readonly #callerSignal: AbortSignal | undefined;
  #cause: DeadlineCause | undefined;

  constructor(timeoutMs: number, callerSignal?: AbortSignal) {
    this.signal = this.#controller.signal;
    this.#endsAt = performance.now() + timeoutMs;
    this.#callerSignal = callerSignal;
    // No per-request closures: a module-level timer callback, and the instance itself as listener.
    this.#timer = setTimeout(expire, timeoutMs, this);
    if (callerSignal?.aborted) this.end('cancelled');
    else callerSignal?.addEventListener('abort', this, { once: true });
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
    this.#controller.abort(new DeadlineAbort(why));
  }
}

function expire(deadline: Deadline): void {
  deadline.end('timeout');
}

export function startDeadline(timeoutMs: number, callerSignal?: AbortSignal): Deadline {
  return new Deadline(timeoutMs, callerSignal);
}

/** The abort reason we use, so a destroyed body says why without quoting anything remote. */
export class DeadlineAbort extends Error {
  override readonly name = 'DeadlineAbort';
  readonly code: string;

  constructor(readonly why: DeadlineCause) {
    super(why === 'timeout' ? 'delivery deadline passed' : 'delivery cancelled by the caller');
    this.code = why === 'timeout' ? 'HOOKRELAY_TIMEOUT' : 'HOOKRELAY_CANCELLED';
  }
}
