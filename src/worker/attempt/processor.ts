/**
 * One BullMQ job = one attempt of one (event, hook) delivery, in six steps, each a named
 * function (the README's profile table names them):
 *
 * 1. `readTarget` (attemptTarget.ts): the attempt's subject from the job (hot path: hook and
 *    payload bytes travel in it, nothing is read back) or, for a job without them or re-run
 *    after a stall, from its ledger row — not sent when the row is delivered, failed or accepted;
 * 2. `waitForTurn`: an ordered delivery waits (parked, not an attempt) for the earlier ones of
 *    its operation and hook (SEC-H7);
 * 3. `admitAttempt` (admitAttempt.ts): the worker's slot and the endpoint's limits (held,
 *    deferred or failed at its deadline here, Q3);
 * 4. `sendAttempt` (sendAttempt.ts → deliverNotification): the request from the enqueued bytes,
 *    signed (Q6), sent by QStash or fetch (fallback D7, SSRF Q5);
 * 5. `decideOutcome` (outcome.ts, pure): delivered, retry at a time, or failed for good;
 * 6. `writeOutcome` then `finishJob`: the ledger row first (group-committed, ledgerWriter.ts),
 *    then BullMQ is told — the job is acknowledged only after its outcome row is written:
 *    - delivered / accepted by QStash → the job completes;
 *    - retryable failure → row `retrying`, job moved to delayed until the next attempt (Q3);
 *    - final failure → row `failed`, job fails (removed: the ledger is the record); a fallback
 *      'none' hook raises CriticalHookDeliveryError and flags its operation (Q4) — never
 *      completed silently.
 *
 * Q3 deadline: a generation's clock starts at its first attempt or first wait behind
 * its endpoint; waiting (open breaker, busy cap, rate limit) counts against it, and a delivery
 * still waiting at its deadline is `failed` with the reason, attempted or not.
 *
 * Everything fixed per worker (settings, the send's fixed input, metric labels) is made once
 * by `createDeliveryProcessor`; a delivery allocates its target, its outcome and little else.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { TemplateEnvPattern } from '../../contract/templateSources.ts';
import type { NotificationResult } from '../../notify/deliver.ts';
import type { FetchTransport } from '../../send/fetchTransport.ts';
import type { QStashPublisher } from '../../send/types.ts';
import { CriticalHookDeliveryError, WebhookDeliveryError } from '../../contract/errors.ts';
import type { DeliveryMetrics } from '../../observability/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import type { WebhookPayloadBuilder } from '../../notify/buildPayload.ts';
import type { Db } from '../../store/db.ts';
import { failWaitingDelivery, skipDeliveryAttempt, startDeliveryDeadlines, type DeadlineStart, type WaitFailureReason } from '../../store/deliveriesRepo.ts';
import { ENVIRONMENT_HOOK_REMOVED_REASON } from '../../contract/delivery.ts';
import { createEnvironmentTargets, type EnvironmentTarget } from './environmentTarget.ts';
import { createBatcher } from '../../queue/batcher.ts';
import { deadlineBudgetMs } from '../../notify/retryPolicy.ts';
import { clearCriticalFlagIfAllDelivered, flagCriticalDeliveryFailure } from '../../store/operationsRepo.ts';
import type { EndpointIsolation } from '../../isolation/endpointIsolation.ts';
import type { Admission } from './admission.ts';
import { type AdmitDeps, admitAttempt } from './admitAttempt.ts';
import { type AttemptTarget, hookTimeoutMs, orderedTarget, readTarget, type TargetSource } from './attemptTarget.ts';
import { endDeliverSpan, startDeliverSpan } from './deliverSpan.ts';
import { createHookCache } from './hookCache.ts';
import type { InFlightTracker } from './inFlightTracker.ts';
import type { LedgerWriter } from './ledgerWriter.ts';
import { type AttemptDecision, decideOutcome } from './outcome.ts';
import type { TurnKeeper } from './ordering.ts';
import type { PostgresWait } from '../postgresWait.ts';
import { type AttemptSender, createAttemptSender } from './sendAttempt.ts';
import type { DeliveryJobData } from '../../queue/types.ts';
import type { Span } from '../../observability/tracing.ts';

const MS_PER_SECOND = 1000;

export type ProcessorDeps = {
  db: Db;
  ledger: LedgerWriter;
  gate: PostgresWait;
  payloadBuilder: WebhookPayloadBuilder;
  fetchTransport: FetchTransport;
  qstash?: QStashPublisher;
  qstashRetries?: number;
  /** The environment header templates resolve from: this process's, at send time (W2). */
  env: Record<string, string | undefined>;
  /** HOOKRELAY_TEMPLATE_ENV of this worker, parsed (W2); default `none` (no template resolves). */
  templateEnv?: TemplateEnvPattern;
  appUrl?: string;
  signingSecrets: readonly string[];
  scheduleSeconds: readonly number[];
  /** HOOKRELAY_PUBLIC_URL: QStash callbacks come back here (Q7). */
  publicUrl?: string;
  logger: Logger;
  metrics?: DeliveryMetrics;
  /** N1: the tenants hookrelay_tenant_deliveries_total names (HOOKRELAY_METRICS_TENANTS); every other one is `other`. */
  metricsTenants?: ReadonlySet<string>;
  /** B5: aborted when the worker gives up waiting at shutdown; a payload still waiting on its email look-up is abandoned (retried later). */
  signal?: AbortSignal;
  /** Marks attempts that run long in_flight (Q12); none → rows go straight to their outcome. */
  inFlight?: InFlightTracker;
  /** Added to the webhook timeout to form the in_flight lease (the worker's lock duration). */
  leaseMarginMs?: number;
  /** Per-endpoint adaptive limit, rate limit, breaker and disable; none → every job is attempted at once. */
  isolation?: EndpointIsolation;
  /** The worker's slots and the in-memory endpoint waits (admission.ts), built once by the service. */
  admission: Admission;
  /** The turn keeper (SEC-H7), built once by the service (its wakes need the queue). */
  ordering: TurnKeeper;
};

