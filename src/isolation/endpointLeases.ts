/**
 * Slot leases: a worker holds a block of an endpoint's slots in the gate, so most deliveries take
 * a slot here, with no Redis call and no promise, and give it back here (docs/delivery.md, "Slot
 * leases"). Their outcomes go to the gate in blocks, run-length (a healthy endpoint's are one
 * "ok × n"), with the lease's next size; a failure goes at once and stops local admits until the
 * gate answered, so the breaker and the adaptive limit see it as they see an admit's release.
 *
 * The gate counts a lease's slots as taken whether or not an attempt uses them (the cap stays
 * honest across workers), grants none while the breaker is not closed (probes and open deferrals
 * go through the per-attempt path), and shares a short limit fairly among the workers leasing
 * the endpoint. A lease lapses `durationMs` after its last renewal: a worker that dies frees its
 * slots then.
 */
import { randomBytes } from 'node:crypto';
import type { EndpointGate, LeaseAnswer, Release, ReleaseOutcome } from './endpointGate.ts';

/** A lease asks for twice the endpoint's demand here (room to grow), at least this, at most MAX_LEASE. */
const MIN_LEASE = 4;
const MAX_LEASE = 256;
/** Outcomes, renewals and idle leases go to the gate at least this often. */
const REPORT_MS = 100;
/** After the gate said the breaker is not closed, admits take the per-attempt path for this long. */
const UNHEALTHY_MS = 1_000;
/**
 * A lease lasts one attempt lease (hook timeout + margin) plus LEASE_SLACK_MS after its last
 * renewal, and a slot is taken locally only while an attempt started now would end before the
 * lease could lapse; so a held lease is renewed every RENEW_EVERY_MS. A worker that dies (or
 * loses Redis) frees its slots no later than a per-attempt holder would, give or take the slack:
 * the next worker is not kept waiting for a lease's idle slots (FAULT-stop-redis).
 */
const LEASE_SLACK_MS = 2_000;
const RENEW_EVERY_MS = 1_000;
/**
 * An admit refused (busy) this recently means jobs of the endpoint wait in the worker: its calls
 * say it needs one slot more than it has, so the gate keeps its tenant waiting for a fair share
 * of the endpoint's ceiling across tenants (N2; the refused jobs re-ask at most 1 s apart).
 */
const REFUSED_MS = 1_500;

type Waiter = { resolve(): void; reject(error: unknown): void };

type Lease = {
  readonly key: string;
  readonly id: string;
  cap: number;
  /** N2: the endpoint's slots across tenants (0: none). */
  ceiling: number;
  /** Slots the gate counts for this lease, and how many of them may be in use. */
  held: number;
  allowed: number;
  inUse: number;
  /** The endpoint's slots taken, all workers together, at the last answer. */
  inFlight: number;
  durationMs: number;
  /** Local admits only while an attempt started now ends before this (conservative: from the call's send time). */
  expiresAt: number;
  renewAt: number;
  /** The per-attempt path until then (the breaker was not closed). */
  unhealthyUntil: number;
  /** A failure since the last answer: no local admits until the gate has it. */
  suspended: boolean;
  failures: number;
  /** Outcomes not yet reported, run-length, in order. */
  runs: [ReleaseOutcome, number][];
  /** Admits waiting for the next answer. */
  asking: number;
  /** When an admit was last refused (busy). */
  refusedAt: number;
  waiters: Waiter[];
  scheduled: boolean;
  calling: boolean;
  /** stop() sent (or tried) this lease's give-back. */
  givenBack?: boolean;
};

type LeaseDecision = { kind: 'go' } | { kind: 'busy'; inFlight: number } | { kind: 'unhealthy' };

export type EndpointLeases = {
  /** Takes a leased slot of `key` now for `token` (synchronous); false: ask `acquire`. */
  take(key: string, token: string, cap: number, ceiling: number, leaseMs: number): boolean;
  /** Whether `key`'s admits should use the lease (false while its breaker was last seen not closed, and once stopped). */
  usable(key: string): boolean;
  /** Asks the gate for more of `key`'s slots, then takes one if it can. */
  acquire(key: string, token: string, cap: number, ceiling: number, leaseMs: number): Promise<LeaseDecision>;
  /**
   * Gives back `token`'s leased slot with its outcome; undefined when the token holds no leased
   * slot. A failure resolves once the gate has it; other outcomes at once.
   */
  give(token: string, outcome: ReleaseOutcome): Promise<void> | undefined;
  /** The breaker closed (a probe's release said so): leases may be asked for again at once. */
  healthy(key: string): void;
  start(): void;
  /** Returns the leases (best effort; what is not returned lapses). */
  stop(): Promise<void>;
};

