import { and, desc, eq, gte, inArray, lte, sql, type SQL } from 'drizzle-orm';
import pg from 'pg';
import { rowsOf, type Db } from './db.ts';
import { SEQUENCE_NUMBERING_CTES } from './orderingRepo.ts';
import { deliveries } from './schema.ts';
import type { Delivery, DeliveryAttempt, DeliveryStatus } from '../contract/delivery.ts';
import type { DeliveryEventType } from '../contract/hookTypes.ts';
import { TenantMismatchError } from '../contract/errors.ts';
import { DEFAULT_TENANT } from '../contract/tenant.ts';
import { storageCall } from '../contract/storageError.ts';

/** Q4: the error class a `fallback: 'none'` delivery that failed for good is recorded with. */
export const CRITICAL_ERROR_CLASS = 'CriticalHookDeliveryError';

/** Q1: `dlv_<ULID>` ids, generated in one place for the producer, the dispatcher and decisions. */
export { newDeliveryId } from '../contract/deliveryId.ts';

export type NewDelivery = {
  id: string;
  operationId: string;
  /** N1: the tenant it is delivered for (default 'default'). */
  tenant?: string;
  /** The queue whose worker delivers it (the producer's). */
  queue?: string | null;
  eventType: DeliveryEventType;
  hookId: string;
  hook: unknown;
  transport: 'fetch' | 'qstash';
  payload: unknown;
  idempotencyKey?: string | null;
  /** The endpoint its isolation state is kept under (contract/endpoint.ts). */
  endpointKey?: string | null;
  /** W3C trace context of the enqueueing span (`traceparent`[`\n`tracestate]), when tracing is on. */
  traceContext?: string | null;
  occurredAt: Date;
  /** `JSON.stringify(payload)` when the caller has it already (the producer serialized the event once): stored as it is. */
  payloadJson?: string;
  /** `JSON.stringify(hook)`, likewise. */
  hookJson?: string;
};

type Row = typeof deliveries.$inferSelect;

export function toDelivery(row: Row): Delivery {
  const attempts = row.attempts as DeliveryAttempt[];
  return {
    id: row.id,
    operationId: row.operationId,
    tenant: row.tenant,
    queue: row.queue,
    eventType: row.eventType as DeliveryEventType,
    hookId: row.hookId,
    transport: row.transport as Delivery['transport'],
    status: row.status as DeliveryStatus,
    // Every attempt ever made. The max covers rows replayed before the count became cumulative
    // (their count restarted at 0) and is the count itself once retention pruned the list.
    attemptCount: Math.max(row.attemptCount, attempts.length),
    generation: row.generation,
    lastErrorClass: row.lastErrorClass,
    lastHttpStatus: row.lastHttpStatus,
    nextAttemptAt: row.nextAttemptAt,
    leaseExpiresAt: row.leaseExpiresAt,
    idempotencyKey: row.idempotencyKey,
    attempts,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    deliveredAt: row.deliveredAt,
    deadlineAt: row.deadlineAt,
    failureReason: row.failureReason,
    sequence: row.sequence ?? null,
  };
}

/**
 * N1 in the INSERT itself (no round trip of its own): a row whose operation is stored for another
 * tenant makes the whole statement fail with SQLSTATE HR001 (migration 0012's function), so
 * nothing of it is stored; `insertDeliveries` turns that into a TenantMismatchError. One primary
 * key probe of `operations` per row; an operation with no stored record is not checked.
 */
const TENANT_MISMATCH_SQLSTATE = 'HR001';
function operationTenantGuard(alias: string): string {
  return `NOT EXISTS (SELECT 1 FROM operations AS o WHERE o.id = ${alias}.operation_id
                AND NOT hookrelay_operation_tenant_ok(o.id, ${alias}.operation_id, o.tenant, coalesce(${alias}.tenant, 'default')))`;
}

/** The TenantMismatchError an insert's HR001 stands for (the driver's error, or one it caused); undefined for any other error. */
function tenantMismatchOf(error: unknown): TenantMismatchError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== null && typeof current === 'object'; depth += 1) {
    const e = current as { code?: unknown; detail?: unknown; cause?: unknown };
    if (e.code === TENANT_MISMATCH_SQLSTATE && typeof e.detail === 'string') {
      const { operationId, registered, given } = JSON.parse(e.detail) as { operationId: string; registered: string; given: string };
      return new TenantMismatchError(operationId, registered, given);
    }
    current = e.cause;
  }
  return undefined;
}

/** Runs an insert; HR001 becomes the TenantMismatchError (thrown past storageCall, as it is no storage failure), anything else a StorageError. */
async function insertCall<T>(run: () => Promise<T>): Promise<T> {
  let refused: TenantMismatchError | undefined;
  return storageCall('insert deliveries', () =>
    run().catch((error: unknown) => {
      refused = tenantMismatchOf(error);
      throw error;
    }),
  ).catch((error: unknown) => {
    throw refused ?? error;
  });
}

/** insertDeliveries' statement around its one parameter (the batch). */
const INSERT_DELIVERIES = {
  name: 'hookrelay_insert_deliveries',
  before: `INSERT INTO deliveries (id, operation_id, tenant, queue, event_type, hook_id, hook, transport, payload, occurred_at, idempotency_key, endpoint_key, trace_context, status, next_attempt_at)
    SELECT r.id, r.operation_id, coalesce(r.tenant, 'default'), r.queue, r.event_type, r.hook_id, r.hook, r.transport, r.payload, r.occurred_at, r.idempotency_key, r.endpoint_key, r.trace_context, 'queued', r.occurred_at
      FROM json_to_recordset(`,
  after: `::json)
        AS r(id text, operation_id text, tenant text, queue text, event_type text, hook_id text, hook jsonb, transport text, payload jsonb, occurred_at timestamptz, idempotency_key text, endpoint_key text, trace_context text)
     WHERE ${operationTenantGuard('r')}
    ON CONFLICT DO NOTHING
    RETURNING id`,
} as const;

