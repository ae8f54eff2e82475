/**
 * The job each stored row carries (Q1: its first attempt reads nothing back): the delivery body,
 * built once by buildDeliveryBody, the function the worker uses for rows whose job carries none,
 * so the bytes cannot differ.
 *   - writeJobBodies: unordered rows, built while Postgres stores the rows (the body is not
 *     stored, only the job carries it, so it need not be ready before the INSERT);
 *   - numberOrderedRows: enqueue step 3, ordered rows, whose body and job carry the sequence the
 *     commit gave them (SEC-H7).
 * A body that cannot be built leaves the job without one: the worker builds it from the ledger
 * row, as for a job the reconciler re-adds.
 */
import { buildDeliveryBody } from '../notify/deliveryBody.ts';
import type { PreparedRow } from './prepareEnqueue.ts';

/** The unordered rows' jobs (ordered rows wait for their number). */
export function writeJobBodies(rows: readonly PreparedRow[]): void {
  for (const row of rows) if (!row.ordered) writeJob(row, undefined);
}

/** Enqueue step 3: an ordered row's job carries its sequence, and its body carries it too (built now, once). */
export function numberOrderedRows(rows: readonly PreparedRow[], sequences: ReadonlyMap<string, number>): void {
  if (sequences.size === 0) return;
  for (const row of rows) {
    const sequence = sequences.get(row.id);
    if (sequence !== undefined) writeJob(row, sequence);
  }
}

function writeJob(row: PreparedRow, sequence: number | undefined): void {
  let built: ReturnType<typeof buildDeliveryBody>;
  try {
    built = buildDeliveryBody({ hook: row.hook, event: row.payload, deliveryId: row.id, occurredAt: row.occurredAt, sequence });
  } catch {
    row.job = undefined;
    return;
  }
  // Templates stay unresolved and no email is added: this is data at rest in Redis (W2, B3).
  row.job = {
    operationId: row.operationId,
    hook: row.hookJson,
    body: built.body,
    ...(built.emailUserId !== undefined ? { emailUserId: built.emailUserId } : {}),
    attemptCount: 0,
    generationAttemptCount: 0,
    ...(row.traceContext ? { trace: row.traceContext } : {}),
    ...(sequence !== undefined ? { sequence } : {}),
    ...(row.tenant !== undefined && row.tenant !== 'default' ? { tenant: row.tenant } : {}),
  };
}
