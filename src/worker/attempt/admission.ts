/**
 * The processor's admission step: may this job's attempt start now?
 *
 * Two limits apply. The worker's own: HOOKRELAY_CONCURRENCY attempts at once (a FIFO semaphore,
 * `deliverySlots`). The endpoint's: the shared gate in Redis (adaptive limit, rate limit,
 * breaker, disabled). The fast path is synchronous: with nobody waiting for the endpoint, a free
 * worker slot and a free slot the worker leased for the endpoint (isolation/endpointLeases.ts),
 * the job goes at once — no Redis call, no promise, no timer. BullMQ runs
 * `concurrency + waitAllowance` jobs, so a job whose endpoint is at its limit waits here, in
 * memory, in that endpoint's FIFO — its BullMQ job stays active and locked (lock renewal keeps
 * it owned; a crashed worker's jobs are re-run by stall detection) — and starts when an attempt
 * of the same endpoint ends, with no `moveToDelayed` and no re-fetch.
 *
 * Bounded, so a stuck endpoint cannot take the worker: an endpoint's queue holds
 * max(MIN_ENDPOINT_QUEUE, its attempts in flight) jobs — more only while its attempts are quick
 * enough that the last would start within SHORT_WAIT_MS — and all queues together at most the wait
 * allowance; past that, or for long waits (an open breaker, a rate limit further than
 * RATE_MEMORY_WAIT_MS, any wait past MAX_MEMORY_WAIT_MS), the job is deferred as before (moved to
 * delayed, re-fetched later), which frees its BullMQ slot for other endpoints' jobs.
 *
 * Q3: waiting here counts against the delivery's deadline. A wait starts the
 * generation's clock in memory (persisted by the processor if the job is then deferred, stored
 * with the attempt's outcome otherwise); a waiter whose deadline passes is `expired`.
 */
import type { DeferReason } from '../../isolation/endpointGate.ts';
import type { AdmitDecision, EndpointIsolation } from '../../isolation/endpointIsolation.ts';
import { createDeliverySlots, type DeliverySlots } from './deliverySlots.ts';

/** Every endpoint may keep this many jobs waiting, however few attempts it has in flight. */
export const MIN_ENDPOINT_QUEUE = 4;
/** A job waits in memory at most this long; then it is deferred (long waits do not belong in memory). */
const MAX_MEMORY_WAIT_MS = 10_000;
/** A rate-limited job waits in memory only when its turn is at most this far. */
const RATE_MEMORY_WAIT_MS = 1_000;
/** A queue longer than a round of attempts is kept while its expected wait stays under this. */
const SHORT_WAIT_MS = 250;
/** The head waiter of an endpoint re-asks the gate this often (slots freed by other workers, lapsed leases): doubling. */
const POLL_BASE_MS = 20;
const POLL_MAX_MS = 1_000;
/** Deferral when the endpoint's queue is full: backoff by starts, at least the endpoint's typical attempt. */
const DEFER_BASE_MS = 50;
const DEFER_MAX_MS = 5_000;
/** Weight of the newest attempt duration in the endpoint's moving average. */
const EWMA_WEIGHT = 0.2;

/**
 * Jobs BullMQ runs beyond HOOKRELAY_CONCURRENCY, waiting in memory: as many again (a full round
 * of attempts ready to start as slots free, with no fetch in between), at least MIN_ENDPOINT_QUEUE.
 */
export function deliveryWaitAllowance(concurrency: number): number {
  return Math.max(MIN_ENDPOINT_QUEUE, concurrency);
}

type AdmissionRequest = {
  /** The endpoint key; undefined → no endpoint gate (isolation off, or an invalid hook). */
  endpoint: string | undefined;
  token: string;
  leaseMs: number;
  hookRate: number | undefined;
  /** How many times BullMQ has started this job (deferrals back off with it). */
  starts: number;
  /** Q3: the generation's deadline, if its clock started. */
  deadlineAtMs: number | undefined;
  /** Q3: the schedule's budget (a first wait's clock: now + this). */
  budgetMs: number;
};

