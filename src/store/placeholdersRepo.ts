import { and, eq, isNull, sql } from 'drizzle-orm';
import type { Db } from './db.ts';
import { deferredPlaceholders } from './schema.ts';

import type { StoredPlaceholder } from './types.ts';

export type { StoredPlaceholder };

import { PlaceholderNotFoundError } from '../contract/errors.ts';

export { PlaceholderNotFoundError };

/** The empty placeholder; creating it twice is harmless. */
export async function insertPlaceholder(db: Db, operationId: string, toolCallId: string): Promise<void> {
  await db.insert(deferredPlaceholders).values({ operationId, toolCallId }).onConflictDoNothing();
}

export async function getPlaceholder(db: Db, operationId: string, toolCallId: string): Promise<StoredPlaceholder | undefined> {
  const rows = await db
    .select()
    .from(deferredPlaceholders)
    .where(and(eq(deferredPlaceholders.operationId, operationId), eq(deferredPlaceholders.toolCallId, toolCallId)))
    .limit(1);
  const row = rows[0];
  if (!row) return undefined;
  return {
    operationId: row.operationId,
    toolCallId: row.toolCallId,
    result: row.result,
    approval: row.approval,
    publishedAt: row.publishedAt,
  };
}

/**
 * P1/P2: the single final write of the final result (the allowed result or the sanitized
 * denial). One conditional UPDATE that applies only while `result` is NULL; exactly one racing
 * writer gets `applied: true`, every other one reads the stored result.
 */
export async function publishPlaceholderOnce(
  db: Db,
  input: { operationId: string; toolCallId: string; result: unknown },
): Promise<{ applied: boolean; result: unknown }> {
  const where = and(
    eq(deferredPlaceholders.operationId, input.operationId),
    eq(deferredPlaceholders.toolCallId, input.toolCallId),
    isNull(deferredPlaceholders.result),
  );
  const updated = await db
    .update(deferredPlaceholders)
    .set({ result: sql`${JSON.stringify(input.result)}::jsonb`, publishedAt: sql`now()`, updatedAt: sql`now()` })
    .where(where)
    .returning({ result: deferredPlaceholders.result });
  if (updated[0]) return { applied: true, result: updated[0].result };
  const stored = await getPlaceholder(db, input.operationId, input.toolCallId);
  if (!stored) throw new PlaceholderNotFoundError(input.operationId, input.toolCallId);
  return { applied: false, result: stored.result };
}

/** P3: record a private approval claim (first claim wins); nothing is published. */
export async function claimPlaceholderApproval(
  db: Db,
  input: { operationId: string; toolCallId: string; decision: unknown },
): Promise<{ applied: boolean; approval: unknown }> {
  const updated = await db
    .update(deferredPlaceholders)
    .set({ approval: sql`${JSON.stringify(input.decision)}::jsonb`, updatedAt: sql`now()` })
    .where(
      and(
        eq(deferredPlaceholders.operationId, input.operationId),
        eq(deferredPlaceholders.toolCallId, input.toolCallId),
        isNull(deferredPlaceholders.approval),
      ),
    )
    .returning({ approval: deferredPlaceholders.approval });
  if (updated[0]) return { applied: true, approval: updated[0].approval };
  const stored = await getPlaceholder(db, input.operationId, input.toolCallId);
  if (!stored) throw new PlaceholderNotFoundError(input.operationId, input.toolCallId);
  return { applied: false, approval: stored.approval };
}

/** P3: note that the claimed decision was published (its notifications sent); first call wins. */
export async function markApprovalPublished(db: Db, operationId: string, toolCallId: string): Promise<boolean> {
  const updated = await db
    .update(deferredPlaceholders)
    .set({ approval: sql`${deferredPlaceholders.approval} || jsonb_build_object('publishedAt', now())`, updatedAt: sql`now()` })
    .where(
      and(
        eq(deferredPlaceholders.operationId, operationId),
        eq(deferredPlaceholders.toolCallId, toolCallId),
        sql`${deferredPlaceholders.approval} IS NOT NULL AND NOT (${deferredPlaceholders.approval} ? 'publishedAt')`,
      ),
    )
    .returning({ id: deferredPlaceholders.id });
  return updated.length > 0;
}
