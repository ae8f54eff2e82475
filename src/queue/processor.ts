/**
 * One BullMQ job = one attempt of one (event, hook) delivery: claim the ledger row, build the
 * payload, deliver (QStash or fetch, fallback D7, signing Q6, SSRF Q5), record the attempt, then
 * tell BullMQ what happened. The job is acknowledged only after its outcome row is written.
 *
 * - delivered / accepted by QStash → the job completes;
 * - retryable failure → row `retrying`, job moved to delayed until the next attempt (Q3);
 * - final failure → row `failed`, job fails (removed: the ledger is the record); a fallback 'none'
 *   hook raises CriticalHookDeliveryError and flags its operation (Q4) — never completed silently.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { ParsedSerializedHook } from '../contract/hook.ts';
import { ENV_HOOK_ID_PREFIX } from '../contract/hookTypes.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import { parseSerializedHook } from '../contract/validate.ts';
import { deliverNotification, type NotificationFailure, type NotificationResult } from '../delivery/deliver.ts';
import type { FetchTransport } from '../delivery/fetchTransport.ts';
import type { QStashPublisher } from '../delivery/types.ts';
import { CriticalHookDeliveryError, WebhookDeliveryFailure } from '../dispatch/criticalError.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import type { WebhookPayloadBuilder } from '../payload/buildPayload.ts';
import type { Db } from '../store/db.ts';
import type { ClaimedDelivery } from '../store/deliveriesRepo.ts';
import { flagCriticalDeliveryFailure } from '../store/operationsRepo.ts';
import type { LedgerWriter } from './ledgerWriter.ts';
import { decideOutcome } from './outcome.ts';
import type { PgGate } from './pgGate.ts';
import { qstashCallbackUrls } from './qstashCallbackUrls.ts';
import type { DeliveryJobData } from './types.ts';

/** Q8: bytes of a successful response kept in the attempt record. */
export const RESPONSE_EXCERPT_BYTES = 512;
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
  /** HOOKRELAY_TEMPLATE_ENV of this worker, parsed (W2); default `*` (every name but hookrelay's own). */
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
};

export type DeliveryProcessor = (job: Job<DeliveryJobData>, token?: string) => Promise<void>;

export function createDeliveryProcessor(deps: ProcessorDeps): DeliveryProcessor {
  return async (job, token) => {
    const deliveryId = job.data?.deliveryId ?? job.id;
    if (typeof deliveryId !== 'string') throw new UnrecoverableError('delivery job without a delivery id');
    const claimed = await deps.gate.run(() => deps.ledger.claim(deliveryId));
    // Already delivered, failed or accepted (or unknown): never sent again.
    if (!claimed) return;

    const startedAt = new Date();
    const result = await attempt(deps, claimed);
    const decision = decideOutcome({ claimed, result, startedAt, scheduleSeconds: deps.scheduleSeconds, nowMs: Date.now() });
    // Q4: flag the operation before the row says `failed`, so whoever sees the final status also
    // sees the flag (and a crash in between leaves the row retryable, never failed-but-unflagged).
    if (decision.kind === 'failed' && decision.critical) await deps.gate.run(() => flagCriticalDeliveryFailure(deps.db, claimed.operationId));
    await deps.gate.run(() => deps.ledger.record(decision.outcome));

    deps.metrics?.attemptDuration.observe({ transport: result.transport }, result.durationMs / MS_PER_SECOND);
    deps.metrics?.deliveries.inc({ outcome: decision.outcome.status, transport: result.transport });
    const log = { deliveryId, hookId: claimed.hookId, operationId: claimed.operationId, attempt: decision.outcome.attempt.attempt };

    switch (decision.kind) {
      case 'delivered':
      case 'accepted_by_qstash':
        return;
      case 'retry': {
        deps.logger.info({ ...log, errorClass: decision.outcome.lastErrorClass, httpStatus: decision.outcome.lastHttpStatus, delayMs: decision.delayMs }, 'delivery attempt failed; retrying');
        if (!token) throw new Error('delivery job has no lock token; cannot delay it');
        // The row already says `retrying` at next_attempt_at: if this move is lost, the reconciler re-adds the job.
        await job.moveToDelayed(Date.now() + decision.delayMs, token);
        throw new DelayedError();
      }
      case 'failed': {
        if (!decision.critical) {
          deps.logger.warn({ ...log, errorClass: decision.errorClass, httpStatus: decision.httpStatus }, 'delivery failed for good; replayable from the ledger');
          throw new UnrecoverableError(`delivery failed: ${decision.errorClass}`);
        }
        deps.metrics?.criticalFailures.inc();
        const error = new CriticalHookDeliveryError([{ hookId: claimed.hookId, cause: new WebhookDeliveryFailure(decision.errorClass, decision.httpStatus) }]);
        deps.logger.error({ ...log, errorClass: decision.errorClass, httpStatus: decision.httpStatus, err: error.message }, 'critical webhook delivery failed for good; operation flagged');
        throw error;
      }
    }
  };
}