/**
 * A statement of one parameter, as a named prepared statement on a node-postgres pool (parsed
 * and planned once per connection: a single enqueue's INSERT costs Postgres less), else (PGlite,
 * a transaction) through drizzle.
 */
async function executePrepared(db: Db, statement: { name: string; before: string; after: string }, value: string): Promise<unknown> {
  const client = (db as { $client?: unknown }).$client;
  if (client instanceof pg.Pool) return client.query({ name: statement.name, text: `${statement.before}$1${statement.after}`, values: [value] });
  return db.execute(sql`${sql.raw(statement.before)}${value}${sql.raw(statement.after)}`);
}

/**
 * One multi-row INSERT. Rows whose (operation, hook, idempotency key) already exist are skipped (Q1a);
 * returns the ids actually inserted. A failure is a StorageError (never the statement's parameters).
 */
export async function insertDeliveries(db: Db, rows: readonly NewDelivery[]): Promise<string[]> {
  if (rows.length === 0) return [];
  // One JSON document for the whole batch, unpacked by Postgres (json_to_recordset): one
  // parameter instead of a query builder over 11 parameters a row. Written by hand so the
  // payload and hook JSON the producer already has are spliced in, not serialized again.
  const batch = `[${rows.map(deliveryRowJson).join(',')}]`;
  const result = await insertCall(() => executePrepared(db, INSERT_DELIVERIES, batch));
  return rowsOf<{ id: string }>(result).map((r) => r.id);
}

/**
 * SEC-H7 in one statement: the rows inserted and the ordered ones numbered within their
 * (operation, hook), in the given order — what INSERT + assignSequences do in a transaction, for
 * rows without an idempotency key (each row is inserted, so each number given is a row's). The
 * counter rows the upsert bumps stay locked until the statement commits, so a concurrent
 * producer's rows of the same operation and hook get the numbers after these. No ON CONFLICT: a
 * row that cannot be inserted fails the statement, and no number is given out. Returns the ids
 * and each ordered row's sequence.
 */
export async function insertNumberedDeliveries(
  db: Db,
  rows: readonly (NewDelivery & { ordered: boolean })[],
): Promise<{ ids: string[]; sequences: Map<string, number> }> {
  if (rows.length === 0) return { ids: [], sequences: new Map() };
  if (rows.some((r) => r.idempotencyKey != null))
    throw new Error('insertNumberedDeliveries: rows with an idempotency key may not be inserted; number them with assignSequences');
  const batch = `[${rows.map((r) => `${deliveryRowJson(r).slice(0, -1)},"ordered":${r.ordered ? 'true' : 'false'}}`).join(',')}]`;
  const result = await insertCall(() => executePrepared(db, INSERT_NUMBERED_DELIVERIES, batch));
  const ids: string[] = [];
  const sequences = new Map<string, number>();
  for (const r of rowsOf<{ id: string; sequence: number | null }>(result)) {
    ids.push(r.id);
    if (r.sequence !== null) sequences.set(r.id, Number(r.sequence));
  }
  return { ids, sequences };
}

/** insertNumberedDeliveries' statement: the batch's rows as `v`, numbered as assignSequences numbers them (SEQUENCE_NUMBERING_CTES), inserted with their numbers. */
const INSERT_NUMBERED_DELIVERIES = {
  name: 'hookrelay_insert_numbered_deliveries',
  before: `WITH v AS (
      SELECT * FROM ROWS FROM (json_to_recordset(`,
  after: `::json)
        AS (id text, operation_id text, tenant text, queue text, event_type text, hook_id text, hook jsonb, transport text, payload jsonb, occurred_at timestamptz, idempotency_key text, endpoint_key text, trace_context text, ordered boolean))
        WITH ORDINALITY AS v(id, operation_id, tenant, queue, event_type, hook_id, hook, transport, payload, occurred_at, idempotency_key, endpoint_key, trace_context, ordered, i)),
    ${SEQUENCE_NUMBERING_CTES}
    INSERT INTO deliveries (id, operation_id, tenant, queue, event_type, hook_id, hook, transport, payload, occurred_at, idempotency_key, endpoint_key, trace_context, status, next_attempt_at, sequence)
    SELECT v.id, v.operation_id, coalesce(v.tenant, 'default'), v.queue, v.event_type, v.hook_id, v.hook, v.transport, v.payload, v.occurred_at, v.idempotency_key, v.endpoint_key, v.trace_context, 'queued', v.occurred_at, numbered.seq
      FROM v LEFT JOIN numbered ON numbered.id = v.id
     WHERE ${operationTenantGuard('v')}
     ORDER BY v.i
    RETURNING id, sequence`,
} as const;

