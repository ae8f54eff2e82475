/**
 * Q7: QStash's callback (after each attempt) and failure callback (retries exhausted) record the
 * final outcome of a QStash-path delivery. Each request is verified with both signing keys
 * against the exact URL QStash was given; an unverified one changes nothing, nor does a replay of
 * a verified one (`acceptOnce`, qstashCallbackRoute.ts). The route in front of it
 * (qstashCallbackRoute.ts) checks the token before the body is read and rate-limits the log.
 */
import type { DeliveryAttempt } from '../../contract/delivery.ts';
import { sanitizeStorableText } from '../../contract/storableText.ts';
import { templateValuesOf } from '../../send/attemptEvidence.ts';
import { redactSecrets } from '../../send/secretRedaction.ts';
import { verifyQStashCallback, type QStashCallback } from './verifyCallback.ts';
import { CriticalHookDeliveryError, WebhookDeliveryError } from '../../contract/errors.ts';
import type { Logger } from '../../observability/logger.ts';
import type { DeliveryMetrics } from '../../observability/metrics.ts';
import type { Db } from '../../store/db.ts';
import { getDeliveryRow, recordQStashCallback } from '../../store/deliveriesRepo.ts';
import { clearCriticalFlagIfAllDelivered, flagCriticalDeliveryFailure } from '../../store/operationsRepo.ts';
import { CRITICAL_ERROR_CLASS } from '../attempt/outcome.ts';
import { publicBase, QSTASH_CALLBACK_PATH, QSTASH_FAILURE_PATH } from './callbackUrls.ts';

/** A row a callback may still change: accepted, or not yet written by the worker that published it (its attempt is still in flight). */
const WAITING_ON_QSTASH = new Set(['accepted_by_qstash', 'in_flight', 'queued', 'retrying']);

type CallbackResponse = { status: number; body: string; headers?: Readonly<Record<string, string>> };

export type CallbackKind = 'callback' | 'failure';

export type QStashCallbackHandlerOptions = {
  db: Db;
  publicUrl: string;
  currentSigningKey: string | undefined;
  nextSigningKey: string | undefined;
  logger: Logger;
  metrics?: DeliveryMetrics;
  /** The environment the hook's header templates resolved from (W2): their values are taken out of the excerpt (W7). */
  env: Record<string, string | undefined>;
  /** Logs a refusal; default one warning each (the route passes a rate-limited one). */
  logRefusal?: (kind: CallbackKind, reason: string) => void;
  /** Called once a callback verified, before it changes anything: an answer refuses it (a replay). */
  acceptOnce?: (p: { kind: CallbackKind; callback: QStashCallback; signature: string }) => Promise<CallbackResponse | undefined>;
};

export type QStashCallbackHandler = (input: { path: string; rawUrl: string; signature: string | undefined; body: string }) => Promise<CallbackResponse>;

export function callbackKindOf(path: string): CallbackKind | undefined {
  return path === QSTASH_FAILURE_PATH ? 'failure' : path === QSTASH_CALLBACK_PATH ? 'callback' : undefined;
}

export function createQStashCallbackHandler(options: QStashCallbackHandlerOptions): QStashCallbackHandler {
  const logRefusal = options.logRefusal ?? ((kind: CallbackKind, reason: string) => options.logger.warn({ kind, reason }, 'qstash callback refused'));
  return async ({ path, rawUrl, signature, body }) => {
    const kind = callbackKindOf(path);
    if (!kind) return { status: 404, body: 'not found' };
    const url = `${publicBase(options.publicUrl)}${rawUrl}`;
    const verified = await verifyQStashCallback({ signature, body, url, currentSigningKey: options.currentSigningKey, nextSigningKey: options.nextSigningKey });
    if (!verified.valid) {
      options.metrics?.qstashCallbacks.inc({ kind, result: verified.reason });
      logRefusal(kind, verified.reason);
      return verified.reason === 'configuration' ? { status: 503, body: 'callback verification not configured' } : { status: 401, body: 'invalid signature' };
    }
    const query = new URL(url).searchParams;
    const id = query.get('deliveryId');
    const generation = Number(query.get('generation'));
    if (!id || !Number.isInteger(generation)) return { status: 400, body: 'missing delivery id' };

    const { callback } = verified;
    const refused = await options.acceptOnce?.({ kind, callback, signature: signature ?? '' });
    if (refused) return refused;
    const row = await getDeliveryRow(options.db, id);
    if (!row) return { status: 200, body: 'unknown delivery' };
    const hook = row.hook as { webhook?: { fallback?: string; headers?: Record<string, string> } };
    const critical = hook.webhook?.fallback === 'none';
    const outcome: 'delivered' | 'attempt_failed' | 'failed' = kind === 'failure' ? 'failed' : callback.ok ? 'delivered' : 'attempt_failed';
    const attempt: DeliveryAttempt = {
      attempt: row.attemptCount + 1, // renumbered by the UPDATE that appends it
      at: new Date().toISOString(),
      transport: 'qstash',
      outcome: outcome === 'delivered' ? 'delivered' : 'failed',
      errorClass: outcome === 'delivered' ? null : callback.status === 0 ? 'network_error' : 'http_error',
      httpStatus: callback.status === 0 ? null : callback.status,
      durationMs: 0,
      // Sanitised after the cut: slicing may split a surrogate pair, which Postgres cannot store.
      // The receiver may echo the request QStash forwarded: every form of a template value goes (W7).
      responseExcerpt:
        callback.responseBodyExcerpt !== undefined
          ? redactSecrets(sanitizeStorableText(callback.responseBodyExcerpt.slice(0, 2048)), templateValuesOf(hook.webhook?.headers, options.env))
          : null,
      generation,
    };
    const lastErrorClass = outcome === 'delivered' ? null : outcome === 'failed' && critical ? CRITICAL_ERROR_CLASS : attempt.errorClass;
    // Q4: flag first, so a row that says `failed` always has its operation flagged. Only for a
    // callback that can still change the row (same generation, still waiting on QStash).
    const current = row.generation === generation && WAITING_ON_QSTASH.has(row.status);
    if (outcome === 'failed' && critical && current) await flagCriticalDeliveryFailure(options.db, row.operationId);
    const changed = await recordQStashCallback(options.db, { id, generation, kind: outcome, attempt, lastErrorClass, lastHttpStatus: attempt.httpStatus });
    options.metrics?.qstashCallbacks.inc({ kind, result: changed ? outcome : 'stale' });
    if (changed && outcome === 'failed') {
      options.metrics?.attempts.inc({ outcome: 'failed', transport: 'qstash' });
      if (critical) {
        options.metrics?.criticalFailures.inc();
        const error = new CriticalHookDeliveryError([
          { hookId: row.hookId, cause: new WebhookDeliveryError(attempt.errorClass ?? 'http_error', attempt.httpStatus ?? undefined) },
        ]);
        options.logger.error(
          { deliveryId: id, hookId: row.hookId, operationId: changed.operationId, err: error },
          'critical webhook delivery failed for good at QStash; operation flagged',
        );
      } else {
        options.logger.warn({ deliveryId: id, hookId: row.hookId, httpStatus: attempt.httpStatus }, 'qstash gave up on a delivery; replayable from the ledger');
      }
    } else if (changed && outcome === 'delivered') {
      options.metrics?.attempts.inc({ outcome: 'delivered', transport: 'qstash' });
      // Q4: a late report of a critical delivery (flagged outcome-unknown, or replayed) may clear its operation's flag.
      if (critical) await clearCriticalFlagIfAllDelivered(options.db, changed.operationId);
    }
    return { status: 200, body: 'ok' };
  };
}