const DONE: Promise<void> = Promise.resolve();

type LeaseCallbacks = { onRelease(key: string, release: Release): void | Promise<void>; onError(key: string, error: unknown): void };

/**
 * One worker's leases and what their gate calls share. Module functions take it as their first
 * argument (plain calls: the hot path allocates no closure per admit or release).
 */
type LeaseBook = {
  readonly gate: EndpointGate;
  readonly callbacks: LeaseCallbacks;
  readonly prefix: string;
  readonly leases: Map<string, Lease>;
  // The lease each leased token's slot belongs to; a slot never given back (a bug upstream) is
  // freed after two sweeps (each at least a lease long), so it cannot hold the lease forever.
  owners: Map<string, Lease>;
  olderOwners: Map<string, Lease>;
  sweptAt: number;
  sequence: number;
  stopped: boolean;
  /** stop()'s wait for each lease's give-back. */
  readonly stopWaiters: Map<Lease, () => void>;
};

function newLease(key: string, id: string, cap: number, ceiling: number, leaseMs: number): Lease {
  return {
    key,
    id,
    cap,
    ceiling,
    held: 0,
    allowed: 0,
    inUse: 0,
    inFlight: 0,
    durationMs: leaseMs + LEASE_SLACK_MS,
    expiresAt: 0,
    renewAt: 0,
    unhealthyUntil: 0,
    suspended: false,
    failures: 0,
    runs: [],
    asking: 0,
    refusedAt: 0,
    waiters: [],
    scheduled: false,
    calling: false,
  };
}

/** `key`'s lease, made (holding nothing) when the worker has none. */
function leaseOf(book: LeaseBook, key: string, cap: number, ceiling: number, leaseMs: number): Lease {
  let lease = book.leases.get(key);
  if (!lease) {
    lease = newLease(key, `${book.prefix}:${(book.sequence++).toString(36)}`, cap, ceiling, leaseMs);
    book.leases.set(key, lease);
  }
  return lease;
}

// Kept while its admits were refused lately: a lease given up and asked for again would be a
// new leaser of the endpoint (its old id counts for LEASERS_MS), halving the worker's share.
function refusedLately(lease: Lease): boolean {
  return Date.now() - lease.refusedAt < REFUSED_MS;
}

/** Nothing held, used, unreported or asked for, and no refusal lately: the lease can be dropped. */
function droppable(lease: Lease): boolean {
  return lease.held === 0 && lease.inUse === 0 && lease.runs.length === 0 && lease.asking === 0 && !refusedLately(lease);
}

/** Whether a slot of `lease` may be taken now by an attempt of this policy and lease length. */
function free(lease: Lease, cap: number, ceiling: number, leaseMs: number, now: number): boolean {
  return lease.inUse < lease.allowed && !lease.suspended && lease.cap === cap && lease.ceiling === ceiling && now + leaseMs <= lease.expiresAt;
}

function takeSlot(book: LeaseBook, lease: Lease, token: string): void {
  lease.inUse += 1;
  book.owners.set(token, lease);
}

/** Forgets `token`'s leased slot and returns its lease; undefined when the token holds none. */
function releaseOwner(book: LeaseBook, token: string): Lease | undefined {
  const lease = book.owners.get(token);
  if (lease !== undefined) {
    book.owners.delete(token);
    return lease;
  }
  const older = book.olderOwners.get(token);
  if (older !== undefined) book.olderOwners.delete(token);
  return older;
}

/** Appends `outcome` to the lease's unreported outcomes, run-length. */
function recordOutcome(lease: Lease, outcome: ReleaseOutcome): void {
  const last = lease.runs[lease.runs.length - 1];
  if (last !== undefined && last[0] === outcome) last[1] += 1;
  else lease.runs.push([outcome, 1]);
}

/** Takes an admit's lease length and the endpoint's policy into the lease before its next call. */
function adoptPolicy(lease: Lease, cap: number, ceiling: number, leaseMs: number): void {
  lease.durationMs = Math.max(lease.durationMs, leaseMs + LEASE_SLACK_MS);
  // An attempt with a longer lease than the lease has left: renew it with this call.
  if (Date.now() + leaseMs > lease.expiresAt) lease.renewAt = 0;
  if (lease.cap !== cap || lease.ceiling !== ceiling) {
    // The endpoint's cap or ceiling changed (a policy refresh): the next call asks with the new one.
    lease.cap = cap;
    lease.ceiling = ceiling;
    lease.allowed = Math.min(lease.allowed, lease.inUse);
  }
}

