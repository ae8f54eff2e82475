/**
 * Issue 30: the worker's ordering gate. An ordered delivery (a sequence n of its operation and
 * endpoint) is attempted only when every earlier one is settled — delivered, failed (its hook's
 * `onFailure: 'continue'`), skipped by an operator, or accepted — Postgres says (orderingRepo.ts).
 * Otherwise its job is parked (BullMQ delayed): not an attempt, no retry budget spent. The job
 * that settles a row wakes (promotes) the next waiting head of its (operation, endpoint); a job
 * that parks re-checks once after parking, so a wake that raced its parking is never lost; a
 * parked job also wakes by itself after PARK_MS, and the reconciler promotes heads whose wake was
 * lost (worker SIGKILLed, Redis flushed). Other operations and endpoints never wait here.
 *
 * Deadline (Q3): while a delivery with `onFailure: 'continue'` waits, its deadline runs (its clock
 * starts at its first wait); past it, it fails with reason `ordering_wait` and the ones after it
 * still wait for the unfinished earlier one. With `onFailure: 'block'` the waiting delivery has
 * no deadline while it waits for order (strict order over timeliness): its clock starts at its
 * first attempt, and behind a failed `block` delivery it waits until an operator replays or skips that.
 */
import { DelayedError, Job, type Queue } from 'bullmq';
import type { Logger } from '../observability/logger.ts';
import { createBatcher } from '../queue/batcher.ts';
import { DELIVERY_JOB_NAME, type DeliveryJobData } from '../queue/types.ts';
import type { Db } from '../store/db.ts';
import { startDeliveryDeadlines, type DeadlineStart } from '../store/deliveriesRepo.ts';
import { firstOpenPredecessors, orderingHeads, type OrderingAnswer, type OrderingKey, type OrderingQuestion } from '../store/orderingRepo.ts';

/** A parked delivery re-checks by itself after this long (a lost wake costs at most this). */
export const ORDERING_PARK_MS = 30_000;

/** What the gate needs to know about one ordered delivery. */
export type OrderedTarget = {
  id: string;
  generation: number;
  operationId: string;
  endpointKey: string;
  sequence: number;
  /** The delivery's own hook: with `block` its deadline does not run while it waits for order. */
  onFailure: 'continue' | 'block';
  /** Q3: this generation's deadline (ms), once its clock started. */
  deadlineAtMs: number | undefined;
};

type Processor = (job: Job<DeliveryJobData>, token?: string) => Promise<void>;

export type OrderingGate = {
  /**
   * `go`: attempt now. `expired`: its deadline passed while it waited (the caller fails it with
   * `ordering_wait`). Otherwise the job is parked and this throws DelayedError.
   */
  admit(job: Job<DeliveryJobData>, token: string | undefined, target: OrderedTarget): Promise<'go' | 'expired'>;
  /** The processor with the wake step: when a job that passed the gate ends (not parked, not retrying later), its successor is woken. */
  wrap(processor: Processor): Processor;
};

export type OrderingOptions = {
  db: Db;
  /** Promotes parked jobs; without it, waiters wake only by their own timer. */
  queue?: Queue<DeliveryJobData>;
  /** The worker's Postgres gate (pgGate.ts): a call while Postgres is down waits for it. */
  run?: <T>(work: () => Promise<T>) => Promise<T>;
  /** Q3: the deadline budget of a generation (deadlineBudgetMs of the schedule). */
  budgetMs: number;
  logger: Logger;
  parkMs?: number;
};

export function createOrderingGate(options: OrderingOptions): OrderingGate {
  const run = options.run ?? (<T>(work: () => Promise<T>) => work());
  const parkMs = options.parkMs ?? ORDERING_PARK_MS;
  // Concurrent jobs ask together: one statement (one index probe each) per flush.
  const questions = createBatcher<OrderingQuestion, OrderingAnswer>({
    maxBatch: 500,
    maxConcurrent: 2,
    run: (items) => firstOpenPredecessors(options.db, items),
  });
  const clocks = createBatcher<DeadlineStart, Date | undefined>({
    maxBatch: 500,
    maxConcurrent: 1,
    run: (starts) => startDeliveryDeadlines(options.db, starts),
  });
  const wakes = createBatcher<OrderingKey, undefined>({
    maxBatch: 500,
    maxConcurrent: 2,
    async run(keys) {
      const unique = [...new Map(keys.map((k) => [`${k.operationId}\u0000${k.endpointKey}`, k])).values()];
      const heads = await orderingHeads(options.db, unique);
      await Promise.all(heads.map((id) => promote(id)));
      return keys.map(() => undefined);
    },
  });
  /** Jobs that passed (or expired at) the gate and are running: whose successor to wake when they end. */
  const passed = new Map<string, OrderingKey>();

  const promote = async (id: string): Promise<void> => {
    if (!options.queue) return;
    // One round trip; refused when the job is not delayed (running, waiting already, or gone: the reconciler re-adds it).
    await new Job<DeliveryJobData>(options.queue, DELIVERY_JOB_NAME, { deliveryId: id, generation: 0 }, {}, id).promote().catch(() => undefined);
  };

  const ask = (target: OrderedTarget) =>
    run(() => questions.submit({ operationId: target.operationId, endpointKey: target.endpointKey, sequence: target.sequence }));

  const keyOf = (job: Job<DeliveryJobData>, token: string | undefined) => `${job.id}:${token ?? ''}`;

  return {
    async admit(job, token, target) {
      const answer = await ask(target);
      const key = { operationId: target.operationId, endpointKey: target.endpointKey };
      if (answer.kind === 'go') {
        passed.set(keyOf(job, token), key);
        return 'go';
      }
      const now = Date.now();
      let deadline = target.deadlineAtMs;
      if (target.onFailure === 'continue') {
        if (deadline === undefined) {
          // First wait of this generation: its clock starts now, kept in the ledger (restarts, Redis loss) and the job.
          const stored = await run(() => clocks.submit({ id: target.id, generation: target.generation, deadlineAt: new Date(now + options.budgetMs) }));
          if (stored === undefined) return 'go'; // no longer waiting (finished or replayed meanwhile): the next step finds out
          deadline = stored.getTime();
          await job.updateData({ ...job.data, deliveryId: target.id, generation: target.generation, deadlineAt: deadline });
        }
        if (now >= deadline) {
          passed.set(keyOf(job, token), key);
          return 'expired';
        }
      }
      if (!token) throw new Error('delivery job has no lock token; cannot park it');
      const until = deadline !== undefined && target.onFailure === 'continue' ? Math.min(deadline, now + parkMs) : now + parkMs;
      await job.moveToDelayed(Math.round(until), token);
      // The predecessor may have settled (and tried to wake this job) before it was parked: look once more.
      const again = await ask(target).catch(() => answer);
      if (again.kind === 'go') await job.promote().catch(() => undefined);
      throw new DelayedError();
    },
    wrap(processor) {
      const settle = async (k: string): Promise<void> => {
        const key = passed.get(k);
        if (key === undefined) return;
        passed.delete(k);
        // Best effort: a wake lost here is repaired by the waiter's own timer and the reconciler.
        await run(() => wakes.submit(key)).catch((error: unknown) =>
          options.logger.warn({ err: error }, 'could not wake the next ordered delivery; it wakes by itself'),
        );
      };
      return async (job, token) => {
        const k = keyOf(job, token);
        try {
          await processor(job, token);
        } catch (error) {
          // Parked or retrying later: nothing settled. Anything else (failed, critical) settled the row.
          if (error instanceof DelayedError) passed.delete(k);
          else await settle(k);
          throw error;
        }
        await settle(k);
      };
    },
  };
}
