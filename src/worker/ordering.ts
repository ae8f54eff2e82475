/**
 * The worker's ordering gate. An ordered delivery (a sequence n of its operation and
 * hook, SEC-H7) is attempted only when every earlier one is settled — delivered, failed (its hook's
 * `onFailure: 'continue'`), skipped by an operator, or accepted — Postgres says (orderingRepo.ts).
 * Otherwise its job is parked (BullMQ delayed): not an attempt, no retry budget spent. The job
 * that settles a row wakes (promotes) the next waiting head of its (operation, hook); a job
 * that parks re-checks once after parking, so a wake that raced its parking is never lost; a
 * parked job also wakes by itself after PARK_MS, and the reconciler promotes heads whose wake was
 * lost (worker SIGKILLed, Redis flushed). Other operations and hooks never wait here.
 *
 * In memory first: when the earlier delivery it waits for is running in THIS worker (past the
 * gate, or itself waiting here), the job waits in memory instead of parking — its BullMQ job
 * stays active and locked (a SIGKILLed worker's jobs are re-run by stall detection), like the
 * endpoint waits of admission.ts — and asks Postgres again as soon as that one ends: no
 * moveToDelayed, no wake query, no promote, no re-fetch. Postgres still decides every `go`.
 * Bounded: at most `waitAllowance` jobs in all, MEMORY_WAITERS_PER_PREDECESSOR behind one
 * delivery, each for at most MAX_ORDERING_MEMORY_WAIT_MS; past that (or when the earlier one is
 * elsewhere, retrying later or blocking) the job parks as above.
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
import {
  firstOpenPredecessors,
  markOrderingBlocked,
  orderingHeads,
  type OrderingAnswer,
  type OrderingKey,
  type OrderingQuestion,
} from '../store/orderingRepo.ts';

/** A parked delivery re-checks by itself after this long (a lost wake costs at most this). */
const ORDERING_PARK_MS = 30_000;
/** A job waits in memory for its predecessor at most this long; then it parks (long waits do not belong in memory). */
const MAX_ORDERING_MEMORY_WAIT_MS = 10_000;
/** Jobs that may wait in memory behind one running delivery (the next few of its operation and hook). */
const MEMORY_WAITERS_PER_PREDECESSOR = 4;

/** What the gate needs to know about one ordered delivery. */
export type OrderedTarget = {
  id: string;
  generation: number;
  operationId: string;
  /** SEC-H7: the order is the hook's own: (operation, hook). */
  hookId: string;
  sequence: number;
  /** The delivery's own hook: with `block` its deadline does not run while it waits for order. */
  onFailure: 'continue' | 'block';
  /** Q3: this generation's deadline (ms), once its clock started. */
  deadlineAtMs: number | undefined;
};

type Processor = (job: Job<DeliveryJobData>, token?: string) => Promise<void>;

/**
 * `go`: attempt now (`deadlineAtMs` set when a wait in memory started the generation's clock:
 * the outcome stores it). `expired`: its deadline passed while it waited (the caller fails it
 * with `ordering_wait`).
 */
type OrderingAdmission = { kind: 'go'; deadlineAtMs: number | undefined } | { kind: 'expired' };

export type OrderingGate = {
  /** Otherwise (parked, or given back at stop) this throws DelayedError. */
  admit(job: Job<DeliveryJobData>, token: string | undefined, target: OrderedTarget): Promise<OrderingAdmission>;
  /** The processor with the wake step: when a job that passed the gate ends (not parked, not retrying later), its successor is woken. */
  wrap(processor: Processor): Processor;
  /** Jobs waiting in memory for their predecessor now. */
  waiting(): number;
  /** Stop: jobs waiting in memory are given back to the queue (moved to delayed, due now); later admits park. */
  close(): void;
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
  /** Jobs that may wait in memory for a predecessor running here (the worker's wait allowance); 0 (default) → always park. */
  waitAllowance?: number;
  /** SEC-H7: counts deliveries that became blocked behind a failed `block` predecessor (once each). */
  blocked?: { inc(n?: number): void };
};