/** Slots to ask for: twice the demand, within MIN_LEASE..MAX_LEASE; none (give the lease back) without demand. */
function leaseSize(demand: number): number {
  return demand === 0 ? 0 : Math.min(MAX_LEASE, Math.max(MIN_LEASE, 2 * demand));
}

function schedule(book: LeaseBook, lease: Lease): void {
  if (lease.scheduled || lease.calling) return;
  lease.scheduled = true;
  setImmediate(call, book, lease);
}

/** Waits for the next answer of `lease`'s gate call. */
function nextAnswer(book: LeaseBook, lease: Lease): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    lease.waiters.push({ resolve, reject });
    schedule(book, lease);
  });
}

/** Sends the lease's outcomes, renewal and next size to the gate, and acts on its answer. */
function call(book: LeaseBook, lease: Lease): void {
  lease.scheduled = false;
  if (lease.calling) return;
  lease.calling = true;
  // The give-back after stop() is tried once (Redis may be gone: no retry loop).
  if (book.stopped) lease.givenBack = true;
  const waiters = lease.waiters;
  lease.waiters = [];
  const runs = lease.runs;
  lease.runs = [];
  const demand = book.stopped ? 0 : lease.inUse + lease.asking;
  const want = leaseSize(demand);
  // Giving the lease back: no local admits until the answer (they ask with the next call).
  if (want === 0) lease.allowed = Math.min(lease.allowed, lease.inUse);
  // Until the answer arrives the worker may have this many in use (after a failure: none more).
  const keep = lease.suspended ? lease.inUse : Math.max(lease.inUse, lease.allowed);
  const failures = lease.failures;
  const sentAt = Date.now();
  const need = demand + (!book.stopped && refusedLately(lease) ? 1 : 0);
  const renew = lease.held > 0 && sentAt >= lease.renewAt;
  book.gate
    .exchange(lease.key, [], [], {
      id: lease.id,
      held: lease.held,
      want,
      keep,
      need,
      durationMs: lease.durationMs,
      renew,
      cap: lease.cap,
      ceiling: lease.ceiling,
      outcomes: runs,
    })
    .then(
      (answer) => answered(book, lease, answer.lease!, sentAt, failures, demand, waiters),
      (error: unknown) => callFailed(book, lease, runs, waiters, error),
    )
    .finally(() => afterCall(book, lease));
}

async function answered(
  book: LeaseBook,
  lease: Lease,
  answer: LeaseAnswer,
  sentAt: number,
  failures: number,
  demand: number,
  waiters: Waiter[],
): Promise<void> {
  applyAnswer(lease, answer, sentAt, failures);
  // Some of the admits asking now are refused (set before they see it, and before the lease may be dropped).
  if (answer.allowed < demand) lease.refusedAt = Date.now();
  for (const release of answer.releases) if (release.transition || release.autoDisable) await book.callbacks.onRelease(lease.key, release);
  for (const w of waiters) w.resolve();
}

function applyAnswer(lease: Lease, answer: LeaseAnswer, sentAt: number, failures: number): void {
  lease.held = answer.held;
  lease.allowed = answer.allowed;
  lease.inFlight = answer.inFlight;
  const expiresAt = answer.held > 0 ? sentAt + answer.remainingMs : 0;
  if (expiresAt !== lease.expiresAt) {
    lease.expiresAt = expiresAt;
    lease.renewAt = expiresAt - lease.durationMs + RENEW_EVERY_MS;
  }
  if (lease.failures === failures) lease.suspended = false;
  if (answer.state !== 'closed') lease.unhealthyUntil = Date.now() + UNHEALTHY_MS;
}

function callFailed(book: LeaseBook, lease: Lease, runs: [ReleaseOutcome, number][], waiters: Waiter[], error: unknown): void {
  // Not reported: the outcomes go with the next call (a failure keeps local admits stopped until then).
  lease.runs = runs.concat(lease.runs);
  book.callbacks.onError(lease.key, error);
  for (const w of waiters) w.reject(error);
}