export type DeliveryProcessor = (job: Job<DeliveryJobData>, token?: string) => Promise<void>;

export function createDeliveryProcessor(deps: ProcessorDeps): DeliveryProcessor {
  const pipeline = new DeliveryPipeline(deps);
  return deps.ordering.wrap((job, token) => pipeline.run(job, token));
}

/** An admitted attempt: its endpoint (isolation) and what frees its slots. */
type Admitted = { endpoint: string | undefined; done(durationMs: number | undefined): void };

/** The steps of one delivery; one instance per worker. */
class DeliveryPipeline {
  readonly #deps: ProcessorDeps;
  readonly #source: TargetSource;
  readonly #admit: AdmitDeps;
  readonly #send: AttemptSender;
  readonly #leaseMarginMs: number;
  readonly #budgetMs: number;
  readonly #labels = new MetricLabels();
  readonly #environmentTargets: (hookId: string) => EnvironmentTarget;

  constructor(deps: ProcessorDeps) {
    this.#deps = deps;
    this.#source = { ledger: deps.ledger, gate: deps.gate, hooks: createHookCache() };
    this.#leaseMarginMs = deps.leaseMarginMs ?? 30_000;
    this.#budgetMs = deadlineBudgetMs(deps.scheduleSeconds);
    this.#admit = {
      db: deps.db,
      gate: deps.gate,
      logger: deps.logger,
      metrics: deps.metrics,
      isolation: deps.isolation,
      admission: deps.admission,
      // First waits come in bursts (an endpoint's breaker opens under load): one statement for many.
      deadlineClocks: createBatcher<DeadlineStart, Date | undefined>({
        maxBatch: 500,
        maxConcurrent: 2,
        run: (starts) => startDeliveryDeadlines(deps.db, starts),
      }),
      budgetMs: this.#budgetMs,
    };
    this.#send = createAttemptSender(deps);
    this.#environmentTargets = createEnvironmentTargets(deps.env);
  }

  async run(job: Job<DeliveryJobData>, token: string | undefined): Promise<void> {
    const target = await readTarget(this.#source, job);
    // Already delivered, failed or accepted (or unknown): never sent again.
    if (!target) return;
    if (target.sequence !== undefined && target.hook && !(await this.waitForTurn(job, token, target, target.sequence))) return;
    // F4/L1: an environment hook goes where this worker's environment says now (after the ordering
    // gate, so a skip settles its turn and wakes the next one).
    if (!this.useCurrentEnvironment(target)) return this.skipRemovedEnvironmentHook(target);

    const trackKey = `${job.id}:${job.attemptsStarted}`;
    const leaseMs = hookTimeoutMs(target.hook) + this.#leaseMarginMs;
    const admitted = await admitAttempt(this.#admit, job, token, target, trackKey, leaseMs);
    if (admitted.kind === 'expired') return this.failWaiting(target, admitted.reason);
    // Held, or no longer waiting (deferred and given back throw DelayedError): no attempt now.
    if (admitted.kind !== 'go') return;

    const startedAt = new Date();
    const result = await this.sendAttempt(target, trackKey, leaseMs, admitted);
    const deps = this.#deps;
    // Freed at once (another job may take the slot), awaited once the outcome is written.
    const settled =
      admitted.endpoint !== undefined ? deps.isolation?.settle(admitted.endpoint, trackKey, result.result, hookTimeoutMs(target.hook)) : undefined;
    // The first attempt of a generation starts its clock (stored with the outcome).
    const deadlineAtMs = target.deadlineAtMs ?? startedAt.getTime() + this.#budgetMs;
    const decision = decideOutcome({
      claimed: target,
      result: result.result,
      startedAt,
      scheduleSeconds: deps.scheduleSeconds,
      nowMs: Date.now(),
      deadlineAtMs,
    });
    if (result.span !== undefined) endDeliverSpan(result.span, result.result, decision.outcome.status);
    await this.writeOutcome(target, decision, settled);
    return this.finishJob(job, token, target, decision, result.result, deadlineAtMs);
  }

  /**
   * F4: an environment hook's target from this worker's current environment, by hook id (its
   * stored URL is never used); false when that hook is gone. An invalid configuration leaves no
   * hook: the attempt fails with `configuration`, naming the variables.
   */
  useCurrentEnvironment(target: AttemptTarget): boolean {
    const env = this.#environmentTargets(target.hookId);
    if (env.kind === 'removed') return false;
    if (env.kind === 'current') target.hook = env.hook;
    else if (env.kind === 'invalid') {
      target.hook = undefined;
      target.hookProblem = env.problem;
    }
    return true;
  }

  /** F4: the worker's environment no longer has this environment hook: `skipped`, nothing sent. */
  async skipRemovedEnvironmentHook(target: AttemptTarget): Promise<void> {
    const deps = this.#deps;
    const skipped = await deps.gate.run(() =>
      skipDeliveryAttempt(deps.db, { id: target.id, generation: target.generation, reason: ENVIRONMENT_HOOK_REMOVED_REASON }),
    );
    if (!skipped) return; // finished or replayed by someone else meanwhile
    deps.metrics?.finished.inc({ outcome: 'skipped', transport: 'fetch' });
    deps.logger.info(
      { deliveryId: target.id, hookId: target.hookId, operationId: target.operationId, reason: ENVIRONMENT_HOOK_REMOVED_REASON },
      "environment hook delivery skipped: this worker's environment no longer has the hook (AGENT_HOOK_WEBHOOK_URL / AGENT_HOOK_WEBHOOK_EVENTS)",
    );
  }

  /** Step 2 (SEC-H7): false when the delivery is not attempted now (parked, or failed at its deadline). */
  async waitForTurn(job: Job<DeliveryJobData>, token: string | undefined, target: AttemptTarget, sequence: number): Promise<boolean> {
    const hook = target.hook;
    if (hook === undefined) return true;
    const ordered = await this.#deps.ordering.admit(job, token, orderedTarget(target, hook, sequence));
    if (ordered.kind === 'expired') {
      await this.failWaiting(target, 'ordering_wait');
      return false;
    }
    // A wait in memory started the generation's clock: the outcome stores it.
    if (ordered.deadlineAtMs !== undefined) target.deadlineAtMs ??= ordered.deadlineAtMs;
    return true;
  }

  /** Step 4: the attempt itself, tracked in_flight while it runs (Q12); the slots free when it ends. */
  async sendAttempt(
    target: AttemptTarget,
    trackKey: string,
    leaseMs: number,
    admitted: Admitted,
  ): Promise<{ result: NotificationResult; span: Span | undefined }> {
    const inFlight = this.#deps.inFlight;
    // One CLIENT span per attempt, continuing the stored trace (none without an SDK: nothing allocated).
    const span = startDeliverSpan(target);
    inFlight?.begin(trackKey, { id: target.id, generation: target.generation, attemptCount: target.attemptCount, leaseMs });
    let result: NotificationResult | undefined;
    try {
      result = await this.#send(target, span);
    } finally {
      inFlight?.end(trackKey);
      // The worker's slot frees at once; the endpoint's with the release below (the next waiter's admit carries it).
      admitted.done(result?.durationMs);
    }
    return { result, span };
  }

  /** Step 6a: the ledger first (Q4's flag before the row says `failed`); the endpoint's settle awaited after. */
  async writeOutcome(target: AttemptTarget, decision: AttemptDecision, settled: Promise<void> | undefined): Promise<void> {
    const deps = this.#deps;
    // Q4: flag the operation before the row says `failed`, so whoever sees the final status also
    // sees the flag (and a crash in between leaves the row retryable, never failed-but-unflagged).
    if (decision.kind === 'failed' && decision.critical) await deps.gate.run(() => flagCriticalDeliveryFailure(deps.db, target.operationId));
    await deps.gate.run(() => deps.ledger.record(decision.outcome));
    // Q4: a delivered critical row may be the last one its flagged operation was waiting for (a replay).
    if (decision.kind === 'delivered' && target.hook?.webhook.fallback === 'none') {
      await deps.gate.run(() => clearCriticalFlagIfAllDelivered(deps.db, target.operationId));
    }
    await settled;
  }

  /** Step 6b: what BullMQ is told (the row is written): complete, delay until the retry, or fail. */
  async finishJob(
    job: Job<DeliveryJobData>,
    token: string | undefined,
    target: AttemptTarget,
    decision: AttemptDecision,
    result: NotificationResult,
    deadlineAtMs: number,
  ): Promise<void> {
    const metrics = this.#deps.metrics;
    if (metrics !== undefined) {
      const status = decision.outcome.status;
      metrics.attemptDuration.observe(this.#labels.transport(result.transport), result.durationMs / MS_PER_SECOND);
      metrics.attempts.inc(this.#labels.outcome(status, result.transport));
      if (decision.kind !== 'retry') {
        metrics.finished.inc(this.#labels.outcome(status, result.transport));
        metrics.tenantFinished.inc({ tenant: this.#deps.metricsTenants?.has(target.tenant) === true ? target.tenant : 'other', outcome: status });
      }
    }
    switch (decision.kind) {
      case 'delivered':
      case 'accepted_by_qstash':
        return;
      case 'retry':
        return this.retryLater(job, token, target, decision, deadlineAtMs);
      case 'failed':
        return this.failForGood(target, decision, result);
    }
  }

  async retryLater(
    job: Job<DeliveryJobData>,
    token: string | undefined,
    target: AttemptTarget,
    decision: Extract<AttemptDecision, { kind: 'retry' }>,
    deadlineAtMs: number,
  ): Promise<never> {
    const data = job.data;
    const log = { deliveryId: target.id, hookId: target.hookId, operationId: target.operationId, attempt: decision.outcome.attempt.attempt };
    this.#deps.logger.info(
      { ...log, errorClass: decision.outcome.lastErrorClass, httpStatus: decision.outcome.lastHttpStatus, delayMs: decision.delayMs },
      'delivery attempt failed; retrying',
    );
    if (!token) throw new Error('delivery job has no lock token; cannot delay it');
    // The next run counts this attempt. If either write is lost, the row already says
    // `retrying` at next_attempt_at and the reconciler or the stalled re-run reads it.
    if (data?.attempt) {
      await job.updateData({
        ...data,
        attempt: { ...data.attempt, attemptCount: target.attemptCount + 1, generationAttemptCount: target.generationAttemptCount + 1 },
        deadlineAt: deadlineAtMs,
      });
    } else if (data?.deadlineAt !== deadlineAtMs) {
      await job.updateData({ ...data, deliveryId: target.id, generation: target.generation, deadlineAt: deadlineAtMs });
    }
    await job.moveToDelayed(Date.now() + decision.delayMs, token);
    throw new DelayedError();
  }

  failForGood(target: AttemptTarget, decision: Extract<AttemptDecision, { kind: 'failed' }>, result: NotificationResult): never {
    const deps = this.#deps;
    const log = { deliveryId: target.id, hookId: target.hookId, operationId: target.operationId, attempt: decision.outcome.attempt.attempt };
    if (!decision.critical) {
      deps.logger.warn(
        // `detail` names a rule, field or variable, never a value or remote text.
        { ...log, errorClass: decision.errorClass, httpStatus: decision.httpStatus, ...(result.ok ? {} : { detail: result.detail }) },
        'delivery failed for good; replayable from the ledger',
      );
      throw new UnrecoverableError(`delivery failed: ${decision.errorClass}`);
    }
    deps.metrics?.criticalFailures.inc();
    const error = new CriticalHookDeliveryError([{ hookId: target.hookId, cause: new WebhookDeliveryError(decision.errorClass, decision.httpStatus) }]);
    deps.logger.error(
      { ...log, errorClass: decision.errorClass, httpStatus: decision.httpStatus, ...(result.ok ? {} : { detail: result.detail }), err: error },
      'critical webhook delivery failed for good; operation flagged',
    );
    throw error;
  }

  /**
   * Q3/Q4: the deadline passed while the endpoint (or the ordering) kept the delivery waiting (no
   * attempt now). The row is `failed` with the reason; a `fallback: 'none'` one is a critical
   * failure: its operation flagged, counted, logged at error level and raised (the job fails,
   * never completes silently).
   */
  async failWaiting(target: AttemptTarget, reason: WaitFailureReason): Promise<undefined> {
    const deps = this.#deps;
    const critical = target.hook?.webhook.fallback === 'none';
    const failed = await deps.gate.run(() => failWaitingDelivery(deps.db, { id: target.id, generation: target.generation, reason, critical }));
    // Already finished or replayed by someone else: nothing of ours to report.
    if (!failed) return undefined;
    const transport = target.hook?.webhook.delivery ?? 'fetch';
    deps.metrics?.finished.inc({ outcome: 'failed', transport });
    deps.metrics?.tenantFinished.inc({ tenant: deps.metricsTenants?.has(target.tenant) === true ? target.tenant : 'other', outcome: 'failed' });
    const log = { deliveryId: target.id, hookId: target.hookId, operationId: target.operationId, reason, attempts: target.generationAttemptCount };
    if (!critical) {
      deps.logger.warn(log, 'delivery failed: its deadline passed while its endpoint kept it waiting; replayable from the ledger');
      throw new UnrecoverableError(`delivery failed: ${reason}`);
    }
    deps.metrics?.criticalFailures.inc();
    const error = new CriticalHookDeliveryError([{ hookId: target.hookId, cause: new WebhookDeliveryError(reason) }]);
    deps.logger.error({ ...log, errorClass: reason, err: error }, 'critical webhook delivery failed at its deadline; operation flagged');
    throw error;
  }
}

type TransportLabel = { transport: NotificationResult['transport'] };
type OutcomeLabel = { outcome: AttemptDecision['outcome']['status']; transport: NotificationResult['transport'] };

/** The metric label objects, made once per (outcome, transport) instead of once per delivery. */
class MetricLabels {
  readonly #transports = new Map<string, TransportLabel>();
  readonly #outcomes = new Map<string, Map<string, OutcomeLabel>>();

  transport(transport: TransportLabel['transport']): TransportLabel {
    let label = this.#transports.get(transport);
    if (label === undefined) {
      label = Object.freeze({ transport });
      this.#transports.set(transport, label);
    }
    return label;
  }

  outcome(outcome: OutcomeLabel['outcome'], transport: OutcomeLabel['transport']): OutcomeLabel {
    let byTransport = this.#outcomes.get(outcome);
    if (byTransport === undefined) {
      byTransport = new Map();
      this.#outcomes.set(outcome, byTransport);
    }
    let label = byTransport.get(transport);
    if (label === undefined) {
      label = Object.freeze({ outcome, transport });
      byTransport.set(transport, label);
    }
    return label;
  }
}