/** One row of insertDeliveries' batch: the keys its json_to_recordset reads. */
function deliveryRowJson(r: NewDelivery): string {
  return (
    `{"id":${JSON.stringify(r.id)},"operation_id":${JSON.stringify(r.operationId)},"tenant":${JSON.stringify(r.tenant ?? 'default')},"queue":${JSON.stringify(r.queue ?? null)},"event_type":${JSON.stringify(r.eventType)},` +
    `"hook_id":${JSON.stringify(r.hookId)},"hook":${r.hookJson ?? JSON.stringify(r.hook) ?? 'null'},"transport":${JSON.stringify(r.transport)},` +
    `"payload":${r.payloadJson ?? JSON.stringify(r.payload ?? null)},"occurred_at":${JSON.stringify(r.occurredAt)},` +
    `"idempotency_key":${JSON.stringify(r.idempotencyKey ?? null)},"endpoint_key":${JSON.stringify(r.endpointKey ?? null)},` +
    `"trace_context":${JSON.stringify(r.traceContext ?? null)}}`
  );
}

/** What an idempotency key already stored for one row (same operation, hook and key): its id, and whether it is the same delivery. */
type IdempotentMatch = { id: string; same: boolean };

/**
 * Q1a: for rows that were not inserted, the row their (operation, hook, idempotency key) already
 * stored, keyed by the new row's id: its id, and whether it was stored for the same event type,
 * event and hook config (a payload retention pruned compares as the same). Nothing else of the
 * stored row is read, so a conflicting call never sees what another call stored.
 */
export async function matchIdempotentDeliveries(db: Db, rows: readonly NewDelivery[]): Promise<Map<string, IdempotentMatch>> {
  const keyed = rows.filter((r) => r.idempotencyKey != null);
  const out = new Map<string, IdempotentMatch>();
  if (keyed.length === 0) return out;
  const batch = JSON.stringify(
    keyed.map((r) => ({
      row_id: r.id,
      tenant: r.tenant ?? DEFAULT_TENANT,
      operation_id: r.operationId,
      hook_id: r.hookId,
      idempotency_key: r.idempotencyKey,
      event_type: r.eventType,
      hook: r.hook,
      payload: r.payload ?? null,
    })),
  );
  const result = await storageCall('match idempotency keys', () =>
    db.execute(sql`
    SELECT v.row_id, d.id, (d.event_type = v.event_type AND d.hook = v.hook AND (d.payload IS NULL OR d.payload = v.payload)) AS same
      FROM json_to_recordset(${batch}::json)
        AS v(row_id text, tenant text, operation_id text, hook_id text, idempotency_key text, event_type text, hook jsonb, payload jsonb)
      JOIN deliveries AS d ON d.tenant = v.tenant AND d.operation_id = v.operation_id AND d.hook_id = v.hook_id AND d.idempotency_key = v.idempotency_key`),
  );
  for (const r of rowsOf<{ row_id: string; id: string; same: boolean }>(result)) out.set(r.row_id, { id: r.id, same: r.same === true });
  return out;
}

export async function getDeliveryRow(db: Db, id: string): Promise<Row | undefined> {
  const rows = await db.select().from(deliveries).where(eq(deliveries.id, id)).limit(1);
  return rows[0];
}

export async function getDelivery(db: Db, id: string): Promise<Delivery | undefined> {
  const row = await getDeliveryRow(db, id);
  return row ? toDelivery(row) : undefined;
}

export type DeliveryFilter = {
  status?: DeliveryStatus | DeliveryStatus[];
  operationId?: string;
  hookId?: string;
  eventType?: string;
  /** The endpoint key (contract/endpoint.ts). */
  endpoint?: string;
  /** N1: one tenant's deliveries. */
  tenant?: string;
  /** One queue's deliveries (and rows stored before queues were recorded, which any queue may take). */
  queue?: string;
  since?: Date;
  until?: Date;
  limit?: number;
  /** Keyset pagination: only ids strictly below this one (ids sort by creation time). */
  beforeId?: string;
  /**
   * Q4: only critical (`fallback: 'none'`) deliveries flagged with error class
   * CriticalHookDeliveryError: `failed` for good, or `accepted_by_qstash` with no outcome reported
   * by their deadline (failure reason `qstash_outcome_unknown`).
   */
  critical?: boolean;
};

function deliveryFilterWhere(filter: DeliveryFilter): SQL | undefined {
  const parts: SQL[] = [];
  if (filter.status !== undefined) {
    parts.push(Array.isArray(filter.status) ? inArray(deliveries.status, filter.status) : eq(deliveries.status, filter.status));
  }
  if (filter.operationId) parts.push(eq(deliveries.operationId, filter.operationId));
  if (filter.hookId) parts.push(eq(deliveries.hookId, filter.hookId));
  if (filter.eventType) parts.push(eq(deliveries.eventType, filter.eventType));
  if (filter.endpoint) parts.push(eq(deliveries.endpointKey, filter.endpoint));
  if (filter.tenant) parts.push(eq(deliveries.tenant, filter.tenant));
  if (filter.queue) parts.push(sql`(${deliveries.queue} IS NULL OR ${deliveries.queue} = ${filter.queue})`);
  if (filter.since) parts.push(gte(deliveries.createdAt, filter.since));
  if (filter.until) parts.push(lte(deliveries.createdAt, filter.until));
  if (filter.beforeId) parts.push(sql`${deliveries.id} < ${filter.beforeId}`);
  // Q4: failed for good, or accepted by QStash with no outcome reported by its deadline (QSTASH_OUTCOME_UNKNOWN).
  if (filter.critical) parts.push(and(inArray(deliveries.status, ['failed', 'accepted_by_qstash']), eq(deliveries.lastErrorClass, CRITICAL_ERROR_CLASS))!);
  return parts.length ? and(...parts) : undefined;
}