/**
 * go: start the attempt now (call `done` with its duration when it ends, always);
 * hold: the endpoint is disabled; defer: move the job to delayed until `atMs`;
 * expired: the deadline passed while waiting; requeue: the worker is stopping, give the job back.
 * `deadlineAtMs` is set when a wait here started the clock.
 */
export type AdmissionResult =
  | { kind: 'go'; deadlineAtMs: number | undefined; done(durationMs: number | undefined): void }
  | { kind: 'hold' }
  | { kind: 'defer'; atMs: number; reason: DeferReason; deadlineAtMs: number | undefined }
  | { kind: 'expired'; reason: DeferReason; deadlineAtMs: number }
  | { kind: 'requeue' };

export type Admission = {
  /** Synchronous on the fast path: a free worker slot and a free slot the worker leased for the endpoint, nobody waiting before it. */
  admit(request: AdmissionRequest): AdmissionResult | Promise<AdmissionResult>;
  /** Jobs waiting in memory for their endpoint now. */
  waiting(): number;
  /** Stop: every waiter (endpoint or slot) is given back (`requeue`); later admits too. */
  close(): void;
};

type Wake = 'slot' | 'timer' | 'stop';
type Waiter = { wake(why: Wake): void };
/**
 * An endpoint's waiters (FIFO), its attempts in flight as the gate last said, its attempts' moving
 * average, and the `done` its admitted attempts call (made once per queue, not per attempt).
 */
type EndpointQueue = { waiters: Waiter[]; inFlight: number; ewmaMs: number | undefined; ended: (durationMs: number | undefined) => void };

type AdmissionOptions = {
  /** HOOKRELAY_CONCURRENCY: attempts at once. */
  concurrency: number;
  /** Jobs that may wait in memory for their endpoint, all endpoints together. */
  waitAllowance: number;
  isolation?: EndpointIsolation;
  random?: () => number;
};

export function createAdmission(options: AdmissionOptions): Admission {
  return new EndpointAdmission(options);
}

const wakeHead = (q: EndpointQueue, why: Wake): void => q.waiters[0]?.wake(why);

/** Q3: one request's deadline clock; a first wait starts it (now + the budget) unless it already runs. */
class WaitClock {
  private deadline: number | undefined;
  private startedHere = false;
  constructor(
    deadlineAtMs: number | undefined,
    private readonly budgetMs: number,
  ) {
    this.deadline = deadlineAtMs;
  }
  /** The deadline, starting the clock at `now` if it had not started. */
  start(now: number): number {
    if (this.deadline === undefined) {
      this.deadline = now + this.budgetMs;
      this.startedHere = true;
    }
    return this.deadline;
  }
  /** The deadline when a wait here started the clock (the caller stores it), else undefined. */
  started(): number | undefined {
    return this.startedHere ? this.deadline : undefined;
  }
}

/** The worker's slots and the endpoints' in-memory FIFOs (see the module comment). */
class EndpointAdmission implements Admission {
  private readonly slots: DeliverySlots;
  private readonly random: () => number;
  private readonly queues = new Map<string, EndpointQueue>();
  private waitingTotal = 0;
  private closed = false;

  constructor(private readonly options: AdmissionOptions) {
    this.slots = createDeliverySlots(options.concurrency);
    this.random = options.random ?? Math.random;
  }

  admit(request: AdmissionRequest): AdmissionResult | Promise<AdmissionResult> {
    const isolation = this.options.isolation;
    const endpoint = request.endpoint;
    if (this.closed) return { kind: 'requeue' };
    if (endpoint === undefined || !isolation) return this.goWithoutGate();
    const q = this.queueOf(endpoint);
    if (q.waiters.length > 0) return this.admitQueued(isolation, endpoint, q, request, undefined);
    // The fast path, synchronous: a free worker slot, then a free slot the worker leased for this endpoint.
    const slot = this.slots.acquire();
    if (slot === true && isolation.admitNow(endpoint, request.token, request.leaseMs, request.hookRate))
      return { kind: 'go', deadlineAtMs: undefined, done: q.ended };
    return this.admitQueued(isolation, endpoint, q, request, slot);
  }

