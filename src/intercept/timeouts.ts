import { InterceptionTimeoutError } from '../contract/errors.ts';

/** AGENT-HOOKS-0.1's recommended default for each interceptor call and each resolver call. */
export const DEFAULT_TIMEOUT_MS = 5000;

/** How one bounded call ended. */
export type Settled<T> = { kind: 'value'; value: T } | { kind: 'error'; error: unknown } | { kind: 'timeout' } | { kind: 'cancelled'; reason: unknown };

/** `null` disables the bound; anything else must be a positive finite number of milliseconds. */
export function assertTimeout(name: string, ms: number | null): void {
  if (ms !== null && !(typeof ms === 'number' && Number.isFinite(ms) && ms > 0)) {
    throw new TypeError(`${name} must be a positive number of milliseconds or null`);
  }
}

/**
 * Run `call` with its own AbortSignal and settle within `timeoutMs`, or as
 * soon as `outer` aborts. The callee's signal is aborted on either, so a
 * cooperative callee can stop its own work. A synchronous callee that blocks
 * the event loop cannot be preempted — only async work can.
 */
export async function settleWithin<T>(call: (signal: AbortSignal) => T | Promise<T>, timeoutMs: number | null, outer?: AbortSignal): Promise<Settled<T>> {
  if (outer?.aborted) return { kind: 'cancelled', reason: outer.reason };
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const settled = new Promise<Settled<T>>((resolve) => {
    if (timeoutMs !== null) {
      timer = setTimeout(() => {
        controller.abort(new InterceptionTimeoutError(timeoutMs));
        resolve({ kind: 'timeout' });
      }, timeoutMs);
    }
    if (outer !== undefined) {
      onAbort = () => {
        controller.abort(outer.reason);
        resolve({ kind: 'cancelled', reason: outer.reason });
      };
      outer.addEventListener('abort', onAbort, { once: true });
    }
    let result: T | Promise<T>;
    try {
      result = call(controller.signal);
    } catch (error) {
      resolve({ kind: 'error', error });
      return;
    }
    Promise.resolve(result).then(
      (value) => resolve({ kind: 'value', value }),
      (error: unknown) => resolve({ kind: 'error', error }),
    );
  });
  try {
    return await settled;
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) outer?.removeEventListener('abort', onAbort);
  }
}