/** Newest first, served by the status+time, operation and hook indexes. */
export async function listDeliveries(db: Db, filter: DeliveryFilter = {}): Promise<Delivery[]> {
  const rows = await db
    .select()
    .from(deliveries)
    .where(deliveryFilterWhere(filter))
    .orderBy(desc(deliveries.id))
    .limit(filter.limit ?? 100);
  return rows.map(toDelivery);
}

// ---------------------------------------------------------------------------------------------
// Worker access. The hot path is ONE write per attempt (the outcome): a job the producer added
// carries its hook and payload, so nothing is read back. Rows are read only for jobs that carry
// no attempt data (reconciler, replay) or re-run after a stall. Each statement takes many rows
// (arrays unnested server-side), so the worker coalesces concurrent jobs into few round trips.
// ---------------------------------------------------------------------------------------------

/** Statuses a worker may attempt: in_flight too, since a stalled job is re-run by BullMQ. */
const CLAIMABLE_STATUSES = ['queued', 'retrying', 'in_flight'];
/** Added to the webhook's own timeout to form the in_flight lease (payload build, ledger write, slack). */
const LEASE_MARGIN_MS = 30_000;

/**
 * The attempts of the row's current generation (its list holds every generation's). A replay
 * starts a generation with a fresh retry budget; the list of a row retention pruned is empty,
 * and only finished rows are pruned, so a replayed pruned row rightly counts from 0.
 */
const generationAttemptCount = sql`(SELECT count(*)::int FROM jsonb_array_elements(d.attempts) AS a
                WHERE (a->>'generation')::int = d.generation) AS generation_attempt_count`;

/** An attempt's `attempt` is its number among all the row's attempts, set where the count lives. */
function numbered(attempt: SQL): SQL {
  return sql`jsonb_set(${attempt}, '{attempt}', to_jsonb(d.attempt_count + 1))`;
}

/** What a worker needs to run one attempt of a row it read. */
export type ClaimedDelivery = {
  id: string;
  operationId: string;
  eventType: string;
  hookId: string;
  hook: unknown;
  payload: unknown;
  /** Attempts made before this one, across every generation (replay). */
  attemptCount: number;
  /** Attempts made before this one in the current generation: what the retry schedule counts (Q3). */
  generationAttemptCount: number;
  generation: number;
  occurredAt: Date;
  /** The stored trace context of the enqueueing span (null without tracing). */
  traceContext: string | null;
  /** Q3: this generation's deadline, once a worker started its clock (null before). */
  deadlineAt: Date | null;
  /** Its sequence among the ordered deliveries of (operation, endpoint key) (SEC-H7); null when unordered. */
  sequence: number | null;
  endpointKey: string | null;
  /** N1: whose endpoint state its attempts use. */
  tenant: string;
};

type ClaimRow = {
  id: string;
  operation_id: string;
  tenant: string | null;
  event_type: string;
  hook_id: string;
  hook: unknown;
  payload: unknown;
  attempt_count: number;
  generation_attempt_count: number;
  generation: number;
  occurred_at: Date | string;
  trace_context: string | null;
  deadline_at: Date | string | null;
  sequence: number | null;
  endpoint_key: string | null;
};

/**
 * The rows that may still be attempted (queued, retrying, in_flight), read without writing: rows
 * already delivered, failed or accepted by QStash are not returned, so they are never sent again.
 */
export async function loadClaimableDeliveries(db: Db, ids: readonly string[]): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return [];
  const result = await storageCall('load deliveries', () =>
    db.execute(sql`
    SELECT d.id, d.operation_id, d.tenant, d.event_type, d.hook_id, d.hook, d.payload, d.attempt_count, d.generation, d.occurred_at, d.trace_context, d.deadline_at,
           d.sequence, d.endpoint_key, ${generationAttemptCount}
      FROM deliveries AS d
     WHERE d.id = ANY(${sql.param([...ids])}::text[])
       AND d.status = ANY(${sql.param(CLAIMABLE_STATUSES)}::text[])`),
  );
  return rowsOf<ClaimRow>(result).map(toClaimed);
}

/**
 * F3: the generation of each row that may still be attempted (queued, retrying, in_flight); a row
 * delivered, failed, skipped or accepted — or unknown — is absent, so a job that outlived its
 * row's end (a late add, a replayed command) is acknowledged without a request. Reads no payload.
 */
export async function claimableGenerations(db: Db, ids: readonly string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const result = await storageCall('read delivery states', () =>
    db.execute(sql`
    SELECT d.id, d.generation FROM deliveries AS d
     WHERE d.id = ANY(${sql.param([...ids])}::text[])
       AND d.status = ANY(${sql.param(CLAIMABLE_STATUSES)}::text[])`),
  );
  return new Map(rowsOf<{ id: string; generation: number }>(result).map((r) => [r.id, Number(r.generation)]));
}

function toClaimed(r: ClaimRow): ClaimedDelivery {
  return {
    id: r.id,
    operationId: r.operation_id,
    eventType: r.event_type,
    hookId: r.hook_id,
    hook: r.hook,
    payload: r.payload,
    attemptCount: Number(r.attempt_count),
    generationAttemptCount: Number(r.generation_attempt_count),
    generation: Number(r.generation),
    occurredAt: r.occurred_at instanceof Date ? r.occurred_at : new Date(r.occurred_at),
    traceContext: r.trace_context ?? null,
    deadlineAt: r.deadline_at === null || r.deadline_at === undefined ? null : r.deadline_at instanceof Date ? r.deadline_at : new Date(r.deadline_at),
    sequence: r.sequence === null || r.sequence === undefined ? null : Number(r.sequence),
    endpointKey: r.endpoint_key ?? null,
    tenant: r.tenant ?? 'default',
  };
}

