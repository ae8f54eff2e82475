import { sql } from 'drizzle-orm';
import { bigserial, boolean, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import type { DeliveryAttempt } from '../contract/delivery.ts';

const timestamps = {
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
};

/** Operation records (L2): one per agent operation that has persisted caller hooks or a flag. */
export const operations = pgTable('operations', {
  id: text('id').primaryKey(),
  /** N1: the tenant the server app stored it for. */
  tenant: text('tenant').notNull().default('default'),
  parentOperationId: text('parent_operation_id'),
  userId: text('user_id'),
  status: text('status').notNull().default('running'),
  completionReason: text('completion_reason'),
  criticalDeliveryFailure: boolean('critical_delivery_failure').notNull().default(false),
  ...timestamps,
  completedAt: timestamp('completed_at', { withTimezone: true, mode: 'date' }),
});

/** Caller hooks per operation, in registration order, `${VAR}` templates unresolved (L2). */
export const operationHooks = pgTable(
  'operation_hooks',
  {
    operationId: text('operation_id').notNull(),
    position: integer('position').notNull(),
    hook: jsonb('hook').notNull(),
    createdAt: timestamps.createdAt,
  },
  (t) => [primaryKey({ columns: [t.operationId, t.position] })],
);

/**
 * Deferred-completion placeholders (P1/P2): `result` is NULL (empty) or the final result — the
 * allowed result or the sanitized denial — written once by one conditional UPDATE … WHERE result
 * IS NULL. No review state beside it (P1). `approval` holds a private human claim (P3).
 */
export const deferredPlaceholders = pgTable(
  'deferred_placeholders',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    operationId: text('operation_id').notNull(),
    toolCallId: text('tool_call_id').notNull(),
    result: jsonb('result'),
    approval: jsonb('approval'),
    ...timestamps,
    publishedAt: timestamp('published_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('deferred_placeholders_operation_tool_call_uq').on(t.operationId, t.toolCallId)],
);

/**
 * The delivery ledger (Q1, Q12). No foreign key to operations: enqueue needs no operation row.
 * Attempts live in a JSON array on the row: they are always read with their delivery, bounded by
 * the retry schedule, appended by the same UPDATE that records the outcome (one write per
 * attempt, not two) and pruned with the payload by retention (Q11).
 */
export const deliveries = pgTable(
  'deliveries',
  {
    id: text('id').primaryKey(),
    operationId: text('operation_id').notNull(),
    /** N1: the tenant the server app enqueued it for (its endpoint state is that tenant's, N2). */
    tenant: text('tenant').notNull().default('default'),
    /** The BullMQ queue whose worker delivers it (null: a row stored before queues were recorded, any queue's). */
    queue: text('queue'),
    eventType: text('event_type').notNull(),
    hookId: text('hook_id').notNull(),
    hook: jsonb('hook').notNull(),
    transport: text('transport').notNull(),
    status: text('status').notNull().default('queued'),
    attemptCount: integer('attempt_count').notNull().default(0),
    generation: integer('generation').notNull().default(0),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true, mode: 'date' }),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }).defaultNow(),
    lastErrorClass: text('last_error_class'),
    lastHttpStatus: integer('last_http_status'),
    payload: jsonb('payload'),
    attempts: jsonb('attempts').$type<DeliveryAttempt[]>().notNull().default(sql`'[]'::jsonb`),
    idempotencyKey: text('idempotency_key'),
    /** The endpoint key (SEC-H6: the URL's origin + path, or origin + `#` + webhook.endpoint): isolation state is kept per endpoint. */
    endpointKey: text('endpoint_key'),
    /** W3C trace context (`traceparent`, then `\n` + `tracestate`) of the span that enqueued it; null without tracing. */
    traceContext: text('trace_context'),
    occurredAt: timestamp('occurred_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /**
     * Q3: when this generation gives up (its first attempt or first wait + the schedule + slack);
     * set by the worker, null until then, and null for a row held by an operator's `--hold`.
     */
    deadlineAt: timestamp('deadline_at', { withTimezone: true, mode: 'date' }),
    /** Why a `failed` row failed: the last attempt's class, or circuit_open / endpoint_busy / rate_limited / endpoint_disabled. */
    failureReason: text('failure_reason'),
    /** Its place (1, 2, …) among the ordered deliveries of (operation, hook) (SEC-H7); null when unordered. */
    sequence: integer('sequence'),
    ...timestamps,
    deliveredAt: timestamp('delivered_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    // Q1a, N2: one delivery per (tenant, operation, hook, key); concurrent enqueues with one key converge on it, other
    // operations and other tenants (who may name the same operation id) never meet it.
    uniqueIndex('deliveries_idempotency_uq').on(t.tenant, t.operationId, t.hookId, t.idempotencyKey).where(sql`${t.idempotencyKey} IS NOT NULL`),
    index('deliveries_status_created_idx').on(t.status, t.createdAt),
    index('deliveries_operation_idx').on(t.operationId),
    index('deliveries_hook_idx').on(t.hookId),
    // Partial: only rows still to deliver, so a finished row leaves it and its updates skip it.
    index('deliveries_due_idx').on(t.status, t.nextAttemptAt).where(sql`${t.status} IN ('queued', 'retrying', 'in_flight')`),
    // Partial: rows held for a disabled endpoint, found by endpoint when it is enabled again.
    index('deliveries_held_idx').on(t.endpointKey).where(sql`${t.status} = 'held'`),
    // Q4: critical rows QStash accepted whose outcome nobody has reported yet, by deadline (the
    // reconciler flags them past it when no callbacks come back). Marked rows leave the index.
    // The predicate is QSTASH_UNREPORTED_SQL (deliveriesRepo.ts), word for word.
    index('deliveries_qstash_unreported_idx')
      .on(t.deadlineAt)
      .where(sql`status = 'accepted_by_qstash' AND last_error_class IS NULL AND (hook -> 'webhook' ->> 'fallback') = 'none'`),
    // SEC-H7, N2: one sequence number per (tenant, operation, hook) (a bug never sends two deliveries as one place).
    uniqueIndex('deliveries_sequence_uq').on(t.tenant, t.operationId, t.hookId, t.sequence).where(sql`${t.sequence} IS NOT NULL`),
    // The ordered rows that still hold back later ones of their hook (unfinished, or failed under onFailure 'block').
    // The worker's turn keeper reads only this index; the predicate is ORDERING_OPEN_SQL (orderingRepo.ts), word for word.
    index('deliveries_ordering_open_idx')
      .on(t.tenant, t.operationId, t.hookId, t.sequence)
      .where(
        sql`sequence IS NOT NULL AND (status IN ('queued', 'retrying', 'in_flight', 'held') OR (status = 'failed' AND (hook -> 'webhook' ->> 'onFailure') = 'block'))`,
      ),
  ],
);

