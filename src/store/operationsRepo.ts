import { asc, eq, sql } from 'drizzle-orm';
import type { Db } from './db.ts';
import { operationHooks, operations } from './schema.ts';
import type { OperationRecord } from '../contract/operation.ts';

export type NewOperation = { id: string; parentOperationId?: string | null; userId?: string | null };

/** Create the record, or leave an existing one as it is (a retried create is harmless). */
export async function insertOperation(db: Db, op: NewOperation): Promise<void> {
  await db
    .insert(operations)
    .values({ id: op.id, parentOperationId: op.parentOperationId ?? null, userId: op.userId ?? null })
    .onConflictDoNothing({ target: operations.id });
}

export async function getOperation(db: Db, id: string): Promise<OperationRecord | undefined> {
  const rows = await db.select().from(operations).where(eq(operations.id, id)).limit(1);
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
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
