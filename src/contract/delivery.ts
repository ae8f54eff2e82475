import { z } from 'zod';
import { DeliveryEventTypeSchema } from './hookTypes.ts';

/** Q12: ledger statuses. */
/** `held`: its endpoint is disabled; never attempted, kept, replayable once the endpoint is enabled. */
/** `skipped`: an operator gave up on a failed or held delivery (`hookrelay deliveries skip`); final, and it releases the ordered deliveries after it. */
export const DELIVERY_STATUSES = ['queued', 'in_flight', 'retrying', 'delivered', 'failed', 'accepted_by_qstash', 'held', 'skipped'] as const;
export const DeliveryStatusSchema = z.enum(DELIVERY_STATUSES);

/**
 * SEC-H7: the `failureReason` of a queued (or retrying) ordered delivery held back by a failed
 * `onFailure: 'block'` delivery of its own hook, until an operator replays or skips that one.
 */
export const ORDERING_BLOCKED_REASON = 'ordering_blocked';
/**
 * F4/L1: the `failureReason` of an environment-hook delivery the worker skipped because its
 * current environment no longer has that hook (AGENT_HOOK_WEBHOOK_URL unset, the event no longer
 * in AGENT_HOOK_WEBHOOK_EVENTS): status `skipped`, nothing sent.
 */
export const ENVIRONMENT_HOOK_REMOVED_REASON = 'environment_hook_removed';
export type DeliveryStatus = z.infer<typeof DeliveryStatusSchema>;

/** Error classes recorded in the ledger and returned by transports (D7, R5, W2, Q4, Q5). */
export const DELIVERY_ERROR_CLASSES = [
  'configuration',
  'http_error',
  'network_error',
  'timeout',
  'cancelled',
  'ssrf_blocked',
  'payload_too_large',
  'CriticalHookDeliveryError',
  /** D10: an event a local-mode dispatch could not send (EventValidationError). */
  'invalid_event',
  /** A local-mode send that failed inside hookrelay (a bug, logged), not at the receiver. */
  'internal_error',
  'circuit_open',
  'endpoint_busy',
  'rate_limited',
  'endpoint_disabled',
  /** An ordered delivery's deadline passed while an earlier one of its operation and hook was still unfinished. */
  'ordering_wait',
] as const;
export type DeliveryErrorClass = (typeof DELIVERY_ERROR_CLASSES)[number];

/** One attempt as recorded in the ledger. */
export const DeliveryAttemptSchema = z.object({
  /** Its number among all the delivery's attempts, 1-based, across generations. */
  attempt: z.number().int().min(1),
  at: z.string(),
  transport: z.enum(['fetch', 'qstash']),
  outcome: z.enum(['delivered', 'accepted_by_qstash', 'failed']),
  errorClass: z.string().nullable(),
  httpStatus: z.number().int().nullable(),
  durationMs: z.number(),
  /** Q8: the first bytes of the receiver's answer (success or failure), resolved template values taken out. */
  responseExcerpt: z.string().nullable(),
  generation: z.number().int().min(0),
  /** Q8, failed attempts only: the headers sent, `${VAR}` templates shown as templates (never their values), `webhook-signature` elided. */
  requestHeaders: z.record(z.string(), z.string()).optional(),
});
export type DeliveryAttempt = z.infer<typeof DeliveryAttemptSchema>;

/** A ledger row as the public API returns it (`producer.getDelivery`). */
export const DeliverySchema = z.object({
  id: z.string(),
  operationId: z.string(),
  /** N1: the tenant the server app enqueued it for. */
  tenant: z.string(),
  /** The queue whose worker delivers it (null: stored before queues were recorded). */
  queue: z.string().nullable(),
  /** The lifecycle event, or an approval event (A3). */
  eventType: DeliveryEventTypeSchema,
  hookId: z.string(),
  transport: z.enum(['fetch', 'qstash']),
  status: DeliveryStatusSchema,
  /** Every attempt ever made, across generations (a replay does not reset it); `attempts` is their list. */
  attemptCount: z.number().int(),
  generation: z.number().int(),
  lastErrorClass: z.string().nullable(),
  lastHttpStatus: z.number().int().nullable(),
  nextAttemptAt: z.date().nullable(),
  leaseExpiresAt: z.date().nullable(),
  idempotencyKey: z.string().nullable(),
  /** The attempts, oldest first, each with its generation; emptied by retention (Q11), the count stays. */
  attempts: z.array(DeliveryAttemptSchema),
  createdAt: z.date(),
  updatedAt: z.date(),
  deliveredAt: z.date().nullable(),
  /** Q3: when this generation gives up — its first attempt (or first wait) + the schedule + slack; null before a worker took it, and while held by `--hold`. */
  deadlineAt: z.date().nullable(),
  /** Why a `failed` row failed: the last attempt's class, or `circuit_open`, `endpoint_busy`, `rate_limited`, `endpoint_disabled`, `ordering_wait` (the deadline passed while it waited). */
  failureReason: z.string().nullable(),
  /** Its place (1, 2, …) among the ordered deliveries of its operation to its endpoint (SEC-H7); null when unordered. */
  sequence: z.number().int().min(1).nullable(),
});
export type Delivery = z.infer<typeof DeliverySchema>;