/**
 * The last sequence given out per (operation, hook) for ordered deliveries (SEC-H7: a hook's order
 * is its own, so no other hook can hold it). The producer bumps it in the transaction that stores
 * the rows, so sequences are contiguous (1..N) and monotonic across producer processes.
 */
export const deliverySequences = pgTable(
  'delivery_sequences',
  {
    // N2: an order is its tenant's own (two tenants given one operation id by the app never share one).
    tenant: text('tenant').notNull().default('default'),
    operationId: text('operation_id').notNull(),
    hookId: text('hook_id').notNull(),
    lastSequence: integer('last_sequence').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenant, t.operationId, t.hookId] })],
);

/**
 * Endpoints an operator (or auto-disable) has acted on: disabled, or given their own limits.
 * Breaker state is not here: it lives in Redis, shared by the workers (isolation/endpointGate.ts).
 */
export const endpoints = pgTable(
  'endpoints',
  {
    /** N2: the tenant it applies to, or `*` for every tenant (an operator's default; rows before tenants). */
    tenant: text('tenant').notNull().default('*'),
    /** The canonical endpoint (N4, contract/endpoint.ts). */
    key: text('key').notNull(),
    disabledAt: timestamp('disabled_at', { withTimezone: true, mode: 'date' }),
    /** `operator` or `auto` (no success for HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS). */
    disabledBy: text('disabled_by'),
    disabledReason: text('disabled_reason'),
    /** Disabled with `--hold`: its deliveries are kept (held, no deadline) until an operator acts. */
    hold: boolean('hold').notNull().default(false),
    /** Overrides HOOKRELAY_ENDPOINT_CONCURRENCY for this endpoint. */
    concurrency: integer('concurrency'),
    /** Deliveries per second across workers; a hook's own webhook.rateLimit wins when lower. */
    rateLimit: doublePrecision('rate_limit'),
    /** N3: timeouts of callers that waited less than this do not count against it (null: the default webhook timeout). */
    timeoutFloorMs: integer('timeout_floor_ms'),
    ...timestamps,
  },
  (t) => [primaryKey({ columns: [t.tenant, t.key] })],
);

