/**
 * One BullMQ job = one attempt of one (event, hook) delivery: build (or take) the payload,
 * deliver (QStash or fetch, fallback D7, signing Q6, SSRF Q5), record the attempt, then tell
 * BullMQ what happened. The job is acknowledged only after its outcome row is written.
 *
 * The hot path is one ledger write: a job the producer added carries its hook (templates
 * unresolved) and payload, so nothing is read back. A job without them (re-added by the
 * reconciler or a replay) or re-run after a stall reads its row first, and is not sent when the
 * row is already delivered, failed or accepted.
 *
 * - delivered / accepted by QStash → the job completes;
 * - retryable failure → row `retrying`, job moved to delayed until the next attempt (Q3);
 * - final failure → row `failed`, job fails (removed: the ledger is the record); a fallback 'none'
 *   hook raises CriticalHookDeliveryError and flags its operation (Q4) — never completed silently.
 *
 * Q3 deadline: a generation's clock starts at its first attempt or first wait behind
 * its endpoint; waiting (open breaker, busy cap, rate limit) counts against it, and a delivery
 * still waiting at its deadline is `failed` with the reason, attempted or not.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { ParsedSerializedHook } from '../contract/hook.ts';
import { endpointKey } from '../contract/endpoint.ts';
import { isEnvHookId } from '../contract/hookTypes.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import { timeoutMs } from '../contract/webhook.ts';
import { deliverNotification, type NotificationFailure, type NotificationResult } from '../delivery/deliver.ts';
import type { FetchTransport } from '../delivery/fetchTransport.ts';
import type { QStashPublisher } from '../delivery/types.ts';
import { CriticalHookDeliveryError, WebhookDeliveryError } from '../contract/errors.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import type { WebhookPayloadBuilder } from '../payload/buildPayload.ts';
import { buildDeliveryBody } from '../payload/deliveryBody.ts';
import type { Db } from '../store/db.ts';
import type { ClaimedDelivery } from '../store/deliveriesRepo.ts';
import { failWaitingDelivery, startDeliveryDeadlines, type DeadlineStart, type WaitFailureReason } from '../store/deliveriesRepo.ts';
import { createBatcher } from '../queue/batcher.ts';
import { holdDelivery } from '../store/endpointsRepo.ts';
import { deadlineBudgetMs } from '../delivery/retryPolicy.ts';
import { clearCriticalFlagIfAllDelivered, flagCriticalDeliveryFailure } from '../store/operationsRepo.ts';
import type { DeferReason } from '../isolation/endpointGate.ts';
import type { EndpointIsolation } from '../isolation/endpointIsolation.ts';
import type { Admission } from './admission.ts';
import type { OrderedTarget, OrderingGate } from './ordering.ts';
import { createHookCache, type HookCache } from './hookCache.ts';
import type { InFlightTracker } from './inFlightTracker.ts';
import type { LedgerWriter } from './ledgerWriter.ts';
import { decideOutcome } from './outcome.ts';
import type { PgGate } from './pgGate.ts';
import { qstashCallbackUrls } from './qstashCallbacksUrls.ts';
import type { DeliveryJobAttempt, DeliveryJobData } from '../queue/types.ts';
import type { Attributes } from '@opentelemetry/api';
import { activeTracer, contextFromStored, redactedUrl, ROOT_CONTEXT, SpanKind, SpanStatusCode, traceHeaders, type Span } from '../observability/tracing.ts';

/** A job found its endpoint enabled again while about to hold it: it runs again after this. */
const HOLD_RECHECK_MS = 50;
/** Q8: bytes of a successful response kept in the attempt record. */
const RESPONSE_EXCERPT_BYTES = 512;
const MS_PER_SECOND = 1000;

export type ProcessorDeps = {
  db: Db;
  ledger: LedgerWriter;
  gate: PgGate;
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
  /** The ordering gate (SEC-H7), built once by the service (its wakes need the queue). */
  ordering: OrderingGate;
};

