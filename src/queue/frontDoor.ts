/**
 * F1/F2: the front door of the producer. A call that returns is in the ledger, or in the local
 * spool (spool.ts) that drains into it in order with the same ids, or the caller got an
 * EventNotAcceptedError — never only a log line. A Postgres known to be down is not waited on per
 * event: calls go straight to the spool while a probe asks in the background
 * (storeAvailability.ts); when it answers, the producer itself drains the spool (spoolDrain.ts).
 * While the spool holds calls, new calls go behind them, so the ledger receives every call in the
 * order it was accepted.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { EventNotAcceptedError, type NotAcceptedReason, StoreUnavailableError, SpoolWriteError } from '../contract/errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { Db } from '../store/db.ts';
import { ledgerAnswers } from '../store/deliveriesRepo.ts';
import { storeUnavailable } from '../store/unreachable.ts';
import { type CallOutcome, settleCall } from './answerCalls.ts';
import { addDeliveryJobs } from './jobs.ts';
import { withTimeout } from '../util/withTimeout.ts';
import type { PreparedItem } from './prepareEnqueue.ts';
import type { DeliveryQueueConnection } from './queueConnection.ts';
import type { RedisAvailability } from './redisAvailability.ts';
import { createSpool, type Spool } from './spool.ts';
import { drainSpoolSegment } from './spoolDrain.ts';
import { createStoreAvailability, isStoreUnusable, type StoreAvailability } from './storeAvailability.ts';
import type { EnqueueManyResult, SpoolStatus } from './types.ts';

/** What commit's store timeout answers when it fired first. */
const STORE_TIMED_OUT = Symbol('store timed out');
/** How often a producer looks for spool segments left by a producer that is gone (and drains them, Postgres willing). */
const ORPHAN_SCAN_MS = 30_000;
/** The pause between drain passes while calls are still being written to the spool. */
const DRAIN_PAUSE_MS = 10;

export type FrontDoorOptions = {
  /** Commits one call through the group commit (never rejects). */
  submit(prepared: PreparedItem[]): Promise<CallOutcome>;
  db(): Promise<Db>;
  queue(): DeliveryQueueConnection;
  redis(): RedisAvailability;
  /** The spool's folder and bound; undefined when the spool is off. */
  spool: { dir: string; maxBytes: number } | undefined;
  storeTimeoutMs: number;
  queueTimeoutMs: number;
  logger: Logger;
};

export type FrontDoor = {
  /** Steps 2–5 of an enqueue (or the spool), within the store timeout. */
  accept(prepared: PreparedItem[]): Promise<EnqueueManyResult>;
  /** The spool now (undefined when off). */
  spoolStatus(): SpoolStatus | undefined;
  /** Stops the probes; drains what it can within the store timeout; hands the rest over (spool.ts). */
  close(): Promise<void>;
};

/**
 * One spool folder per ledger and queue: producers claim only each other's segments, never those
 * of another database (a segment drains into the ledger its producer was writing to).
 */
export function spoolFolder(dataDir: string, ledger: string, queueName: string, queuePrefix: string): string {
  let identity = ledger;
  if (URL.canParse(ledger)) {
    const url = new URL(ledger);
    url.password = '';
    identity = url.toString();
  }
  const key = createHash('sha256').update(`${identity}\n${queuePrefix}\n${queueName}`).digest('hex').slice(0, 16);
  return path.resolve(dataDir, 'spool', key);
}