/** An attempt still running after a while: its row says in_flight until the lease expires (Q12). */
export type InFlightMark = { id: string; generation: number; attemptCount: number; leaseMs: number };

/**
 * Marks long-running attempts in_flight with a lease. Applies only while the row is still exactly
 * as the attempt found it (same generation and attempt count, not finished), so a mark that
 * arrives after the attempt's outcome changes nothing.
 */
export async function markDeliveriesInFlight(db: Db, marks: readonly InFlightMark[]): Promise<void> {
  if (marks.length === 0) return;
  await storageCall('mark deliveries in flight', () =>
    db.execute(sql`
    UPDATE deliveries AS d
       SET status = 'in_flight',
           lease_expires_at = now() + make_interval(secs => v.lease_ms / 1000.0),
           updated_at = now()
      FROM unnest(
             ${sql.param(marks.map((m) => m.id))}::text[],
             ${sql.param(marks.map((m) => m.generation))}::int[],
             ${sql.param(marks.map((m) => m.attemptCount))}::int[],
             ${sql.param(marks.map((m) => m.leaseMs))}::float8[]
           ) AS v(id, generation, attempt_count, lease_ms)
     WHERE d.id = v.id
       AND d.generation = v.generation
       AND d.attempt_count = v.attempt_count
       AND d.status IN ('queued', 'retrying')`),
  );
}

/** The result of one attempt, as the ledger records it. */
export type AttemptOutcome = {
  id: string;
  status: Extract<DeliveryStatus, 'delivered' | 'retrying' | 'failed' | 'accepted_by_qstash'>;
  attempt: DeliveryAttempt;
  lastErrorClass: string | null;
  lastHttpStatus: number | null;
  nextAttemptAt: Date | null;
  /** Q3: the generation's deadline; kept when the row already has one. */
  deadlineAt?: Date | null;
  /** Why a `failed` outcome failed (the attempt's class); null otherwise. */
  failureReason?: string | null;
};

/**
 * One UPDATE for many attempts: appends each attempt to its row's JSON array (every attempt is
 * recorded, also a duplicate's) and bumps the count; the status moves only for the row's current
 * generation. A row already `delivered` stays delivered, and a QStash acceptance never
 * overwrites a final outcome a callback already recorded.
 */
export async function recordAttemptOutcomes(db: Db, outcomes: readonly AttemptOutcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  await storageCall('record attempt outcomes', () =>
    db.execute(sql`
    UPDATE deliveries AS d
       SET status = CASE
             WHEN d.generation <> v.generation THEN d.status
             WHEN d.status = 'delivered' THEN d.status
             WHEN d.status = 'failed' AND v.status = 'accepted_by_qstash' THEN d.status
             ELSE v.status END,
           attempt_count = d.attempt_count + 1,
           attempts = d.attempts || jsonb_build_array(${numbered(sql`v.attempt`)}),
           last_error_class = CASE WHEN d.generation = v.generation THEN v.last_error_class ELSE d.last_error_class END,
           last_http_status = CASE WHEN d.generation = v.generation THEN v.last_http_status ELSE d.last_http_status END,
           next_attempt_at = CASE WHEN d.generation = v.generation THEN v.next_attempt_at ELSE d.next_attempt_at END,
           lease_expires_at = CASE WHEN d.generation = v.generation THEN NULL ELSE d.lease_expires_at END,
           delivered_at = CASE WHEN v.status = 'delivered' AND d.generation = v.generation THEN coalesce(d.delivered_at, now()) ELSE d.delivered_at END,
           deadline_at = CASE WHEN d.generation = v.generation THEN coalesce(d.deadline_at, v.deadline_at) ELSE d.deadline_at END,
           failure_reason = CASE WHEN d.generation = v.generation AND d.status <> 'delivered' THEN v.failure_reason ELSE d.failure_reason END,
           updated_at = now()
      FROM unnest(
             ${sql.param(outcomes.map((o) => o.id))}::text[],
             ${sql.param(outcomes.map((o) => o.attempt.generation))}::int[],
             ${sql.param(outcomes.map((o) => o.status))}::text[],
             ${sql.param(outcomes.map((o) => JSON.stringify(o.attempt)))}::jsonb[],
             ${sql.param(outcomes.map((o) => o.lastErrorClass))}::text[],
             ${sql.param(outcomes.map((o) => o.lastHttpStatus))}::int[],
             ${sql.param(outcomes.map((o) => (o.nextAttemptAt ? o.nextAttemptAt.toISOString() : null)))}::timestamptz[],
             ${sql.param(outcomes.map((o) => (o.deadlineAt ? o.deadlineAt.toISOString() : null)))}::timestamptz[],
             ${sql.param(outcomes.map((o) => o.failureReason ?? null))}::text[]
           ) AS v(id, generation, status, attempt, last_error_class, last_http_status, next_attempt_at, deadline_at, failure_reason)
     WHERE d.id = v.id`),
  );
}

/**
 * The last resort for an outcome that cannot be written (its text refused by Postgres even
 * alone): the row is marked `failed` with `reason` as its error class and a minimal attempt, so
 * the reconciler never re-sends it. Applies only while the row is still unfinished in this
 * generation (and, given `attemptCount`, still at that count). Returns whether it changed the row.
 */
