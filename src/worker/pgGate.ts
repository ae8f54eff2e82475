/**
 * §14 "Postgres down": when a ledger write fails for want of a connection, the worker stops
 * taking jobs (onDown), probes Postgres with growing pauses, and resumes (onUp) once it answers.
 * Jobs already running keep their BullMQ lock and retry their write; none is acknowledged before
 * its row is written.
 */
import { sql } from 'drizzle-orm';
import type { Logger } from '../observability/logger.ts';
import type { Db } from '../store/db.ts';

const PROBE_INITIAL_DELAY_MS = 100;
const PROBE_MAX_DELAY_MS = 2_000;
const PROBE_BACKOFF_FACTOR = 2;

/** SQLSTATE classes that mean "no usable connection": 08 connection, 57 operator intervention, 53 resources. */
const UNAVAILABLE_SQLSTATE = /^(08|57|53)/;
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);
const UNAVAILABLE_MESSAGE =
  /connection terminated|connection error|terminating connection|timeout exceeded when trying to connect|client has encountered a connection error|connection ended|server closed the connection|the database system is (starting up|shutting down)/i;

/** Is this error Postgres (or the path to it) being away, rather than a bad statement? */
function isDbUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 4; depth += 1) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_CODES.has(code))) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export type PgGate = {
  /** Runs `work`, waiting out Postgres outages; other errors are thrown. */
  run<T>(work: () => Promise<T>): Promise<T>;
  isDown(): boolean;
  /** Stops probing; pending `run`s reject. */
  close(): void;
};

export function createPgGate(options: { db: Db; logger: Logger; onDown?: () => void; onUp?: () => void }): PgGate {
  let down = false;
  let closed = false;
  let waiters: Array<{ resolve(): void; reject(e: Error): void }> = [];
  let timer: NodeJS.Timeout | undefined;

  const probe = (delayMs: number) => {
    timer = setTimeout(async () => {
      if (closed) return;
      try {
        await options.db.execute(sql`select 1`);
        down = false;
        options.logger.info('postgres answers again; taking jobs');
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
    options.logger.warn({ err: error }, 'postgres unavailable; pausing job intake until it answers');
    options.onDown?.();
    probe(PROBE_INITIAL_DELAY_MS);
  };

  const waitUp = () =>
    new Promise<void>((resolve, reject) => {
      if (closed) reject(new Error('pg gate closed'));
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
    close() {
      closed = true;
      clearTimeout(timer);
      const pending = waiters;
      waiters = [];
      for (const w of pending) w.reject(new Error('pg gate closed'));
    },
  };
}