/** After a call: call again, settle stop()'s wait, or drop the unused lease. */
function afterCall(book: LeaseBook, lease: Lease): void {
  lease.calling = false;
  // A call already under way when the worker stopped: give the lease back after it.
  if (book.stopped && !lease.givenBack && (lease.held > 0 || lease.runs.length > 0)) schedule(book, lease);
  else if (book.stopped) settleStop(book, lease);
  else if (lease.waiters.length > 0 || (lease.suspended && lease.runs.length > 0)) schedule(book, lease);
  else if (droppable(lease)) book.leases.delete(lease.key);
}

function settleStop(book: LeaseBook, lease: Lease): void {
  book.stopWaiters.get(lease)?.();
  book.stopWaiters.delete(lease);
}

/** Frees the slots of tokens not given back for two sweeps (each at least the longest lease). */
function sweep(book: LeaseBook, now: number): void {
  let longest = 0;
  for (const lease of book.leases.values()) longest = Math.max(longest, lease.durationMs);
  if (now - book.sweptAt < longest) return;
  book.sweptAt = now;
  for (const lease of book.olderOwners.values()) lease.inUse = Math.max(0, lease.inUse - 1);
  book.olderOwners = book.owners;
  book.owners = new Map();
}

/** Every REPORT_MS: sends outcomes, renewals and idle leases' give-backs; drops unused leases. */
function report(book: LeaseBook): void {
  const now = Date.now();
  sweep(book, now);
  for (const lease of book.leases.values()) {
    if (lease.calling || lease.scheduled) continue;
    const idle = lease.inUse === 0 && lease.asking === 0;
    if (lease.runs.length > 0 || (lease.held > 0 && (idle || now >= lease.renewAt))) schedule(book, lease);
    else if (droppable(lease)) book.leases.delete(lease.key);
  }
}

/** Gives every lease back; resolves once each was given back (or its one try failed): the caller bounds the wait. */
function giveBackAll(book: LeaseBook): Promise<void> {
  const returning: Promise<void>[] = [];
  for (const lease of book.leases.values()) {
    if (lease.held === 0 && lease.runs.length === 0 && !lease.calling) continue;
    returning.push(new Promise<void>((resolve) => book.stopWaiters.set(lease, resolve)));
    schedule(book, lease);
  }
  return Promise.all(returning).then(() => undefined);
}

export function createEndpointLeases(gate: EndpointGate, callbacks: LeaseCallbacks): EndpointLeases {
  const book: LeaseBook = {
    gate,
    callbacks,
    prefix: `L:${randomBytes(5).toString('hex')}`,
    leases: new Map(),
    owners: new Map(),
    olderOwners: new Map(),
    sweptAt: Date.now(),
    sequence: 0,
    stopped: false,
    stopWaiters: new Map(),
  };
  let timer: NodeJS.Timeout | undefined;

  return {
    take(key, token, cap, ceiling, leaseMs) {
      const lease = book.leases.get(key);
      if (lease === undefined || book.stopped || !free(lease, cap, ceiling, leaseMs, Date.now())) return false;
      takeSlot(book, lease, token);
      return true;
    },
    usable(key) {
      if (book.stopped) return false;
      const lease = book.leases.get(key);
      return lease === undefined || Date.now() >= lease.unhealthyUntil;
    },
    async acquire(key, token, cap, ceiling, leaseMs) {
      const lease = leaseOf(book, key, cap, ceiling, leaseMs);
      adoptPolicy(lease, cap, ceiling, leaseMs);
      lease.asking += 1;
      try {
        await nextAnswer(book, lease);
      } finally {
        lease.asking -= 1;
      }
      if (Date.now() < lease.unhealthyUntil) return { kind: 'unhealthy' };
      if (!free(lease, cap, ceiling, leaseMs, Date.now())) return { kind: 'busy', inFlight: lease.inFlight };
      takeSlot(book, lease, token);
      return { kind: 'go' };
    },
    give(token, outcome) {
      const lease = releaseOwner(book, token);
      if (lease === undefined) return undefined;
      lease.inUse -= 1;
      if (outcome === 'none') return DONE;
      recordOutcome(lease, outcome);
      if (outcome !== 'fail') return DONE;
      // A failure stops local admits until the gate has it (see the module comment).
      lease.suspended = true;
      lease.failures += 1;
      return nextAnswer(book, lease).catch(() => undefined);
    },
    healthy(key) {
      const lease = book.leases.get(key);
      if (lease) lease.unhealthyUntil = 0;
    },
    start() {
      timer = setInterval(report, REPORT_MS, book);
      timer.unref();
    },
    stop() {
      book.stopped = true;
      clearInterval(timer);
      return giveBackAll(book);
    },
  };
}