export function createFrontDoor(options: FrontDoorOptions): FrontDoor {
  const { logger } = options;
  const spool: Spool | undefined = options.spool ? createSpool({ ...options.spool, logger }) : undefined;
  let closing = false;
  let draining: Promise<void> | undefined;
  let lastStoreError: unknown;

  const store: StoreAvailability = createStoreAvailability({
    // The deliveries table itself: a database that answers but is not migrated yet is not ready.
    probe: async () => ledgerAnswers(await options.db()),
    logger,
    whileDown: spool
      ? `enqueue writes events to the local spool at ${options.spool!.dir} (fsync'd, at most ${options.spool!.maxBytes} bytes) and drains them into the ledger when it answers`
      : 'enqueue refuses events with EventNotAcceptedError (the local spool is off)',
    onUp: () => void drain(),
  });
  const storeFailed = (error: unknown) => {
    lastStoreError = error;
    store.failed(error);
  };

  const addJobs = async (ids: readonly string[]): Promise<void> => {
    if (ids.length === 0 || options.redis().state() !== 'up') return; // the reconciler adds them
    const jobs = ids.map((id) => ({ deliveryId: id, generation: 0 }));
    await withTimeout(
      addDeliveryJobs(options.queue().queue, jobs).catch(() => undefined),
      options.queueTimeoutMs,
      undefined,
    );
  };

  /** Drains every segment, oldest first, until the spool is empty (or the store goes away again). */
  const runDrain = async (): Promise<void> => {
    if (!spool) return;
    let events = 0;
    let rejected = 0;
    while (!closing && !store.isDown()) {
      const segments = await spool.takeSegments();
      if (segments.length === 0) {
        if (!spool.holding()) break;
        await new Promise((r) => setTimeout(r, DRAIN_PAUSE_MS));
        continue;
      }
      try {
        const db = await options.db();
        for (const segment of segments) {
          const drained = await drainSpoolSegment({ db, addJobs, logger }, segment);
          events += drained.events;
          rejected += drained.rejected;
          await spool.release(segment);
        }
      } catch (error) {
        if (isStoreUnusable(error)) storeFailed(error);
        else logger.error({ err: error }, 'spool: drain stopped; it is tried again when Postgres next answers or at the next scan');
        return;
      }
    }
    if (events > 0)
      logger.info({ events, rejected }, `spool drained: ${events - rejected} spooled events are in the ledger, with the delivery ids they were given`);
  };
  const drain = (): Promise<void> => {
    draining ??= runDrain().finally(() => {
      draining = undefined;
    });
    return draining;
  };

  // Segments a producer that is gone left here are claimed and drained now and at every scan.
  let scan: NodeJS.Timeout | undefined;
  if (spool) {
    setImmediate(() => void drain());
    scan = setInterval(() => void drain(), ORPHAN_SCAN_MS);
    scan.unref();
  }

  /** The call into the spool, or EventNotAcceptedError saying why it could not be (nothing of it stored). */
  const toSpool = async (prepared: PreparedItem[], cause: unknown): Promise<EnqueueManyResult> => {
    const hookIds = [...new Set(prepared.flatMap((p) => p.rows.map((r) => r.hookId)))];
    const unavailable = storeUnavailable(
      cause ?? lastStoreError ?? new StoreUnavailableError('the ledger store (Postgres at DATABASE_URL) is unreachable'),
      'nothing was stored',
    );
    // Q1a: a keyed call needs the ledger to check its key; the caller retries it with the same key.
    const refuse = (reason: NotAcceptedReason, detail?: string, error?: unknown) =>
      new EventNotAcceptedError({ reason, hookIds, cause: error ?? unavailable, detail });
    if (prepared.some((p) => p.idempotencyKey !== undefined)) throw refuse('idempotency_key');
    if (!spool) throw refuse('spool_off');
    try {
      await spool.append(prepared.flatMap((p) => p.rows));
    } catch (error) {
      if (error instanceof SpoolWriteError) throw refuse(error.reason, error.message, unavailable);
      throw error;
    }
    const perItem = prepared.map((p) => p.rows.map((r) => r.id));
    return { deliveryIds: perItem.flat(), perItem, queued: false, spooled: true };
  };

  return {
    async accept(prepared) {
      // F2: a known-down store is not asked; F1: while the spool holds calls, this one goes behind them.
      if (store.isDown()) return toSpool(prepared, undefined);
      if (spool?.holding()) {
        try {
          return await toSpool(prepared, undefined);
        } catch (error) {
          // The store answers (the spool is draining) but the spool cannot take this call (keyed, full): the ledger can.
          if (!(error instanceof EventNotAcceptedError)) throw error;
        }
      }
      const outcome = await withTimeout<CallOutcome | typeof STORE_TIMED_OUT>(options.submit(prepared), options.storeTimeoutMs, STORE_TIMED_OUT);
      if (outcome === STORE_TIMED_OUT) {
        // Its commit may still land: the spool holds the same ids and the drain skips rows already stored.
        const error = new StoreUnavailableError(
          `the ledger store (Postgres at DATABASE_URL) did not answer within ${options.storeTimeoutMs} ms (storeTimeoutMs): the event may or may not be stored`,
        );
        storeFailed(error);
        return toSpool(prepared, error);
      }
      if ('error' in outcome && isStoreUnusable(outcome.error)) {
        storeFailed(outcome.error);
        return toSpool(prepared, outcome.error);
      }
      return settleCall(outcome);
    },
    spoolStatus: () => spool?.status(),
    async close() {
      clearInterval(scan);
      if (spool?.holding() && !store.isDown()) await withTimeout(drain(), options.storeTimeoutMs, undefined);
      closing = true;
      store.close();
      await draining?.catch(() => undefined);
      await spool?.close();
    },
  };
}