/** One delivery attempt; never throws (every problem is a typed failure). */
async function attempt(deps: ProcessorDeps, claimed: ClaimedDelivery): Promise<NotificationResult> {
  let hook: ParsedSerializedHook;
  try {
    hook = parseSerializedHook(claimed.hook, undefined, { allowEnvironmentIds: true });
  } catch {
    return configurationFailure('stored hook no longer validates', false);
  }
  // Environment hooks are the operator's own targets (Q5): not subject to the SSRF guard, and the
  // only hooks that may read AGENT_HOOK_WEBHOOK_* (W2) — but only while the URL is still the one
  // this worker's environment names, so a stored row carrying a reserved id buys neither.
  const environmentHook = hook.id.startsWith(ENV_HOOK_ID_PREFIX) && hook.webhook.url === deps.env.AGENT_HOOK_WEBHOOK_URL?.trim();
  const critical = hook.webhook.fallback === 'none';
  if (claimed.payload === null || typeof claimed.payload !== 'object' || Array.isArray(claimed.payload)) {
    return configurationFailure('event payload missing (pruned by retention?)', critical);
  }
  try {
    const payload = await deps.payloadBuilder.build({
      hook: { id: hook.id, type: hook.type, webhook: hook.webhook },
      event: claimed.payload as Record<string, unknown>,
      extra: { deliveryId: claimed.id, occurredAt: claimed.occurredAt.toISOString() },
      ...(deps.signal ? { signal: deps.signal } : {}),
    });
    if (payload === undefined) {
      return { ok: false, errorClass: 'cancelled', permanent: false, critical, transport: hook.webhook.delivery, fellBack: false, durationMs: 0 };
    }
    return await deliverNotification({
      webhook: hook.webhook,
      hookId: hook.id,
      payload: JSON.stringify(payload),
      deliveryId: claimed.id,
      generation: claimed.generation,
      env: deps.env,
      ...(deps.templateEnv ? { templateEnv: deps.templateEnv } : {}),
      environmentHook,
      ...(deps.appUrl !== undefined ? { appUrl: deps.appUrl } : {}),
      trusted: environmentHook,
      signingSecrets: deps.signingSecrets,
      ...(deps.qstash ? { qstash: withCallbacks(deps.qstash, deps.publicUrl, claimed) } : {}),
      ...(deps.qstashRetries !== undefined ? { qstashRetries: deps.qstashRetries } : {}),
      fetchTransport: deps.fetchTransport,
      logger: deps.logger,
      excerptBytes: RESPONSE_EXCERPT_BYTES,
    });
  } catch (error) {
    // A bug, not a delivery outcome: retried per schedule like a network failure, logged by name only.
    deps.logger.error({ deliveryId: claimed.id, err: error instanceof Error ? error.name : 'unknown' }, 'unexpected error during a delivery attempt');
    return { ok: false, errorClass: 'network_error', permanent: false, critical, transport: hook.webhook.delivery, fellBack: false, durationMs: 0 };
  }
}

function configurationFailure(detail: string, critical: boolean): NotificationFailure {
  return { ok: false, errorClass: 'configuration', permanent: true, critical, transport: 'fetch', fellBack: false, detail, durationMs: 0 };
}

/** Q7: with HOOKRELAY_PUBLIC_URL, QStash reports the final outcome back to this worker. */
function withCallbacks(qstash: QStashPublisher, publicUrl: string | undefined, claimed: ClaimedDelivery): QStashPublisher {
  if (!publicUrl) return qstash;
  const urls = qstashCallbackUrls(publicUrl, claimed.id, claimed.generation);
  return { publish: (req) => qstash.publish({ ...req, callbackUrl: urls.callback, failureCallbackUrl: urls.failure }) };
}
