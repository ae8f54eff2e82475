/**
 * W4: one overall deadline for an attempt (connect + headers + body), combined with the
 * caller's cancellation signal, remembering which of the two ended it first.
 */

export type DeadlineCause = 'timeout' | 'cancelled';

export type Deadline = {
  /** Aborts when the deadline passes or the caller cancels. */
  readonly signal: AbortSignal;
  /** What ended the attempt, if anything did. */
  cause(): DeadlineCause | undefined;
  /** Milliseconds left before the deadline (0 when passed). */
  remainingMs(): number;
  /** Stops the timer and detaches from the caller's signal. */
  dispose(): void;
};

export function startDeadline(timeoutMs: number, callerSignal?: AbortSignal): Deadline {
  const controller = new AbortController();
  const endsAt = performance.now() + timeoutMs;
  let cause: DeadlineCause | undefined;
  const end = (why: DeadlineCause) => {
    if (cause !== undefined) return;
    cause = why;
    controller.abort(new DeadlineAbort(why));
  };
  const onCancel = () => end('cancelled');
  const timer = setTimeout(() => end('timeout'), timeoutMs);
  if (callerSignal?.aborted) end('cancelled');
  else callerSignal?.addEventListener('abort', onCancel, { once: true });
  return {
    signal: controller.signal,
    cause: () => cause,
    remainingMs: () => Math.max(0, endsAt - performance.now()),
    dispose: () => {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onCancel);
    },
  };
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