type MemoryWake = 'ended' | 'timer' | 'stop';
/** A job waiting in memory: its delivery id and sequence, and the delivery whose end wakes it. */
type MemoryWaiter = { id: string; sequence: number; on: string; wake(why: MemoryWake): void };
/** A job that passed the gate: its key (whose head to wake), its id and sequence (who waits on it in memory). */
type Passed = { key: OrderingKey; id: string; sequence: number };

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
      const unique = [...new Map(keys.map((k) => [`${k.operationId}\u0000${k.hookId}`, k])).values()];
      const heads = await orderingHeads(options.db, unique);
      await Promise.all(heads.map((id) => promote(id)));
      return keys.map(() => undefined);
    },
  });
  /** Jobs that passed (or expired at) the gate and are running: whose successor to wake when they end. */
  const passed = new Map<string, Passed>();
  const allowance = options.waitAllowance ?? 0;
  /** Delivery ids running here past the gate or waiting here in memory: a successor may wait for them in memory. */
  const local = new Set<string>();
  /** Jobs waiting in memory, by the delivery id they wait for (its end wakes them to ask again). */
  const memoryWaiters = new Map<string, MemoryWaiter[]>();
  let waitingTotal = 0;
  let closed = false;

  /**
   * The delivery `id` ended here (settled, retrying later, parked): the first waiter behind it asks
   * Postgres again; the others now wait for that one (one question per ended delivery, not one per waiter).
   */
  const ended = (id: string): void => {
    const list = memoryWaiters.get(id);
    if (list === undefined) return;
    memoryWaiters.delete(id);
    const [first, ...rest] = list.sort((a, b) => a.sequence - b.sequence);
    if (first === undefined) return;
    if (rest.length > 0) {
      const behind = memoryWaiters.get(first.id) ?? [];
      for (const w of rest) {
        w.on = first.id;
        behind.push(w);
      }
      memoryWaiters.set(first.id, behind);
    }
    first.wake('ended');
  };
  /** Wait in memory until `on` ends here, `untilMs`, or stop. */
  const waitInMemory = (id: string, on: string, sequence: number, untilMs: number): Promise<MemoryWake> =>
    new Promise<MemoryWake>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let done = false;
      const waiter: MemoryWaiter = {
        id,
        on,
        sequence,
        wake(why) {
          if (done) return;
          done = true;
          const list = memoryWaiters.get(waiter.on);
          const at = list?.indexOf(waiter) ?? -1;
          if (list !== undefined && at >= 0) {
            list.splice(at, 1);
            if (list.length === 0) memoryWaiters.delete(waiter.on);
          }
          waitingTotal -= 1;
          clearTimeout(timer);
          resolve(why);
        },
      };
      const list = memoryWaiters.get(on) ?? [];
      list.push(waiter);
      memoryWaiters.set(on, list);
      waitingTotal += 1;
      timer = setTimeout(() => waiter.wake('timer'), Math.max(0, untilMs - Date.now()));
    });
  /** Its predecessor runs (or waits) here and there is room: wait in memory rather than park. */
  const mayWaitInMemory = (predecessor: string, waitedMs: number): boolean =>
    !closed &&
    local.has(predecessor) &&
    waitingTotal < allowance &&
    (memoryWaiters.get(predecessor)?.length ?? 0) < MEMORY_WAITERS_PER_PREDECESSOR &&
    waitedMs < MAX_ORDERING_MEMORY_WAIT_MS;

  const promote = async (id: string): Promise<void> => {
    if (!options.queue) return;
    // One round trip; refused when the job is not delayed (running, waiting already, or gone: the reconciler re-adds it).
    await new Job<DeliveryJobData>(options.queue, DELIVERY_JOB_NAME, { deliveryId: id, generation: 0 }, {}, id).promote().catch(() => undefined);
  };

  const ask = (target: OrderedTarget) => run(() => questions.submit({ operationId: target.operationId, hookId: target.hookId, sequence: target.sequence }));

  const keyOf = (job: Job<DeliveryJobData>, token: string | undefined) => `${job.id}:${token ?? ''}`;

  /** SEC-H7: blocked is visible on the rows (reason ordering_blocked), in a metric and the log, once per delivery. */
  const markBlocked = async (target: OrderedTarget, answer: { id: string; sequence: number }): Promise<void> => {
    const blocked = { operationId: target.operationId, hookId: target.hookId, afterSequence: answer.sequence };
    const marked = await run(() => markOrderingBlocked(options.db, blocked)).catch((error: unknown) => {
      options.logger.debug({ err: error, deliveryId: target.id }, 'could not mark ordered deliveries blocked');
      return 0;
    });
    if (marked === 0) return;
    options.blocked?.inc(marked);
    options.logger.warn(
      { operationId: target.operationId, hookId: target.hookId, blockedBy: answer.id, blockedSequence: answer.sequence, deliveries: marked },
      "ordered deliveries blocked: an earlier delivery of their hook failed with onFailure 'block'; replay or skip that one",
    );
  };

  return {
    async admit(job, token, target) {
      // Sequences start at 1: the first of an (operation, hook) has nothing before it to ask about.
      let answer: OrderingAnswer = target.sequence === 1 ? { kind: 'go' } : await ask(target);
      const key = { operationId: target.operationId, hookId: target.hookId };
      const pass = () => {
        passed.set(keyOf(job, token), { key, id: target.id, sequence: target.sequence });
        local.add(target.id);
      };
      /** Not waiting here any more (parked, given back): off the local set, and who waited behind it asks again. */
      const leave = () => {
        local.delete(target.id);
        ended(target.id);
      };
      const waitStarted = Date.now();
      let deadline = target.deadlineAtMs;
      /** A wait in memory started the clock (not stored yet: the outcome stores it, or parking does). */
      let clockInMemory = false;
      for (;;) {
        if (answer.kind === 'go') {
          pass();
          return { kind: 'go', deadlineAtMs: clockInMemory ? deadline : undefined };
        }
        const now = Date.now();
        if (target.onFailure === 'continue') {
          if (deadline === undefined) {
            deadline = now + options.budgetMs;
            clockInMemory = true;
          }
          if (now >= deadline) {
            pass();
            return { kind: 'expired' };
          }
        }
        if (answer.kind !== 'wait' || !mayWaitInMemory(answer.id, now - waitStarted)) break;
        const until = Math.min(
          waitStarted + MAX_ORDERING_MEMORY_WAIT_MS,
          deadline !== undefined && target.onFailure === 'continue' ? deadline : Number.POSITIVE_INFINITY,
        );
        // Local while it waits and asks again: a successor may wait behind it here too.
        local.add(target.id);
        const why = await waitInMemory(target.id, answer.id, target.sequence, until);
        if (why === 'stop') {
          leave();
          // The worker is stopping: the job goes back to the queue at once (another worker takes it; its clock restarts there).
          if (!token) throw new Error('delivery job has no lock token; cannot give it back');
          await job.moveToDelayed(Date.now(), token);
          throw new DelayedError();
        }
        // Its predecessor ended here (or the wait's bound or deadline came): Postgres says what now.
        answer = await ask(target).catch((error: unknown) => {
          leave();
          throw error;
        });
      }
      // Leaving memory without going: whoever waited here behind this job asks again (and parks).
      leave();
      const now = Date.now();
      if (target.onFailure === 'continue' && clockInMemory) {
        // First stored wait of this generation: its clock (started in memory, or now) is kept in the ledger (restarts, Redis loss) and the job.
        const stored = await run(() =>
          clocks.submit({ id: target.id, generation: target.generation, deadlineAt: new Date(deadline ?? now + options.budgetMs) }),
        );
        if (stored === undefined) {
          pass();
          return { kind: 'go', deadlineAtMs: undefined }; // no longer waiting (finished or replayed meanwhile): the next step finds out
        }
        deadline = stored.getTime();
        await job.updateData({ ...job.data, deliveryId: target.id, generation: target.generation, deadlineAt: deadline });
        if (now >= deadline) {
          pass();
          return { kind: 'expired' };
        }
      }
      if (answer.kind === 'blocked') await markBlocked(target, answer);
      if (!token) throw new Error('delivery job has no lock token; cannot park it');
      const until = deadline !== undefined && target.onFailure === 'continue' ? Math.min(deadline, now + parkMs) : now + parkMs;
      await job.moveToDelayed(Math.round(until), token);
      // The predecessor may have settled (and tried to wake this job) before it was parked: look once more.
      const again = await ask(target).catch(() => answer);
      if (again.kind === 'go') await job.promote().catch(() => undefined);
      throw new DelayedError();
    },
    wrap(processor) {
      const settle = async (k: string, settledRow: boolean): Promise<void> => {
        const entry = passed.get(k);
        if (entry === undefined) return;
        passed.delete(k);
        local.delete(entry.id);
        // The next one waiting here in memory starts without a wake: the head to promote is that job itself.
        const nextInMemory = settledRow && (memoryWaiters.get(entry.id) ?? []).some((w) => w.sequence === entry.sequence + 1);
        ended(entry.id);
        if (!settledRow || nextInMemory) return;
        // Best effort: a wake lost here is repaired by the waiter's own timer and the reconciler.
        await run(() => wakes.submit(entry.key)).catch((error: unknown) =>
          options.logger.warn({ err: error }, 'could not wake the next ordered delivery; it wakes by itself'),
        );
      };
      return async (job, token) => {
        const k = keyOf(job, token);
        try {
          await processor(job, token);
        } catch (error) {
          // Parked or retrying later: nothing settled. Anything else (failed, critical) settled the row.
          if (passed.has(k)) await settle(k, !(error instanceof DelayedError));
          throw error;
        }
        if (passed.has(k)) await settle(k, true);
      };
    },
    waiting: () => waitingTotal,
    close() {
      closed = true;
      for (const list of [...memoryWaiters.values()]) for (const w of [...list]) w.wake('stop');
    },
  };
}
