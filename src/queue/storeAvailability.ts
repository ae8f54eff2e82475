/**
 * F1/F2 on the producer's side of Postgres: whether the ledger takes writes now. Once a write
 * failed for want of the store — unreachable, refused (no such database, authentication), not
 * migrated yet, or no answer within the store timeout — it is known down: enqueue spools at once
 * instead of waiting per event, and a probe asks in the background (100 ms, doubling to 2 s) until
 * the ledger answers; then `onUp` drains the spool. One log line each way.
 */
import type { Logger } from '../observability/logger.ts';
import { isStoreUnreachable } from '../store/unreachable.ts';

const PROBE_INITIAL_DELAY_MS = 100;
const PROBE_MAX_DELAY_MS = 2_000;

/** SQLSTATE classes that say the store cannot take writes yet, not that the call was bad: 3D (no such database), 3F (no such schema), 28 (authentication), 42P01 (no deliveries table: not migrated yet). */
const NOT_READY_SQLSTATE = /^(3D|3F|28)|^42P01$/;

/** Is this the store being away or not ready (spool and retry), rather than this call's fault (tell the caller)? */
export function isStoreUnusable(error: unknown): boolean {
  if (isStoreUnreachable(error)) return true;
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 4; depth += 1) {
    const { code, sqlState } = e as { code?: unknown; sqlState?: unknown };
    for (const c of [sqlState, code]) if (typeof c === 'string' && NOT_READY_SQLSTATE.test(c)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export type StoreAvailability = {
  isDown(): boolean;
  /** A write failed for want of the store: known down until the probe answers. */
  failed(error: unknown): void;
  close(): void;
};

export function createStoreAvailability(options: {
  /** Resolves when the ledger answers (and has its table). */
  probe: () => Promise<unknown>;
  logger: Logger;
  /** What the outage means for a caller, for the log line. */
  whileDown: string;
  /** Postgres answers again (after the "answers again" line). */
  onUp: () => void;
}): StoreAvailability {
  let downSince: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const probe = (delayMs: number) => {
    timer = setTimeout(async () => {
      if (closed) return;
      try {
        await options.probe();
      } catch {
        probe(Math.min(delayMs * 2, PROBE_MAX_DELAY_MS));
        return;
      }
      if (closed || downSince === undefined) return;
      const ms = Date.now() - downSince;
      downSince = undefined;
      options.logger.info(
        { dependency: 'postgres', outageMs: ms },
        `postgres answers again after ${(ms / 1000).toFixed(1)} s; enqueue stores events in the ledger again`,
      );
      options.onUp();
    }, delayMs);
    timer.unref();
  };

  return {
    isDown: () => downSince !== undefined,
    failed(error) {
      if (downSince !== undefined || closed) return;
      downSince = Date.now();
      options.logger.warn(
        { dependency: 'postgres', ...(error instanceof Error ? { err: error } : {}) },
        `postgres is unreachable (DATABASE_URL): ${options.whileDown}; probing in the background`,
      );
      probe(PROBE_INITIAL_DELAY_MS);
    },
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}
