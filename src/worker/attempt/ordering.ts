/**
 * The worker's turn keeper. An ordered delivery (a sequence n of its operation and
 * hook, SEC-H7) is attempted only when every earlier one is settled — delivered, failed (its hook's
 * `onFailure: 'continue'`), skipped by an operator, or accepted — Postgres says (orderingRepo.ts).
 * Otherwise its job is parked (BullMQ delayed): not an attempt, no retry budget spent. The job
 * that settles a row wakes (promotes) the next waiting head of its (operation, hook); a job
 * that parks re-checks once after parking, so a wake that raced its parking is never lost; a
 * parked job also wakes by itself after PARK_MS, and the reconciler promotes heads whose wake was
 * lost (worker SIGKILLed, Redis flushed). Other operations and hooks never wait here.
 *
 * In memory first: when the earlier delivery it waits for is running in THIS worker (past the
 * turn keeper, or itself waiting here), the job waits in memory instead of parking — its BullMQ job
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
import type { Logger } from '../../observability/logger.ts';
import { type Batcher, createBatcher } from '../../queue/batcher.ts';
import { DELIVERY_JOB_NAME, type DeliveryJobData } from '../../queue/types.ts';
import type { Db } from '../../store/db.ts';
import { startDeliveryDeadlines, type DeadlineStart } from '../../store/deliveriesRepo.ts';
import {
  firstOpenPredecessors,
  markOrderingBlocked,
  orderingHeads,
  type OrderingAnswer,
  type OrderingKey,
  type OrderingQuestion,
} from '../../store/orderingRepo.ts';

/** A parked delivery re-checks by itself after this long (a lost wake costs at most this). */
const ORDERING_PARK_MS = 30_000;
/** A job waits in memory for its predecessor at most this long; then it parks (long waits do not belong in memory). */
const MAX_ORDERING_MEMORY_WAIT_MS = 10_000;
/** Jobs that may wait in memory behind one running delivery (the next few of its operation and hook). */
const MEMORY_WAITERS_PER_PREDECESSOR = 4;

