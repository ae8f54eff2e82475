import { and, desc, eq, gte, inArray, lte, sql, type SQL } from 'drizzle-orm';
import { ulid } from 'ulid';
import type { Db } from './db.ts';
import { deliveries } from './schema.ts';
import type { Delivery, DeliveryAttempt, DeliveryStatus } from '../contract/delivery.ts';
import type { HookType } from '../contract/hookTypes.ts';

/** Q1: `dlv_<ULID>`: no `:` or `.`, never all digits, sortable by creation time. */
export function newDeliveryId(): string {
  return `dlv_${ulid()}`;
}

export type NewDelivery = {
  id: string;
  operationId: string;
  eventType: HookType;
  hookId: string;
  hook: unknown;
  transport: 'fetch' | 'qstash';
  payload: unknown;
  idempotencyKey?: string | null;
  occurredAt: Date;
};

type Row = typeof deliveries.$inferSelect;

export function toDelivery(row: Row): Delivery {
  return {
    id: row.id,
    operationId: row.operationId,
    eventType: row.eventType as HookType,
    hookId: row.hookId,
    transport: row.transport as Delivery['transport'],
    status: row.status as DeliveryStatus,
    attemptCount: row.attemptCount,
    generation: row.generation,
    lastErrorClass: row.lastErrorClass,
    lastHttpStatus: row.lastHttpStatus,
    nextAttemptAt: row.nextAttemptAt,
    leaseExpiresAt: row.leaseExpiresAt,
    idempotencyKey: row.idempotencyKey,
    attempts: row.attempts as DeliveryAttempt[],
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    deliveredAt: row.deliveredAt,
  };
}

/**
 * One multi-row INSERT. Rows whose (idempotency key, hook) already exist are skipped (Q1a);
 * returns the ids actually inserted.
 */
export async function insertDeliveries(db: Db, rows: readonly NewDelivery[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await db
    .insert(deliveries)
    .values(rows.map((r) => ({ ...r, idempotencyKey: r.idempotencyKey ?? null, status: 'queued', nextAttemptAt: r.occurredAt })))
    .onConflictDoNothing()
    .returning({ id: deliveries.id });
  return inserted.map((r) => r.id);
}

/** The deliveries stored under idempotency keys, for resolving a repeated enqueue (Q1a). */
export async function findDeliveryIdsByKeys(db: Db, keys: readonly string[]): Promise<Map<string, { id: string; hookId: string }[]>> {
  const out = new Map<string, { id: string; hookId: string }[]>();
  if (keys.length === 0) return out;
  const rows = await db
    .select({ id: deliveries.id, hookId: deliveries.hookId, key: deliveries.idempotencyKey })
    .from(deliveries)
    .where(inArray(deliveries.idempotencyKey, [...keys]));
  for (const r of rows) {
    if (r.key === null) continue;
    const list = out.get(r.key) ?? [];
    list.push({ id: r.id, hookId: r.hookId });
    out.set(r.key, list);
  }
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
  since?: Date;
  until?: Date;
  limit?: number;
  /** Keyset pagination: only ids strictly below this one (ids sort by creation time). */
  beforeId?: string;
};

export function deliveryFilterWhere(filter: DeliveryFilter): SQL | undefined {
  const parts: SQL[] = [];
  if (filter.status !== undefined) {
    parts.push(Array.isArray(filter.status) ? inArray(deliveries.status, filter.status) : eq(deliveries.status, filter.status));
  }
  if (filter.operationId) parts.push(eq(deliveries.operationId, filter.operationId));
  if (filter.hookId) parts.push(eq(deliveries.hookId, filter.hookId));
  if (filter.eventType) parts.push(eq(deliveries.eventType, filter.eventType));
  if (filter.since) parts.push(gte(deliveries.createdAt, filter.since));
  if (filter.until) parts.push(lte(deliveries.createdAt, filter.until));
  if (filter.beforeId) parts.push(sql`${deliveries.id} < ${filter.beforeId}`);
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