  /** The slow path: FIFO behind the endpoint's waiters, then the gate (`slot`: the worker slot already asked for, if any). */
  private async admitQueued(
    isolation: EndpointIsolation,
    endpoint: string,
    q: EndpointQueue,
    request: AdmissionRequest,
    slot: boolean | Promise<boolean> | undefined,
  ): Promise<AdmissionResult> {
    const clock = new WaitClock(request.deadlineAtMs, request.budgetMs);
    const waitStarted = Date.now();
    // FIFO: behind the jobs already waiting for this endpoint, without asking the gate.
    if (q.waiters.length > 0 && slot === undefined) {
      const queued = await this.waitBehindQueue(q, request, clock, waitStarted);
      if (queued !== undefined) return queued;
    }
    return this.admitThroughGate(isolation, endpoint, q, request, clock, waitStarted, slot);
  }

  waiting(): number {
    return this.waitingTotal;
  }

  close(): void {
    this.closed = true;
    for (const q of this.queues.values()) for (const w of [...q.waiters]) w.wake('stop');
    this.slots.close();
  }

  /** Joins the end of `q` (or is deferred / expired when there is no room); undefined once its turn came. */
  private async waitBehindQueue(q: EndpointQueue, request: AdmissionRequest, clock: WaitClock, waitStarted: number): Promise<AdmissionResult | undefined> {
    const now = Date.now();
    if (!this.room(q)) {
      const by = clock.start(now);
      if (now >= by) return { kind: 'expired', reason: 'busy', deadlineAtMs: by };
      return { kind: 'defer', atMs: Math.min(this.deferAt(q, request.starts, now), by), reason: 'busy', deadlineAtMs: clock.started() };
    }
    const by = clock.start(now);
    if (now >= by) return { kind: 'expired', reason: 'busy', deadlineAtMs: by };
    const why = await this.wait(q, Math.min(by, waitStarted + MAX_MEMORY_WAIT_MS), false);
    if (why === 'stop') return { kind: 'requeue' };
    return undefined;
  }

  /** A worker slot, then the endpoint's gate; a busy or near rate-limited endpoint waits at the head of `q` and asks again. */
  private async admitThroughGate(
    isolation: EndpointIsolation,
    endpoint: string,
    q: EndpointQueue,
    request: AdmissionRequest,
    clock: WaitClock,
    waitStarted: number,
    firstSlot: boolean | Promise<boolean> | undefined,
  ): Promise<AdmissionResult> {
    let polls = 0;
    let slot = firstSlot;
    for (;;) {
      const acquired = slot ?? this.slots.acquire();
      slot = undefined;
      if (!(acquired === true || (acquired !== false && (await acquired)))) return { kind: 'requeue' };
      let decision: AdmitDecision;
      try {
        decision = await isolation.admit({ key: endpoint, token: request.token, leaseMs: request.leaseMs, hookRate: request.hookRate, starts: request.starts });
      } catch (error) {
        this.slots.release();
        wakeHead(q, 'timer');
        throw error;
      }
      if (decision.kind === 'go') {
        // Cascade: the limit may have grown; the next waiter asks too (it stays at the head if not).
        wakeHead(q, 'slot');
        return { kind: 'go', deadlineAtMs: clock.started(), done: q.ended };
      }
      this.slots.release();
      if (decision.kind === 'defer') q.inFlight = decision.inFlight;
      if (decision.kind === 'hold') {
        wakeHead(q, 'timer');
        return { kind: 'hold' };
      }
      const now = Date.now();
      const memoryWait = decision.reason === 'busy' || (decision.reason === 'rate' && decision.atMs - now <= RATE_MEMORY_WAIT_MS);
      const by = clock.start(now);
      if (now >= by) {
        wakeHead(q, 'timer');
        return { kind: 'expired', reason: decision.reason, deadlineAtMs: by };
      }
      if (!memoryWait || !this.room(q) || now - waitStarted >= MAX_MEMORY_WAIT_MS) {
        wakeHead(q, 'timer');
        const atMs = decision.reason === 'busy' ? this.deferAt(q, request.starts, decision.atMs) : decision.atMs;
        return { kind: 'defer', atMs: Math.min(atMs, by), reason: decision.reason, deadlineAtMs: clock.started() };
      }
      // Wait at the head: woken by a slot of this endpoint freeing here, or polls for one freed elsewhere.
      const pollAt = decision.reason === 'rate' ? decision.atMs : now + Math.min(POLL_MAX_MS, POLL_BASE_MS * 2 ** polls) * (0.5 + this.random() / 2);
      polls += 1;
      const why = await this.wait(q, Math.min(pollAt, by, waitStarted + MAX_MEMORY_WAIT_MS), true);
      if (why === 'stop') return { kind: 'requeue' };
    }
  }