/** What the turn keeper needs to know about one ordered delivery. */
export type OrderedTarget = {
  id: string;
  generation: number;
  /** N2: an order is its tenant's own. */
  tenant: string;
  operationId: string;
  /** SEC-H7: the order is the hook's own: (tenant, operation, hook). */
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

export type TurnKeeper = {
  /** Otherwise (parked, or given back at stop) this throws DelayedError. */
  admit(job: Job<DeliveryJobData>, token: string | undefined, target: OrderedTarget): Promise<OrderingAdmission>;
  /** The processor with the wake step: when a job that passed the turn keeper ends (not parked, not retrying later), its successor is woken. */
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
  /** The worker's Postgres wait (postgresWait.ts): a call while Postgres is down waits for it. */
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
/** A job that passed the turn keeper: its key (whose head to wake), its id and sequence (who waits on it in memory). */
type Passed = { key: OrderingKey; id: string; sequence: number };

/** One admit's wait: when it started, its deadline, and whether a wait in memory started that clock (not stored yet). */
type AdmitWait = { startedMs: number; deadline: number | undefined; clockInMemory: boolean };
/** How a wait for the turn ended: the turn keeper's answer (`done`), or the answer to park with. */
type TurnOutcome = { done: OrderingAdmission } | { park: Exclude<OrderingAnswer, { kind: 'go' }> };

export function createTurnKeeper(options: OrderingOptions): TurnKeeper {
  return new PostgresTurnKeeper(options);
}

const keyOf = (job: Job<DeliveryJobData>, token: string | undefined) => `${job.id}:${token ?? ''}`;

/** The turn keeper over Postgres (see the module comment), with its in-memory waits. */
class PostgresTurnKeeper implements TurnKeeper {
  private readonly run: <T>(work: () => Promise<T>) => Promise<T>;
  private readonly parkMs: number;
  private readonly allowance: number;
  // Concurrent jobs ask together: one statement (one index probe each) per flush.
  private readonly questions: Batcher<OrderingQuestion, OrderingAnswer>;
  private readonly clocks: Batcher<DeadlineStart, Date | undefined>;
  private readonly wakes: Batcher<OrderingKey, undefined>;
  /** Jobs that passed (or expired at) the turn keeper and are running: whose successor to wake when they end. */
  private readonly passed = new Map<string, Passed>();
  /** Delivery ids running here past the turn keeper or waiting here in memory: a successor may wait for them in memory. */
  private readonly local = new Set<string>();
  /** Jobs waiting in memory, by the delivery id they wait for (its end wakes them to ask again). */
  private readonly memoryWaiters = new Map<string, MemoryWaiter[]>();
  private waitingTotal = 0;
  private closed = false;

  constructor(private readonly options: OrderingOptions) {
    this.run = options.run ?? (<T>(work: () => Promise<T>) => work());
    this.parkMs = options.parkMs ?? ORDERING_PARK_MS;
    this.allowance = options.waitAllowance ?? 0;
    this.questions = createBatcher<OrderingQuestion, OrderingAnswer>({
      maxBatch: 500,
      maxConcurrent: 2,
      run: (items) => firstOpenPredecessors(options.db, items),
    });
    this.clocks = createBatcher<DeadlineStart, Date | undefined>({
      maxBatch: 500,
      maxConcurrent: 1,
      run: (starts) => startDeliveryDeadlines(options.db, starts),
    });
    this.wakes = createBatcher<OrderingKey, undefined>({
      maxBatch: 500,
      maxConcurrent: 2,
      run: async (keys) => {
        const unique = [...new Map(keys.map((k) => [`${k.tenant}\u0000${k.operationId}\u0000${k.hookId}`, k])).values()];
        const heads = await orderingHeads(options.db, unique);
        await Promise.all(heads.map((id) => this.promote(id)));
        return keys.map(() => undefined);
      },
    });
  }

  async admit(job: Job<DeliveryJobData>, token: string | undefined, target: OrderedTarget): Promise<OrderingAdmission> {
    // Sequences start at 1: the first of an (operation, hook) has nothing before it to ask about.
    const answer: OrderingAnswer = target.sequence === 1 ? { kind: 'go' } : await this.ask(target);
    const wait: AdmitWait = { startedMs: Date.now(), deadline: target.deadlineAtMs, clockInMemory: false };
    const turn = await this.waitForTurn(job, token, target, wait, answer);
    if ('done' in turn) return turn.done;
    // Leaving memory without going: whoever waited here behind this job asks again (and parks).
    this.leave(target.id);
    return this.park(job, token, target, wait, turn.park);
  }

  wrap(processor: Processor): Processor {
    return async (job, token) => {
      const k = keyOf(job, token);
      try {
        await processor(job, token);
      } catch (error) {
        // Parked or retrying later: nothing settled. Anything else (failed, critical) settled the row.
        if (this.passed.has(k)) await this.settle(k, !(error instanceof DelayedError));
        throw error;
      }
      if (this.passed.has(k)) await this.settle(k, true);
    };
  }

  waiting(): number {
    return this.waitingTotal;
  }

  close(): void {
    this.closed = true;
    for (const list of [...this.memoryWaiters.values()]) for (const w of [...list]) w.wake('stop');
  }

  /**
   * Go, or wait in memory while the predecessor runs (or waits) here, asking Postgres again each
   * time it ends; `park` when the job must leave memory (elsewhere, blocked, no room, too long).
   */
  private async waitForTurn(
    job: Job<DeliveryJobData>,
    token: string | undefined,
    target: OrderedTarget,
    wait: AdmitWait,
    first: OrderingAnswer,
  ): Promise<TurnOutcome> {
    let answer = first;
    for (;;) {
      if (answer.kind === 'go') {
        this.pass(job, token, target);
        return { done: { kind: 'go', deadlineAtMs: wait.clockInMemory ? wait.deadline : undefined } };
      }
      const now = Date.now();
      if (target.onFailure === 'continue') {
        if (wait.deadline === undefined) {
          wait.deadline = now + this.options.budgetMs;
          wait.clockInMemory = true;
        }
        if (now >= wait.deadline) {
          this.pass(job, token, target);
          return { done: { kind: 'expired' } };
        }
      }
      if (answer.kind !== 'wait' || !this.mayWaitInMemory(answer.id, now - wait.startedMs)) return { park: answer };
      const until = Math.min(
        wait.startedMs + MAX_ORDERING_MEMORY_WAIT_MS,
        wait.deadline !== undefined && target.onFailure === 'continue' ? wait.deadline : Number.POSITIVE_INFINITY,
      );
      // Local while it waits and asks again: a successor may wait behind it here too.
      this.local.add(target.id);
      const why = await this.waitInMemory(target.id, answer.id, target.sequence, until);
      if (why === 'stop') {
        this.leave(target.id);
        // The worker is stopping: the job goes back to the queue at once (another worker takes it; its clock restarts there).
        if (!token) throw new Error('delivery job has no lock token; cannot give it back');
        await job.moveToDelayed(Date.now(), token);
        throw new DelayedError();
      }
      // Its predecessor ended here (or the wait's bound or deadline came): Postgres says what now.
      answer = await this.ask(target).catch((error: unknown) => {
        this.leave(target.id);
        throw error;
      });
    }
  }

  /** Parks the job (BullMQ delayed) after storing a clock started in memory; throws DelayedError once parked. */
  private async park(
    job: Job<DeliveryJobData>,
    token: string | undefined,
    target: OrderedTarget,
    wait: AdmitWait,
    answer: Exclude<OrderingAnswer, { kind: 'go' }>,
  ): Promise<OrderingAdmission> {
    const now = Date.now();
    let deadline = wait.deadline;
    if (target.onFailure === 'continue' && wait.clockInMemory) {
      // First stored wait of this generation: its clock (started in memory, or now) is kept in the ledger (restarts, Redis loss) and the job.
      const stored = await this.run(() =>
        this.clocks.submit({ id: target.id, generation: target.generation, deadlineAt: new Date(deadline ?? now + this.options.budgetMs) }),
      );
      if (stored === undefined) {
        this.pass(job, token, target);
        return { kind: 'go', deadlineAtMs: undefined }; // no longer waiting (finished or replayed meanwhile): the next step finds out
      }
      deadline = stored.getTime();
      await job.updateData({ ...job.data, deliveryId: target.id, generation: target.generation, deadlineAt: deadline });
      if (now >= deadline) {
        this.pass(job, token, target);
        return { kind: 'expired' };
      }
    }
    if (answer.kind === 'blocked') await this.markBlocked(target, answer);
    if (!token) throw new Error('delivery job has no lock token; cannot park it');
    const until = deadline !== undefined && target.onFailure === 'continue' ? Math.min(deadline, now + this.parkMs) : now + this.parkMs;
    await job.moveToDelayed(Math.round(until), token);
    // The predecessor may have settled (and tried to wake this job) before it was parked: look once more.
    const again = await this.ask(target).catch(() => answer);
    if (again.kind === 'go') await job.promote().catch(() => undefined);
    throw new DelayedError();
  }

  /** Past the turn keeper: its end wakes its successor (`settle`), and a successor may wait for it in memory. */
  private pass(job: Job<DeliveryJobData>, token: string | undefined, target: OrderedTarget): void {
    this.passed.set(keyOf(job, token), {
      key: { tenant: target.tenant, operationId: target.operationId, hookId: target.hookId },
      id: target.id,
      sequence: target.sequence,
    });
    this.local.add(target.id);
  }

  /** Not waiting here any more (parked, given back): off the local set, and who waited behind it asks again. */
  private leave(id: string): void {
    this.local.delete(id);
    this.ended(id);
  }

  /** A job that passed the turn keeper ended; `settledRow`: its row settled, so the next waiting head is woken. */
  private async settle(k: string, settledRow: boolean): Promise<void> {
    const entry = this.passed.get(k);
    if (entry === undefined) return;
    this.passed.delete(k);
    this.local.delete(entry.id);
    // The next one waiting here in memory starts without a wake: the head to promote is that job itself.
    const nextInMemory = settledRow && (this.memoryWaiters.get(entry.id) ?? []).some((w) => w.sequence === entry.sequence + 1);
    this.ended(entry.id);
    if (!settledRow || nextInMemory) return;
    // Best effort: a wake lost here is repaired by the waiter's own timer and the reconciler.
    await this.run(() => this.wakes.submit(entry.key)).catch((error: unknown) =>
      this.options.logger.warn({ err: error }, 'could not wake the next ordered delivery; it wakes by itself'),
    );
  }

  /**
   * The delivery `id` ended here (settled, retrying later, parked): the first waiter behind it asks
   * Postgres again; the others now wait for that one (one question per ended delivery, not one per waiter).
   */
  private ended(id: string): void {
    const list = this.memoryWaiters.get(id);
    if (list === undefined) return;
    this.memoryWaiters.delete(id);
    const [first, ...rest] = list.sort((a, b) => a.sequence - b.sequence);
    if (first === undefined) return;
    if (rest.length > 0) {
      const behind = this.memoryWaiters.get(first.id) ?? [];
      for (const w of rest) {
        w.on = first.id;
        behind.push(w);
      }
      this.memoryWaiters.set(first.id, behind);
    }
    first.wake('ended');
  }

  /** Wait in memory until `on` ends here, `untilMs`, or stop. */
  private waitInMemory(id: string, on: string, sequence: number, untilMs: number): Promise<MemoryWake> {
    return new Promise<MemoryWake>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let done = false;
      const waiter: MemoryWaiter = {
        id,
        on,
        sequence,
        wake: (why) => {
          if (done) return;
          done = true;
          const list = this.memoryWaiters.get(waiter.on);
          const at = list?.indexOf(waiter) ?? -1;
          if (list !== undefined && at >= 0) {
            list.splice(at, 1);
            if (list.length === 0) this.memoryWaiters.delete(waiter.on);
          }
          this.waitingTotal -= 1;
          clearTimeout(timer);
          resolve(why);
        },
      };
      const list = this.memoryWaiters.get(on) ?? [];
      list.push(waiter);
      this.memoryWaiters.set(on, list);
      this.waitingTotal += 1;
      timer = setTimeout(() => waiter.wake('timer'), Math.max(0, untilMs - Date.now()));
    });
  }

  /** Its predecessor runs (or waits) here and there is room: wait in memory rather than park. */
  private mayWaitInMemory(predecessor: string, waitedMs: number): boolean {
    return (
      !this.closed &&
      this.local.has(predecessor) &&
      this.waitingTotal < this.allowance &&
      (this.memoryWaiters.get(predecessor)?.length ?? 0) < MEMORY_WAITERS_PER_PREDECESSOR &&
      waitedMs < MAX_ORDERING_MEMORY_WAIT_MS
    );
  }

  private async promote(id: string): Promise<void> {
    if (!this.options.queue) return;
    // One round trip; refused when the job is not delayed (running, waiting already, or gone: the reconciler re-adds it).
    await new Job<DeliveryJobData>(this.options.queue, DELIVERY_JOB_NAME, { deliveryId: id, generation: 0 }, {}, id).promote().catch(() => undefined);
  }

  private ask(target: OrderedTarget): Promise<OrderingAnswer> {
    return this.run(() => this.questions.submit({ tenant: target.tenant, operationId: target.operationId, hookId: target.hookId, sequence: target.sequence }));
  }

  /** SEC-H7: blocked is visible on the rows (reason ordering_blocked), in a metric and the log, once per delivery. */
  private async markBlocked(target: OrderedTarget, answer: { id: string; sequence: number }): Promise<void> {
    const blocked = { tenant: target.tenant, operationId: target.operationId, hookId: target.hookId, afterSequence: answer.sequence };
    const marked = await this.run(() => markOrderingBlocked(this.options.db, blocked)).catch((error: unknown) => {
      this.options.logger.debug({ err: error, deliveryId: target.id }, 'could not mark ordered deliveries blocked');
      return 0;
    });
    if (marked === 0) return;
    this.options.blocked?.inc(marked);
    this.options.logger.warn(
      { operationId: target.operationId, hookId: target.hookId, blockedBy: answer.id, blockedSequence: answer.sequence, deliveries: marked },
      "ordered deliveries blocked: an earlier delivery of their hook failed with onFailure 'block'; replay or skip that one",
    );
  }
}
