import { TenantMismatchError } from '../contract/tenant.ts';
import { asc, eq, sql } from 'drizzle-orm';
import { rowsOf, type Db } from './db.ts';
import { operationHooks, operations } from './schema.ts';
import type { OperationRecord } from '../contract/operation.ts';
import { HookConfigError } from '../contract/errors.ts';

export type NewOperation = { id: string; tenant?: string; parentOperationId?: string | null; userId?: string | null };

/** Create the record, or leave an existing one as it is (a retried create is harmless). */
export async function insertOperation(db: Db, op: NewOperation): Promise<void> {
  await db
    .insert(operations)
    .values({ id: op.id, tenant: op.tenant ?? 'default', parentOperationId: op.parentOperationId ?? null, userId: op.userId ?? null })
    .onConflictDoNothing({ target: operations.id });
}

export async function getOperation(db: Db, id: string): Promise<OperationRecord | undefined> {
  const rows = await db.select().from(operations).where(eq(operations.id, id)).limit(1);
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    tenant: row.tenant,
    parentOperationId: row.parentOperationId,
    userId: row.userId,
    status: row.status,
    completionReason: row.completionReason,
    criticalDeliveryFailure: row.criticalDeliveryFailure,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** Persist the terminal state (created if missing: completion must not depend on creation order). */
export async function finishOperation(db: Db, id: string, status: string, reason: string): Promise<void> {
  const now = new Date();
  await db
    .insert(operations)
    .values({ id, status, completionReason: reason, completedAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: operations.id, set: { status, completionReason: reason, completedAt: now, updatedAt: now } });
}

/** Q4: flag the operation (created if missing) after a critical delivery failed for good. */
export async function flagCriticalDeliveryFailure(db: Db, id: string): Promise<void> {
  await db
    .insert(operations)
    .values({ id, criticalDeliveryFailure: true })
    .onConflictDoUpdate({ target: operations.id, set: { criticalDeliveryFailure: true, updatedAt: sql`now()` } });
}

/**
 * Q4: clear the operation's flag once every critical (`fallback: 'none'`) delivery of it is
 * `delivered` (a replay, or a late QStash callback, delivered what had failed or gone unreported).
 * Run after the delivering write commits; returns whether the flag was cleared.
 */
export async function clearCriticalFlagIfAllDelivered(db: Db, id: string): Promise<boolean> {
  const result = await db.execute(sql`
    UPDATE operations SET critical_delivery_failure = false, updated_at = now()
     WHERE id = ${id} AND critical_delivery_failure
       AND NOT EXISTS (
         SELECT 1 FROM deliveries AS d
          WHERE d.operation_id = ${id} AND (d.hook -> 'webhook' ->> 'fallback') = 'none' AND d.status <> 'delivered')
    RETURNING id`);
  return rowsOf<{ id: string }>(result).length > 0;
}

/** Append caller hooks in order after any already stored (register appends, D9). */
export async function appendOperationHooks(db: Db, operationId: string, hooks: readonly unknown[]): Promise<void> {
  if (hooks.length === 0) return;
  await db.transaction(async (tx) => {
    const [{ next } = { next: 0 }] = await tx
      .select({ next: sql<number>`coalesce(max(${operationHooks.position}) + 1, 0)::int` })
      .from(operationHooks)
      .where(eq(operationHooks.operationId, operationId));
    await tx.insert(operationHooks).values(hooks.map((hook, i) => ({ operationId, position: next + i, hook })));
  });
}

/** JSON with object keys sorted (jsonb does not keep key order), for comparing stored hooks. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * L2/D9: create the operation record (or keep an existing one) and persist its caller hooks, in
 * one transaction serialized per operation. A retried create is harmless: a hook already stored
 * under the same id with the same config is not stored again (so it never runs twice); the same
 * id with a different config is a duplicate id (D9) and rejects the whole call, changing nothing.
 * Hooks with new ids are appended after the stored ones (register appends, D9).
 */
export async function createOperationWithHooks(db: Db, op: NewOperation, hooks: readonly { id: string }[]): Promise<void> {
  await db.transaction(async (tx) => {
    const tenant = op.tenant ?? 'default';
    await tx
      .insert(operations)
      .values({ id: op.id, tenant, parentOperationId: op.parentOperationId ?? null, userId: op.userId ?? null })
      .onConflictDoNothing({ target: operations.id });
    // Serialize concurrent creates of one operation (the row exists now: inserted or kept).
    const [row] = await tx.select({ id: operations.id, tenant: operations.tenant }).from(operations).where(eq(operations.id, op.id)).for('update');
    // N1: an operation keeps the tenant it was stored under; another tenant's create is refused, nothing stored.
    if (row && row.tenant !== tenant) throw new TenantMismatchError(op.id, row.tenant, tenant);
    if (hooks.length === 0) return;
    const stored = await tx
      .select({ position: operationHooks.position, hook: operationHooks.hook })
      .from(operationHooks)
      .where(eq(operationHooks.operationId, op.id))
      .orderBy(asc(operationHooks.position));
    const byId = new Map<string, unknown>();
    for (const row of stored) {
      const id = (row.hook as { id?: unknown } | null)?.id;
      if (typeof id === 'string') byId.set(id, row.hook);
    }
    const fresh: { id: string }[] = [];
    for (const [index, hook] of hooks.entries()) {
      const existing = byId.get(hook.id);
      if (existing === undefined) fresh.push(hook);
      else if (canonical(existing) !== canonical(hook)) {
        throw new HookConfigError(hook.id, index, [
          { path: 'id', message: 'duplicate hook id in this operation (a different hook is already stored under it)' },
        ]);
      }
    }
    if (fresh.length === 0) return;
    const next = stored.reduce((max, row) => Math.max(max, row.position + 1), 0);
    await tx.insert(operationHooks).values(fresh.map((hook, i) => ({ operationId: op.id, position: next + i, hook })));
  });
}

/**
 * The persisted caller hooks of an operation, in order, unvalidated (callers re-validate, D4b).
 * `undefined` when the operation stored none. A storage error propagates (L5): never `[]`.
 */
export async function loadOperationHooks(db: Db, operationId: string): Promise<unknown[] | undefined> {
  const rows = await db
    .select({ hook: operationHooks.hook })
    .from(operationHooks)
    .where(eq(operationHooks.operationId, operationId))
    .orderBy(asc(operationHooks.position));
  return rows.length === 0 ? undefined : rows.map((r) => r.hook);
}
