/**
 * Enqueue step 5, answer: each call of a group gets its own ids (per item, hook order), the ids
 * its idempotency key already had (Q1a), or its own error, never another call's; then the
 * caller's promise settles with the result or throws (Q13: a store that cannot be reached is a
 * StoreUnavailableError).
 */
import { isStoreUnreachable, storeUnavailable } from '../store/unreachable.ts';
import type { PreparedItem } from './prepareEnqueue.ts';
import type { GroupStored } from './storeRows.ts';
import type { EnqueueManyResult } from './types.ts';

/** One call's part of a group commit: its ids per item, or why they could not be resolved. */
export type CallOutcome = { perItem: string[][]; queued: boolean } | { error: unknown };

export function answerCalls(calls: readonly PreparedItem[][], stored: GroupStored, queued: boolean): CallOutcome[] {
  return calls.map((items, i): CallOutcome => {
    if (stored.refused.has(i)) return { error: stored.refused.get(i) };
    try {
      return { perItem: resolveIds(items, stored.inserted, stored.existing), queued };
    } catch (error) {
      return { error };
    }
  });
}

/** The caller's result, or its error (an unreachable store as a StoreUnavailableError). */
export function settleCall(outcome: CallOutcome): EnqueueManyResult {
  if ('error' in outcome) {
    throw isStoreUnreachable(outcome.error) ? storeUnavailable(outcome.error, 'nothing was enqueued; retry once it answers') : outcome.error;
  }
  return { deliveryIds: outcome.perItem.flat(), perItem: outcome.perItem, queued: outcome.queued, spooled: false };
}

/** Q1a: rows that were not inserted already exist under their (operation, hook, key); use those ids. */
function resolveIds(prepared: readonly PreparedItem[], inserted: ReadonlySet<string>, existing: ReadonlyMap<string, string>): string[][] {
  return prepared.map((p) =>
    p.rows.map((row) => {
      if (inserted.has(row.id)) return row.id;
      const found = existing.get(row.id);
      if (found === undefined) throw new Error(`delivery for hook "${row.hookId}" was neither stored nor found under its idempotency key`);
      return found;
    }),
  );
}