export async function failUnwritableDelivery(db: Db, input: { id: string; generation: number; attemptCount?: number; reason: string }): Promise<boolean> {
  const attempt = {
    attempt: 0, // numbered by the UPDATE
    at: new Date().toISOString(),
    transport: 'fetch',
    outcome: 'failed',
    errorClass: input.reason,
    httpStatus: null,
    durationMs: 0,
    responseExcerpt: null,
    generation: input.generation,
  };
  const result = await storageCall('fail an unwritable delivery', () =>
    db.execute(sql`
    UPDATE deliveries AS d
       SET status = 'failed',
           attempt_count = d.attempt_count + 1,
           attempts = d.attempts || jsonb_build_array(${numbered(sql`${JSON.stringify(attempt)}::jsonb`)}),
           last_error_class = ${input.reason}::text,
           next_attempt_at = NULL,
           lease_expires_at = NULL,
           updated_at = now()
     WHERE d.id = ${input.id}
       AND d.generation = ${input.generation}
       AND (${input.attemptCount ?? null}::int IS NULL OR d.attempt_count = ${input.attemptCount ?? null}::int)
       AND d.status IN ('queued', 'retrying', 'in_flight')
    RETURNING d.id`),
  );
  return rowsOf<{ id: string }>(result).length > 0;
}

/** A generation's deadline clock to start (first wait behind its endpoint). */
export type DeadlineStart = { id: string; generation: number; deadlineAt: Date };

/**
 * Q3: starts the deadline clocks of generations that first wait behind their endpoint (no
 * attempt has stored one yet), many rows per statement. Returns each row's kept deadline — an
 * earlier one if another run set it; undefined when the row is no longer waiting in that generation.
 */
export async function startDeliveryDeadlines(db: Db, starts: readonly DeadlineStart[]): Promise<(Date | undefined)[]> {
  if (starts.length === 0) return [];
  const result = await db.execute(sql`
    UPDATE deliveries AS d SET deadline_at = coalesce(d.deadline_at, v.deadline_at)
      FROM unnest(
             ${sql.param(starts.map((s) => s.id))}::text[],
             ${sql.param(starts.map((s) => s.generation))}::int[],
             ${sql.param(starts.map((s) => s.deadlineAt.toISOString()))}::timestamptz[]
           ) AS v(id, generation, deadline_at)
     WHERE d.id = v.id AND d.generation = v.generation AND d.status IN ('queued', 'retrying', 'in_flight')
    RETURNING d.id, d.deadline_at`);
  const kept = new Map(rowsOf<{ id: string; deadline_at: Date | string | null }>(result).map((r) => [r.id, r.deadline_at]));
  return starts.map((s) => {
    const raw = kept.get(s.id);
    return raw === null || raw === undefined ? undefined : new Date(raw);
  });
}

/** Q3: why a delivery's deadline passed without an attempt (its endpoint kept it waiting). */
const WAIT_FAILURE_REASONS = ['circuit_open', 'endpoint_busy', 'rate_limited', 'endpoint_disabled', 'ordering_wait'] as const;
export type WaitFailureReason = (typeof WAIT_FAILURE_REASONS)[number];

/**
 * Q3/Q4: a delivery whose deadline passed while it waited is `failed` with the reason (no attempt
 * recorded). A critical one (`fallback: 'none'`) is recorded with error class
 * CriticalHookDeliveryError and flags its operation (created if missing) in the same statement.
 * Applies only to a row still waiting in this generation; returns whether it did.
 */
export async function failWaitingDelivery(db: Db, input: { id: string; generation: number; reason: string; critical: boolean }): Promise<boolean> {
  const errorClass = input.critical ? CRITICAL_ERROR_CLASS : input.reason;
  const result = await db.execute(sql`
    WITH failed AS (
      UPDATE deliveries
         SET status = 'failed', last_error_class = ${errorClass}, failure_reason = ${input.reason},
             next_attempt_at = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE id = ${input.id} AND generation = ${input.generation} AND status IN ('queued', 'retrying', 'in_flight', 'held')
      RETURNING operation_id),
    flagged AS (
      INSERT INTO operations (id, critical_delivery_failure)
      SELECT operation_id, true FROM failed WHERE ${input.critical}
      ON CONFLICT (id) DO UPDATE SET critical_delivery_failure = true, updated_at = now()
      RETURNING id)
    SELECT (SELECT count(*) FROM failed)::int AS failed, (SELECT count(*) FROM flagged)::int AS flagged`);
  return Number(rowsOf<{ failed: number }>(result)[0]?.failed ?? 0) > 0;
}

/**
 * F4: an environment-hook delivery whose hook the worker's environment no longer has becomes
 * `skipped` with the reason (final, nothing sent). Applies only to a row still claimable in this
 * generation; returns whether it did.
 */
export async function skipDeliveryAttempt(db: Db, input: { id: string; generation: number; reason: string }): Promise<boolean> {
  const result = await storageCall('skip delivery', () =>
    db.execute(sql`
    UPDATE deliveries
       SET status = 'skipped', failure_reason = ${input.reason}, next_attempt_at = NULL, lease_expires_at = NULL, updated_at = now()
     WHERE id = ${input.id} AND generation = ${input.generation} AND status = ANY(${sql.param(CLAIMABLE_STATUSES)}::text[])
    RETURNING id`),
  );
  return rowsOf<{ id: string }>(result).length > 0;
}