/** AGENT-HOOKS-0.1 payload-free interception records (I1, I4). */
export const interceptionRecords = pgTable(
  'interception_records',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    sessionId: text('session_id').notNull(),
    sequence: integer('sequence').notNull(),
    point: text('point').notNull(),
    record: jsonb('record').notNull(),
    createdAt: timestamps.createdAt,
  },
  (t) => [uniqueIndex('interception_records_session_sequence_uq').on(t.sessionId, t.sequence)],
);

/**
 * Durable approvals (A1–A3): one row per escalated interception or human intervention, bound to the
 * context identity it approves. A decision is one conditional UPDATE of a `pending` row; applying
 * it is another, `applied_at IS NULL`, so it is applied once. `requested_event_at` /
 * `resolved_event_at` are the outbox marks of the two approval events (set once the ledger has them).
 */
export const approvals = pgTable(
  'approvals',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull().default('default'),
    operationId: text('operation_id').notNull(),
    /** `escalation` (a liftable deny) or `intervention` (a human intervention). */
    kind: text('kind').notNull(),
    point: text('point').notNull(),
    toolCallId: text('tool_call_id'),
    toolName: text('tool_name'),
    contextIdentity: text('context_identity').notNull(),
    /** The context for display, after the approval redactor; never the raw context. */
    context: jsonb('context').notNull(),
    /** The liftable deny's reason and message (payload-free). */
    escalation: jsonb('escalation').notNull().default(sql`'{}'::jsonb`),
    status: text('status').notNull().default('pending'),
    requestedAt: timestamp('requested_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    decidedBy: text('decided_by'),
    decidedAt: timestamp('decided_at', { withTimezone: true, mode: 'date' }),
    reason: text('reason'),
    appliedAt: timestamp('applied_at', { withTimezone: true, mode: 'date' }),
    /** applied | expired | ambiguous | identity_mismatch (contract/approval.ts). */
    outcome: text('outcome'),
    /** The nonce the answer tokens of this request carry; cleared when one is used (single use). */
    answerNonce: text('answer_nonce'),
    requestedEventAt: timestamp('requested_event_at', { withTimezone: true, mode: 'date' }),
    resolvedEventAt: timestamp('resolved_event_at', { withTimezone: true, mode: 'date' }),
    ...timestamps,
  },
  (t) => [
    // One open request per (tenant, operation, point, identity): concurrent escalations of one call converge on it.
    uniqueIndex('approvals_pending_identity_uq').on(t.tenant, t.operationId, t.point, t.contextIdentity).where(sql`status = 'pending'`),
    index('approvals_tenant_status_idx').on(t.tenant, t.status, t.requestedAt),
    // The resolver's look-up: the operation's decisions not applied yet.
    index('approvals_operation_idx').on(t.tenant, t.operationId, t.point).where(sql`applied_at IS NULL`),
    index('approvals_pending_expiry_idx').on(t.expiresAt).where(sql`status = 'pending'`),
    // The outbox: rows whose event the ledger does not have yet.
    index('approvals_unannounced_idx').on(t.requestedAt).where(sql`requested_event_at IS NULL OR (status <> 'pending' AND resolved_event_at IS NULL)`),
  ],
);

export const schema = { operations, operationHooks, deferredPlaceholders, deliveries, interceptionRecords, approvals };