  /** An admitted attempt ended: its slot frees, the endpoint's average learns its duration, the head waiter takes the slot. */
  private attemptEnded(endpoint: string, q: EndpointQueue, durationMs: number | undefined): void {
    this.slots.release();
    if (durationMs !== undefined) q.ewmaMs = q.ewmaMs === undefined ? durationMs : q.ewmaMs + EWMA_WEIGHT * (durationMs - q.ewmaMs);
    // A slot of this endpoint freed: its head waiter takes it (the release rides on its admit).
    wakeHead(q, 'slot');
    this.forget(endpoint, q);
  }

  private queueOf(endpoint: string): EndpointQueue {
    let q = this.queues.get(endpoint);
    if (!q) {
      const made: EndpointQueue = { waiters: [], inFlight: 0, ewmaMs: undefined, ended: (durationMs) => this.attemptEnded(endpoint, made, durationMs) };
      q = made;
      this.queues.set(endpoint, q);
    }
    return q;
  }

  private forget(endpoint: string, q: EndpointQueue): void {
    if (q.waiters.length === 0 && q.ewmaMs === undefined && this.queues.get(endpoint) === q) this.queues.delete(endpoint);
  }

  // An endpoint's queue: a round of its attempts, or more while its attempts are quick (a waiter
  // then starts within SHORT_WAIT_MS: a fresh, fast endpoint still growing its limit keeps its jobs).
  private room(q: EndpointQueue): boolean {
    if (this.closed || this.waitingTotal >= this.options.waitAllowance) return false;
    if (q.waiters.length < Math.max(MIN_ENDPOINT_QUEUE, q.inFlight)) return true;
    return q.ewmaMs !== undefined && (q.ewmaMs * (q.waiters.length + 1)) / Math.max(1, q.inFlight) <= SHORT_WAIT_MS;
  }

  /**
   * Waits in `q` until woken (a slot of the endpoint freed, a timer, stop); `head` re-joins at the
   * front. A woken head asks the gate and, admitted, wakes the next (`admit`): never all at once.
   */
  private wait(q: EndpointQueue, untilMs: number, head: boolean): Promise<Wake> {
    return new Promise<Wake>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        wake: (why) => {
          const at = q.waiters.indexOf(waiter);
          if (at < 0) return;
          q.waiters.splice(at, 1);
          this.waitingTotal -= 1;
          clearTimeout(timer);
          resolve(why);
        },
      };
      if (head) q.waiters.unshift(waiter);
      else q.waiters.push(waiter);
      this.waitingTotal += 1;
      timer = setTimeout(() => waiter.wake('timer'), Math.max(0, untilMs - Date.now()));
    });
  }

  /** Deferral time when the endpoint's queue is full: backoff by starts, at least its typical attempt. */
  private deferAt(q: EndpointQueue, starts: number, atLeast: number): number {
    const now = Date.now();
    const doublings = Math.min(Math.max(0, starts - 1), 6);
    const backoff = Math.min(DEFER_MAX_MS, Math.max(DEFER_BASE_MS * 2 ** doublings, q.ewmaMs ?? 0)) * (0.5 + this.random() / 2);
    return Math.max(atLeast, now + backoff);
  }

  private goWithoutGate(): AdmissionResult | Promise<AdmissionResult> {
    const slot = this.slots.acquire();
    if (slot === true) return { kind: 'go', deadlineAtMs: undefined, done: this.releaseSlot };
    if (slot === false) return { kind: 'requeue' };
    return slot.then((ok): AdmissionResult => (ok ? { kind: 'go', deadlineAtMs: undefined, done: this.releaseSlot } : { kind: 'requeue' }));
  }

  private readonly releaseSlot = (): void => this.slots.release();
}