/** Q4: the failure reason of a critical row QStash accepted whose outcome nobody reported by its deadline. */
export const QSTASH_OUTCOME_UNKNOWN = 'qstash_outcome_unknown';

/** The partial index `deliveries_qstash_unreported_idx` (schema.ts) covers exactly these rows. */
const QSTASH_UNREPORTED_SQL = sql.raw(`status = 'accepted_by_qstash' AND last_error_class IS NULL AND (hook -> 'webhook' ->> 'fallback') = 'none'`);

/** A critical row flagged by the sweep: accepted by QStash, outcome unknown past its deadline. */
type UnreportedQStash = { id: string; operationId: string; hookId: string; endpointKey: string | null };

/**
 * Q4: with no QStash callbacks, nothing ever reports what became of a delivery QStash accepted.
 * A critical one past its deadline is flagged like a failed one: the row keeps its status
 * (`accepted_by_qstash`: what is known) and gets error class CriticalHookDeliveryError and reason
 * `qstash_outcome_unknown`; its operation is flagged in the same statement. At most `limit` per call.
 */
export async function flagUnreportedQStashDeliveries(db: Db, limit: number): Promise<UnreportedQStash[]> {
  const result = await db.execute(sql`
    WITH due AS (
      SELECT id FROM deliveries
       WHERE ${QSTASH_UNREPORTED_SQL} AND deadline_at <= now()
       ORDER BY deadline_at
       LIMIT ${limit}
       FOR UPDATE SKIP LOCKED),
    marked AS (
      UPDATE deliveries AS d
         SET last_error_class = ${CRITICAL_ERROR_CLASS}, failure_reason = ${QSTASH_OUTCOME_UNKNOWN}, updated_at = now()
        FROM due WHERE d.id = due.id AND d.status = 'accepted_by_qstash' AND d.last_error_class IS NULL
      RETURNING d.id, d.operation_id, d.hook_id, d.endpoint_key),
    flagged AS (
      INSERT INTO operations (id, critical_delivery_failure)
      SELECT DISTINCT operation_id, true FROM marked
      ON CONFLICT (id) DO UPDATE SET critical_delivery_failure = true, updated_at = now()
      RETURNING id)
    SELECT m.id, m.operation_id, m.hook_id, m.endpoint_key, (SELECT count(*) FROM flagged)::int AS flagged FROM marked AS m`);
  return rowsOf<{ id: string; operation_id: string; hook_id: string; endpoint_key: string | null }>(result).map((r) => ({
    id: r.id,
    operationId: r.operation_id,
    hookId: r.hook_id,
    endpointKey: r.endpoint_key,
  }));
}

/** A held row failed at its deadline by the sweep. */
export type ExpiredHeld = { id: string; operationId: string; hookId: string; endpointKey: string | null; transport: string; critical: boolean };

/**
 * Q3: held rows are not a hiding place. A row held for a disabled endpoint keeps its
 * deadline; past it the row is `failed` (reason `endpoint_disabled`), unless its endpoint is
 * disabled with `--hold` (the operator keeps everything until they act). Critical rows flag their
 * operation in the same statement. At most `limit` rows per call.
 */
export async function failExpiredHeldDeliveries(db: Db, limit: number): Promise<ExpiredHeld[]> {
  const result = await db.execute(sql`
    WITH due AS (
      SELECT d.id FROM deliveries AS d
       WHERE d.status = 'held' AND d.deadline_at IS NOT NULL AND d.deadline_at <= now()
         AND NOT EXISTS (SELECT 1 FROM endpoints AS e WHERE e.key = d.endpoint_key AND e.disabled_at IS NOT NULL AND e.hold)
       ORDER BY d.deadline_at
       LIMIT ${limit}
       FOR UPDATE SKIP LOCKED),
    failed AS (
      UPDATE deliveries AS d
         SET status = 'failed',
             last_error_class = CASE WHEN d.hook->'webhook'->>'fallback' = 'none' THEN ${CRITICAL_ERROR_CLASS} ELSE 'endpoint_disabled' END,
             failure_reason = 'endpoint_disabled', next_attempt_at = NULL, updated_at = now()
        FROM due WHERE d.id = due.id AND d.status = 'held'
      RETURNING d.id, d.operation_id, d.hook_id, d.endpoint_key, d.transport, (d.hook->'webhook'->>'fallback' = 'none') AS critical),
    flagged AS (
      INSERT INTO operations (id, critical_delivery_failure)
      SELECT DISTINCT operation_id, true FROM failed WHERE critical
      ON CONFLICT (id) DO UPDATE SET critical_delivery_failure = true, updated_at = now()
      RETURNING id)
    SELECT f.id, f.operation_id, f.hook_id, f.endpoint_key, f.transport, coalesce(f.critical, false) AS critical, (SELECT count(*) FROM flagged)::int AS flagged FROM failed AS f`);
  return rowsOf<{ id: string; operation_id: string; hook_id: string; endpoint_key: string | null; transport: string; critical: boolean }>(result).map((r) => ({
    id: r.id,
    operationId: r.operation_id,
    hookId: r.hook_id,
    endpointKey: r.endpoint_key,
    transport: r.transport,
    critical: r.critical === true,
  }));
}

/** A row the reconciler may have to re-enqueue. */
export type DueDelivery = { id: string; generation: number; attemptCount: number };

/**
 * Q2: rows that are due and may have lost their job — queued/retrying whose next attempt is due
 * (and untouched for `graceMs`, so a producer still adding its job is not raced), and in_flight
 * rows whose lease expired. Keyset pagination by id.
 */
