/**
 * Postgres down (Q13): when a ledger write fails for want of a connection, the worker stops
 * taking jobs (onDown), probes Postgres with growing pauses, and resumes (onUp) once it answers.
 * Jobs already running keep their BullMQ lock and retry their write; none is acknowledged before
 * its row is written. What waits is bounded by the worker's concurrency (intake is paused), and
 * `waiting()` says how many (hookrelay_ledger_writes_waiting). The caller logs the transitions.
 */
import { pingStore, type Db } from '../store/db.ts';
import { isStoreUnreachable as isDbUnavailable } from '../store/unreachable.ts';

const PROBE_INITIAL_DELAY_MS = 100;
const PROBE_MAX_DELAY_MS = 2_000;
const PROBE_BACKOFF_FACTOR = 2;

export type PostgresWait = {
  /** Runs `work`, waiting out Postgres outages; other errors are thrown. */
  run<T>(work: () => Promise<T>): Promise<T>;
  isDown(): boolean;
  /** Ledger operations (mostly attempt outcomes) waiting for Postgres to answer now. */
  waiting(): number;
  /** Stops probing; pending `run`s reject. */
  close(): void;
};

export function createPostgresWait(options: { db: Db; onDown?: (error: unknown) => void; onUp?: () => void }): PostgresWait {
  let down = false;
  let closed = false;
  let waiters: Array<{ resolve(): void; reject(e: Error): void }> = [];
  let timer: NodeJS.Timeout | undefined;

  const probe = (delayMs: number) => {
    timer = setTimeout(async () => {
      if (closed) return;
      try {
        await pingStore(options.db);
        down = false;
        options.onUp?.();
        for (const w of waiters.splice(0)) w.resolve();
      } catch {
        probe(Math.min(delayMs * PROBE_BACKOFF_FACTOR, PROBE_MAX_DELAY_MS));
      }
    }, delayMs);
  };

  const markDown = (error: unknown) => {
    if (down || closed) return;
    down = true;
    options.onDown?.(error);
    probe(PROBE_INITIAL_DELAY_MS);
  };

  const waitUp = () =>
    new Promise<void>((resolve, reject) => {
      if (closed) reject(new Error('postgres wait closed'));
      else if (!down) resolve();
      else waiters.push({ resolve, reject });
    });

  return {
    async run(work) {
      for (;;) {
        if (down) await waitUp();
        try {
          return await work();
        } catch (error) {
          if (closed || !isDbUnavailable(error)) throw error;
          markDown(error);
        }
      }
    },
    isDown: () => down,
    waiting: () => waiters.length,
    close() {
      closed = true;
      clearTimeout(timer);
      const pending = waiters;
      waiters = [];
      for (const w of pending) w.reject(new Error('postgres wait closed'));
    },
  };
}
