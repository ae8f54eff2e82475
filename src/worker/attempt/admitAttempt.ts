/**
 * Step 3 of a delivery (processor.ts), `admitAttempt`: the one seam where a job is let through
 * to its attempt (endpoint isolation's limits). A job whose endpoint is at its limit waits in
 * memory first (admission.ts); only an open breaker, a far rate limit, a full wait queue or a
 * long wait move it to delayed (Q3: its deadline persisted first, so the wait counts against it
 * across restarts). A disabled endpoint holds the delivery in the ledger.
 */
import { DelayedError, type Job } from 'bullmq';
import type { DeferReason } from '../../isolation/endpointGate.ts';
import type { EndpointIsolation } from '../../isolation/endpointIsolation.ts';
import type { Logger } from '../../observability/logger.ts';
import type { DeliveryMetrics } from '../../observability/metrics.ts';
import type { DeliveryJobData } from '../../queue/types.ts';
import type { Db } from '../../store/db.ts';
import type { DeadlineStart, WaitFailureReason } from '../../store/deliveriesRepo.ts';
import { holdDelivery } from '../../store/endpointsRepo.ts';
import { splitScopedKey } from '../../contract/endpoint.ts';
import type { Admission } from './admission.ts';
import { type AttemptTarget, stateKeyOf } from './attemptTarget.ts';
import type { PostgresWait } from '../postgresWait.ts';

/** A job found its endpoint enabled again while about to hold it: it runs again after this. */
const HOLD_RECHECK_MS = 50;

/** Q3: the reason a delivery that waited past its deadline failed with. */
const WAIT_REASONS: Record<DeferReason, WaitFailureReason> = { open: 'circuit_open', probing: 'circuit_open', busy: 'endpoint_busy', rate: 'rate_limited' };

/** What admission needs, one per worker. */
export type AdmitDeps = {
  db: Db;
  gate: PostgresWait;
  logger: Logger;
  metrics: DeliveryMetrics | undefined;
  isolation: EndpointIsolation | undefined;
  admission: Admission;
  /** First waits come in bursts (an endpoint's breaker opens under load): one statement for many. */
  deadlineClocks: { submit(start: DeadlineStart): Promise<Date | undefined> };
  budgetMs: number;
};

/** `go`: attempt now (call `done` when it ends); `expired`: fail it at its deadline; `none`: no attempt now (held, or no longer waiting). */
export type AdmitResult =
  | { kind: 'go'; endpoint: string | undefined; done(durationMs: number | undefined): void }
  | { kind: 'expired'; reason: WaitFailureReason }
  | { kind: 'none' };

const NONE: AdmitResult = Object.freeze({ kind: 'none' });

/** Deferred or given back: throws DelayedError (the job was moved to delayed). */
export async function admitAttempt(
  deps: AdmitDeps,
  job: Job<DeliveryJobData>,
  token: string | undefined,
  target: AttemptTarget,
  trackKey: string,
  leaseMs: number,
): Promise<AdmitResult> {
  const endpoint = deps.isolation && target.hook ? stateKeyOf(target, target.hook) : undefined;
  const admission = await deps.admission.admit({
    endpoint,
    token: trackKey,
    leaseMs,
    hookRate: target.hook?.webhook.rateLimit,
    starts: job.attemptsStarted,
    deadlineAtMs: target.deadlineAtMs,
    budgetMs: deps.budgetMs,
  });
  switch (admission.kind) {
    case 'go':
      // A wait here started the generation's clock: the outcome stores it.
      if (admission.deadlineAtMs !== undefined) target.deadlineAtMs ??= admission.deadlineAtMs;
      return { kind: 'go', endpoint, done: admission.done };
    case 'requeue':
      // The worker is stopping: the job goes back to the queue untouched (no attempt, no wait counted beyond its clock).
      if (!token) throw new Error('delivery job has no lock token; cannot give it back');
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    case 'hold':
      return hold(deps, job, token, target, endpoint);
    case 'expired':
      return { kind: 'expired', reason: WAIT_REASONS[admission.reason] };
    case 'defer': {
      if (!token) throw new Error('delivery job has no lock token; cannot defer it');
      const now = Date.now();
      let deadline = target.deadlineAtMs;
      if (deadline === undefined) {
        // First wait of this generation (begun in memory, or now): its clock is kept in the ledger (worker restarts, Redis loss) and the job.
        const stored = await deps.gate.run(() =>
          deps.deadlineClocks.submit({ id: target.id, generation: target.generation, deadlineAt: new Date(admission.deadlineAtMs ?? now + deps.budgetMs) }),
        );
        if (stored === undefined) return NONE; // no longer waiting (finished or replayed meanwhile)
        deadline = stored.getTime();
        await job.updateData({ ...job.data, deliveryId: target.id, generation: target.generation, deadlineAt: deadline });
      }
      if (now >= deadline) return { kind: 'expired', reason: WAIT_REASONS[admission.reason] };
      // Never sleep past the deadline: the job wakes there to fail if its endpoint still says wait.
      await job.moveToDelayed(Math.round(Math.min(admission.atMs, deadline)), token);
      throw new DelayedError();
    }
  }
}

/** A disabled endpoint: the delivery is held in the ledger, or (enabled meanwhile) runs again shortly. */
async function hold(
  deps: AdmitDeps,
  job: Job<DeliveryJobData>,
  token: string | undefined,
  target: AttemptTarget,
  endpoint: string | undefined,
): Promise<AdmitResult> {
  if (endpoint === undefined || !deps.isolation) return NONE;
  // Held keeps its deadline (the reconciler fails it there) unless an operator disabled with --hold.
  const deadline = new Date(target.deadlineAtMs ?? Date.now() + deps.budgetMs);
  const { result: held, kept } = await deps.gate.run(() => holdDelivery(deps.db, target.id, target.generation, splitScopedKey(endpoint), deadline));
  if (held === 'held') {
    deps.metrics?.endpointHeld.inc();
    deps.logger.warn(
      { deliveryId: target.id, hookId: target.hookId, endpoint, ...(kept ? {} : { deadlineAt: deadline.toISOString() }) },
      kept
        ? 'endpoint disabled with --hold; delivery held until an operator acts (`hookrelay endpoints enable --replay`)'
        : 'endpoint disabled; delivery held until its deadline, then failed (replay it after `hookrelay endpoints enable`)',
    );
  }
  if (held !== 'enabled') return NONE;
  // Enabled since this worker last looked: pick up the new policy and run the job again shortly.
  await deps.isolation.refresh();
  if (!token) throw new Error('delivery job has no lock token; cannot defer it');
  await job.moveToDelayed(Date.now() + HOLD_RECHECK_MS, token);
  throw new DelayedError();
}