export async function findDueDeliveries(
  db: Db,
  options: { afterId: string; limit: number; graceMs: number; queue?: string | undefined },
): Promise<DueDelivery[]> {
  // Only this queue's rows (and those stored before rows carried their queue): another queue's row is its own worker's.
  const ofQueue = options.queue === undefined ? sql`` : sql`AND (queue IS NULL OR queue = ${options.queue})`;
  const result = await storageCall('find due deliveries', () =>
    db.execute(sql`
    SELECT id, generation, attempt_count FROM deliveries
     WHERE id > ${options.afterId} ${ofQueue}
       AND ((status IN ('queued', 'retrying')
             AND next_attempt_at <= now()
             AND updated_at <= now() - make_interval(secs => ${options.graceMs / 1000}::float8))
         OR (status = 'in_flight' AND lease_expires_at <= now()))
     ORDER BY id
     LIMIT ${options.limit}`),
  );
  return rowsOf<{ id: string; generation: number; attempt_count: number }>(result).map((r) => ({
    id: r.id,
    generation: Number(r.generation),
    attemptCount: Number(r.attempt_count),
  }));
}

/**
 * Q11: drops payload and attempts of finished rows (skipped ones too) created before `cutoff` (the row and its
 * metadata stay). At most `limit` rows per call; returns how many were pruned.
 */
export async function pruneDeliveryPayloads(db: Db, cutoff: Date, limit: number): Promise<number> {
  const result = await db.execute(sql`
    UPDATE deliveries SET payload = NULL, attempts = '[]'::jsonb, updated_at = now()
     WHERE id IN (
       SELECT id FROM deliveries
        WHERE created_at < ${cutoff.toISOString()}::timestamptz
          AND status IN ('delivered', 'failed', 'accepted_by_qstash', 'skipped')
          AND (payload IS NOT NULL OR attempts <> '[]'::jsonb)
        LIMIT ${limit})
    RETURNING id`);
  return rowsOf<{ id: string }>(result).length;
}

/**
 * Q11 (opt-in, HOOKRELAY_RETENTION_DELETE_DAYS): deletes finished rows (delivered, failed,
 * accepted by QStash) created before `cutoff`, at most `limit` per call, so the ledger does not
 * grow without bound. Returns how many were deleted.
 */
export async function deleteFinishedDeliveries(db: Db, cutoff: Date, limit: number): Promise<number> {
  const result = await db.execute(sql`
    DELETE FROM deliveries
     WHERE id IN (
       SELECT id FROM deliveries
        WHERE created_at < ${cutoff.toISOString()}::timestamptz
          AND status IN ('delivered', 'failed', 'accepted_by_qstash', 'skipped')
        LIMIT ${limit})
    RETURNING id`);
  return rowsOf<{ id: string }>(result).length;
}

/** Q7: what a verified QStash callback says about a published delivery. */
export type QStashCallbackUpdate = {
  id: string;
  generation: number;
  /** delivered: 2xx callback; attempt_failed: non-2xx callback (QStash retries); failed: failure callback. */
  kind: 'delivered' | 'attempt_failed' | 'failed';
  attempt: DeliveryAttempt;
  lastErrorClass: string | null;
  lastHttpStatus: number | null;
};

/**
 * Applies a callback to a row still waiting on QStash (accepted, or still queued/retrying/in_flight
 * when the callback beat the worker's own write) of the same generation. Returns the row's operation id when it
 * changed, undefined when the callback was stale or unknown.
 */
export async function recordQStashCallback(db: Db, update: QStashCallbackUpdate): Promise<{ operationId: string } | undefined> {
  const status = update.kind === 'attempt_failed' ? null : update.kind;
  const result = await storageCall('record a qstash callback', () =>
    db.execute(sql`
    UPDATE deliveries AS d
       SET status = coalesce(${status}::text, d.status),
           attempt_count = d.attempt_count + 1,
           attempts = d.attempts || jsonb_build_array(${numbered(sql`${JSON.stringify(update.attempt)}::jsonb`)}),
           last_error_class = ${update.lastErrorClass}::text,
           last_http_status = ${update.lastHttpStatus}::int,
           failure_reason = CASE WHEN ${status}::text = 'delivered' THEN NULL ELSE d.failure_reason END,
           delivered_at = CASE WHEN ${status}::text = 'delivered' THEN coalesce(d.delivered_at, now()) ELSE d.delivered_at END,
           lease_expires_at = CASE WHEN ${status}::text IS NULL THEN d.lease_expires_at ELSE NULL END,
           updated_at = now()
     WHERE d.id = ${update.id}
       AND d.generation = ${update.generation}
       AND d.status IN ('accepted_by_qstash', 'in_flight', 'queued', 'retrying')
    RETURNING d.operation_id`),
  );
  const row = rowsOf<{ operation_id: string }>(result)[0];
  return row ? { operationId: row.operation_id } : undefined;
}

/** Resolves when the ledger answers and has its table (a database not migrated yet is not ready); the producer's outage probe. */
export async function ledgerAnswers(db: Db): Promise<void> {
  await db.execute(sql`SELECT 1 FROM deliveries LIMIT 0`);
}

/** The current status of each known id (the console's live status column). */
export async function deliveryStatuses(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .select({ id: deliveries.id, status: deliveries.status })
    .from(deliveries)
    .where(inArray(deliveries.id, [...ids]));
  return new Map(rows.map((r) => [r.id, r.status]));
}