/** One attempt's subject, from the job (hot path) or from the ledger row. */
type AttemptTarget = {
  id: string;
  operationId: string;
  hookId: string;
  /** undefined when the stored hook no longer validates (a permanent configuration failure). */
  hook: ParsedSerializedHook | undefined;
  /** Why `hook` is undefined (field paths and rules, never values). */
  hookProblem?: string;
  /** undefined when the row's payload is gone (pruned by retention). */
  body: string | undefined;
  emailUserId: string | undefined;
  attemptCount: number;
  generationAttemptCount: number;
  generation: number;
  /** The enqueueing (or replaying) span's W3C trace context, stored with the delivery. */
  trace: string | undefined;
  /** Q3: this generation's deadline (ms), once its clock started. */
  deadlineAtMs: number | undefined;
  /** Its sequence among the ordered deliveries of its operation and hook (SEC-H7); undefined when unordered. */
  sequence: number | undefined;
};

/** Q3: the reason a delivery that waited past its deadline failed with. */
const WAIT_REASONS: Record<DeferReason, WaitFailureReason> = { open: 'circuit_open', probing: 'circuit_open', busy: 'endpoint_busy', rate: 'rate_limited' };

export type DeliveryProcessor = (job: Job<DeliveryJobData>, token?: string) => Promise<void>;

export function createDeliveryProcessor(deps: ProcessorDeps): DeliveryProcessor {
  const hooks = createHookCache();
  const leaseMarginMs = deps.leaseMarginMs ?? 30_000;
  const budgetMs = deadlineBudgetMs(deps.scheduleSeconds);
  // First waits come in bursts (an endpoint's breaker opens under load): one statement for many.
  const deadlineClocks = createBatcher<DeadlineStart, Date | undefined>({
    maxBatch: 500,
    maxConcurrent: 2,
    run: (starts) => startDeliveryDeadlines(deps.db, starts),
  });
  const { admission, ordering } = deps;
  return ordering.wrap(async (job, token) => {
    const data = job.data;
    const deliveryId = data?.deliveryId ?? job.id;
    if (typeof deliveryId !== 'string') throw new UnrecoverableError('delivery job without a delivery id');
    // A stalled re-run may have delivered already (its outcome written, the ack lost): ask the ledger.
    const fromJob = data?.attempt !== undefined && typeof data.generation === 'number' && !(job.stalledCounter > 0);
    const target = fromJob ? targetFromJob(deliveryId, data.generation, data.attempt!, hooks) : await targetFromLedger(deps, deliveryId, hooks);
    // Already delivered, failed or accepted (or unknown): never sent again.
    if (!target) return;
    if (typeof data?.deadlineAt === 'number' && data.generation === target.generation) target.deadlineAtMs ??= data.deadlineAt;

    // An ordered delivery waits (parked, not an attempt) until the earlier ones of its operation and hook are settled.
    if (target.sequence !== undefined && target.hook) {
      const ordered = await ordering.admit(job, token, orderedTarget(target, target.hook, target.sequence));
      if (ordered.kind === 'expired') return failWaiting(deps, target, 'ordering_wait');
      // A wait in memory started the generation's clock: the outcome stores it.
      if (ordered.deadlineAtMs !== undefined) target.deadlineAtMs ??= ordered.deadlineAtMs;
    }

    const trackKey = `${job.id}:${job.attemptsStarted}`;
    const leaseMs = hookTimeoutMs(target.hook) + leaseMarginMs;
    const admitted = await admitAttempt({ deps, admission, deadlineClocks, budgetMs, job, token, target, trackKey, leaseMs });
    // Held, deferred, expired or given back: no attempt now.
    if (admitted === undefined) return;
    const endpoint = admitted.endpoint;

    const startedAt = new Date();
    // One CLIENT span per attempt, continuing the stored trace (none without an SDK: nothing allocated).
    const span = startDeliverSpan(target);
    deps.inFlight?.begin(trackKey, { id: target.id, generation: target.generation, attemptCount: target.attemptCount, leaseMs });
    let result: NotificationResult | undefined;
    try {
      result = await attempt(deps, target, span);
    } finally {
      deps.inFlight?.end(trackKey);
      // The worker's slot frees at once; the endpoint's with the release below (the next waiter's admit carries it).
      admitted.done(result?.durationMs);
    }
    // Freed at once (another job may take the slot), awaited once the outcome is written.
    const settled = endpoint !== undefined ? deps.isolation?.settle(endpoint, trackKey, result, hookTimeoutMs(target.hook)) : undefined;
    // The first attempt of a generation starts its clock (stored with the outcome).
    const deadlineAtMs = target.deadlineAtMs ?? startedAt.getTime() + budgetMs;
    const decision = decideOutcome({ claimed: target, result, startedAt, scheduleSeconds: deps.scheduleSeconds, nowMs: Date.now(), deadlineAtMs });
    if (span !== undefined) endDeliverSpan(span, result, decision.outcome.status);
    // Q4: flag the operation before the row says `failed`, so whoever sees the final status also
    // sees the flag (and a crash in between leaves the row retryable, never failed-but-unflagged).
    if (decision.kind === 'failed' && decision.critical) await deps.gate.run(() => flagCriticalDeliveryFailure(deps.db, target.operationId));
    await deps.gate.run(() => deps.ledger.record(decision.outcome));
    // Q4: a delivered critical row may be the last one its flagged operation was waiting for (a replay).
    if (decision.kind === 'delivered' && target.hook?.webhook.fallback === 'none') {
      await deps.gate.run(() => clearCriticalFlagIfAllDelivered(deps.db, target.operationId));
    }
    await settled;

    deps.metrics?.attemptDuration.observe({ transport: result.transport }, result.durationMs / MS_PER_SECOND);
    deps.metrics?.attempts.inc({ outcome: decision.outcome.status, transport: result.transport });
    if (decision.kind !== 'retry') deps.metrics?.finished.inc({ outcome: decision.outcome.status, transport: result.transport });

    switch (decision.kind) {
      case 'delivered':
      case 'accepted_by_qstash':
        return;
      case 'retry': {
        const log = { deliveryId, hookId: target.hookId, operationId: target.operationId, attempt: decision.outcome.attempt.attempt };
        deps.logger.info(
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
          await job.updateData({ ...data, deliveryId, generation: target.generation, deadlineAt: deadlineAtMs });
        }
        await job.moveToDelayed(Date.now() + decision.delayMs, token);
        throw new DelayedError();
      }
      case 'failed': {
        const log = { deliveryId, hookId: target.hookId, operationId: target.operationId, attempt: decision.outcome.attempt.attempt };
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
    }
  });
}

/** What the ordering gate needs of an ordered target. */
function orderedTarget(target: AttemptTarget, hook: ParsedSerializedHook, sequence: number): OrderedTarget {
  return {
    id: target.id,
    generation: target.generation,
    operationId: target.operationId,
    hookId: hook.id,
    sequence,
    onFailure: hook.webhook.onFailure ?? 'continue',
    deadlineAtMs: target.deadlineAtMs,
  };
}

type AdmitContext = {
  deps: ProcessorDeps;
  admission: Admission;
  deadlineClocks: { submit(start: DeadlineStart): Promise<Date | undefined> };
  budgetMs: number;
  job: Job<DeliveryJobData>;
  token: string | undefined;
  target: AttemptTarget;
  trackKey: string;
  leaseMs: number;
};

/**
 * The admission step, the one seam where a job is let through to its attempt (endpoint
 * isolation's limits, and ordered delivery's rule, SEC-H7). Returns the admitted attempt (its `done` must be
 * called when it ends) or undefined when there is no attempt now: the job was held (endpoint
 * disabled), failed at its deadline, or — by throwing DelayedError — deferred or given back.
 * A job whose endpoint is at its limit waits in memory first (admission.ts); only an open
 * breaker, a far rate limit, a full wait queue or a long wait move it to delayed (Q3: its
 * deadline persisted first, so the wait counts against it across restarts).
 */
async function admitAttempt(ctx: AdmitContext): Promise<{ endpoint: string | undefined; done(durationMs: number | undefined): void } | undefined> {
  const { deps, job, token, target } = ctx;
  const data = job.data;
  const endpoint = deps.isolation && target.hook ? endpointOf(target.hook) : undefined;
  const admission = await ctx.admission.admit({
    endpoint,
    token: ctx.trackKey,
    leaseMs: ctx.leaseMs,
    hookRate: target.hook?.webhook.rateLimit,
    starts: job.attemptsStarted,
    deadlineAtMs: target.deadlineAtMs,
    budgetMs: ctx.budgetMs,
  });
  switch (admission.kind) {
    case 'go':
      // A wait here started the generation's clock: the outcome stores it.
      if (admission.deadlineAtMs !== undefined) target.deadlineAtMs ??= admission.deadlineAtMs;
      return { endpoint, done: admission.done };
    case 'requeue':
      // The worker is stopping: the job goes back to the queue untouched (no attempt, no wait counted beyond its clock).
      if (!token) throw new Error('delivery job has no lock token; cannot give it back');
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    case 'hold': {
      if (endpoint === undefined || !deps.isolation) return undefined;
      // Held keeps its deadline (the reconciler fails it there) unless an operator disabled with --hold.
      const deadline = new Date(target.deadlineAtMs ?? Date.now() + ctx.budgetMs);
      const { result: held, kept } = await deps.gate.run(() => holdDelivery(deps.db, target.id, target.generation, endpoint, deadline));
      if (held === 'held') {
        deps.metrics?.endpointHeld.inc();
        deps.logger.warn(
          { deliveryId: target.id, hookId: target.hookId, endpoint, ...(kept ? {} : { deadlineAt: deadline.toISOString() }) },
          kept
            ? 'endpoint disabled with --hold; delivery held until an operator acts (`hookrelay endpoints enable --replay`)'
            : 'endpoint disabled; delivery held until its deadline, then failed (replay it after `hookrelay endpoints enable`)',
        );
      }
      if (held !== 'enabled') return undefined;
      // Enabled since this worker last looked: pick up the new policy and run the job again shortly.
      await deps.isolation.refresh();
      if (!token) throw new Error('delivery job has no lock token; cannot defer it');
      await job.moveToDelayed(Date.now() + HOLD_RECHECK_MS, token);
      throw new DelayedError();
    }
    case 'expired':
      await failWaiting(deps, target, WAIT_REASONS[admission.reason]);
      return undefined;
    case 'defer': {
      if (!token) throw new Error('delivery job has no lock token; cannot defer it');
      const now = Date.now();
      let deadline = target.deadlineAtMs;
      if (deadline === undefined) {
        // First wait of this generation (begun in memory, or now): its clock is kept in the ledger (worker restarts, Redis loss) and the job.
        const stored = await deps.gate.run(() =>
          ctx.deadlineClocks.submit({ id: target.id, generation: target.generation, deadlineAt: new Date(admission.deadlineAtMs ?? now + ctx.budgetMs) }),
        );
        if (stored === undefined) return undefined; // no longer waiting (finished or replayed meanwhile)
        deadline = stored.getTime();
        await job.updateData({ ...data, deliveryId: target.id, generation: target.generation, deadlineAt: deadline });
      }
      if (now >= deadline) {
        await failWaiting(deps, target, WAIT_REASONS[admission.reason]);
        return undefined;
      }
      // Never sleep past the deadline: the job wakes there to fail if its endpoint still says wait.
      await job.moveToDelayed(Math.round(Math.min(admission.atMs, deadline)), token);
      throw new DelayedError();
    }
  }
}

/** A parsed hook's endpoint key, once per parsed object (the hook cache shares them across jobs). */
const endpointKeys = new WeakMap<ParsedSerializedHook, string>();
function endpointOf(hook: ParsedSerializedHook): string {
  let key = endpointKeys.get(hook);
  if (key === undefined) {
    key = endpointKey(hook.webhook);
    endpointKeys.set(hook, key);
  }
  return key;
}

function hookTimeoutMs(hook: ParsedSerializedHook | undefined): number {
  return hook ? timeoutMs(hook.webhook) : 0;
}

function targetFromJob(id: string, generation: number, data: DeliveryJobAttempt, hooks: HookCache): AttemptTarget {
  const hook = hooks.parse(data.hook);
  return {
    id,
    operationId: data.operationId,
    hookId: hook?.id ?? '(invalid)',
    hook,
    ...(hook === undefined ? { hookProblem: hooks.problem(data.hook) } : {}),
    body: data.body,
    emailUserId: data.emailUserId,
    attemptCount: data.attemptCount,
    generationAttemptCount: data.generationAttemptCount,
    generation,
    trace: data.trace,
    deadlineAtMs: undefined,
    sequence: data.sequence,
  };
}

async function targetFromLedger(deps: ProcessorDeps, id: string, hooks: HookCache): Promise<AttemptTarget | undefined> {
  const row = await deps.gate.run(() => deps.ledger.load(id));
  if (!row) return undefined;
  return targetFromRow(row, hooks);
}

function targetFromRow(row: ClaimedDelivery, hooks: HookCache): AttemptTarget {
  const hook = hooks.parseValue(row.hook);
  const event = row.payload !== null && typeof row.payload === 'object' && !Array.isArray(row.payload) ? (row.payload as Record<string, unknown>) : undefined;
  const built = hook && event ? buildDeliveryBody({ hook, event, deliveryId: row.id, occurredAt: row.occurredAt, sequence: row.sequence }) : undefined;
  return {
    id: row.id,
    operationId: row.operationId,
    hookId: row.hookId,
    hook,
    ...(hook === undefined ? { hookProblem: hooks.problem(row.hook) } : {}),
    body: built?.body,
    emailUserId: built?.emailUserId,
    attemptCount: row.attemptCount,
    generationAttemptCount: row.generationAttemptCount,
    generation: row.generation,
    trace: row.traceContext ?? undefined,
    deadlineAtMs: row.deadlineAt?.getTime(),
    sequence: row.sequence ?? undefined,
  };
}

/**
 * Q3/Q4: the deadline passed while the endpoint kept the delivery waiting (no attempt now). The
 * row is `failed` with the reason; a `fallback: 'none'` one is a critical failure: its operation
 * flagged, counted, logged at error level and raised (the job fails, never completes silently).
 */
async function failWaiting(deps: ProcessorDeps, target: AttemptTarget, reason: WaitFailureReason): Promise<never | undefined> {
  const critical = target.hook?.webhook.fallback === 'none';
  const failed = await deps.gate.run(() => failWaitingDelivery(deps.db, { id: target.id, generation: target.generation, reason, critical }));
  // Already finished or replayed by someone else: nothing of ours to report.
  if (!failed) return undefined;
  const transport = target.hook?.webhook.delivery ?? 'fetch';
  deps.metrics?.finished.inc({ outcome: 'failed', transport });
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

/** One delivery attempt; never throws (every problem is a typed failure). */
async function attempt(deps: ProcessorDeps, target: AttemptTarget, span: Span | undefined): Promise<NotificationResult> {
  const hook = target.hook;
  if (!hook) return configurationFailure(target.hookProblem ?? 'stored hook no longer validates', false);
  // Environment hooks are the operator's own targets (Q5): not subject to the SSRF guard, and the
  // only hooks that may read AGENT_HOOK_WEBHOOK_* (W2) — but only while the URL is still the one
  // this worker's environment names, so a stored row carrying a reserved id buys neither.
  const environmentHook = isEnvHookId(hook.id) && hook.webhook.url === deps.env.AGENT_HOOK_WEBHOOK_URL?.trim();
  const critical = hook.webhook.fallback === 'none';
  if (target.body === undefined) return configurationFailure('event payload missing (pruned by retention?)', critical);
  try {
    const payload = await deps.payloadBuilder.withEmail({
      hook,
      body: target.body,
      emailUserId: target.emailUserId,
      ...(deps.signal ? { signal: deps.signal } : {}),
    });
    if (payload === undefined) {
      return { ok: false, errorClass: 'cancelled', permanent: false, critical, transport: hook.webhook.delivery, fellBack: false, durationMs: 0 };
    }
    return await deliverNotification({
      webhook: hook.webhook,
      hookId: hook.id,
      payload,
      deliveryId: target.id,
      generation: target.generation,
      env: deps.env,
      ...(deps.templateEnv ? { templateEnv: deps.templateEnv } : {}),
      environmentHook,
      ...(deps.appUrl !== undefined ? { appUrl: deps.appUrl } : {}),
      trusted: environmentHook,
      signingSecrets: deps.signingSecrets,
      ...(deps.qstash ? { qstash: withCallbacks(deps.qstash, deps.publicUrl, target) } : {}),
      ...(deps.qstashRetries !== undefined ? { qstashRetries: deps.qstashRetries } : {}),
      fetchTransport: deps.fetchTransport,
      logger: deps.logger,
      excerptBytes: RESPONSE_EXCERPT_BYTES,
      ...(span ? { traceHeaders: traceHeaders(span) } : {}),
      ...(target.sequence !== undefined ? { sequence: target.sequence } : {}),
    });
  } catch (error) {
    // A bug, not a delivery outcome: retried per schedule like a network failure, logged by name only.
    deps.logger.error({ deliveryId: target.id, err: error }, 'unexpected error during a delivery attempt');
    return {
      ok: false,
      errorClass: 'network_error',
      permanent: false,
      critical,
      transport: hook.webhook.delivery,
      fellBack: false,
      local: true,
      durationMs: 0,
    };
  }
}

/** `hookrelay.deliver`: ids, attempt and target only — never the payload, a header value or the URL's query. */
function startDeliverSpan(target: AttemptTarget): Span | undefined {
  const tracer = activeTracer();
  if (tracer === undefined) return undefined;
  const webhook = target.hook?.webhook;
  const url = webhook ? redactedUrl(webhook.url) : '';
  const attributes: Attributes = {
    'hookrelay.delivery_id': target.id,
    'hookrelay.operation_id': target.operationId,
    'hookrelay.hook_id': target.hookId,
    'hookrelay.attempt': target.attemptCount + 1,
    'hookrelay.generation': target.generation,
    'http.request.method': 'POST',
  };
  if (url) {
    const u = new URL(url);
    attributes['url.full'] = url;
    attributes['server.address'] = u.hostname;
    attributes['server.port'] = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  }
  const parent = contextFromStored(target.trace) ?? ROOT_CONTEXT;
  return tracer.startSpan('hookrelay.deliver', { kind: SpanKind.CLIENT, attributes }, parent);
}

function endDeliverSpan(span: Span, result: NotificationResult, outcome: string): void {
  span.setAttribute('hookrelay.transport', result.transport);
  span.setAttribute('hookrelay.outcome', outcome);
  if (result.httpStatus !== undefined) span.setAttribute('http.response.status_code', result.httpStatus);
  if (!result.ok) {
    span.setAttribute('error.type', result.httpStatus !== undefined && result.errorClass === 'http_error' ? String(result.httpStatus) : result.errorClass);
    span.setStatus({ code: SpanStatusCode.ERROR, message: result.errorClass });
  }
  span.end();
}

function configurationFailure(detail: string, critical: boolean): NotificationFailure {
  return { ok: false, errorClass: 'configuration', permanent: true, critical, transport: 'fetch', fellBack: false, detail, durationMs: 0 };
}

/** Q7: with HOOKRELAY_PUBLIC_URL, QStash reports the final outcome back to this worker. */
function withCallbacks(qstash: QStashPublisher, publicUrl: string | undefined, target: AttemptTarget): QStashPublisher {
  if (!publicUrl) return qstash;
  const urls = qstashCallbackUrls(publicUrl, target.id, target.generation);
  return { publish: (req) => qstash.publish({ ...req, callbackUrl: urls.callback, failureCallbackUrl: urls.failure }) };
}
