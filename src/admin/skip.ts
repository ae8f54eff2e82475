/**
 * An operator skips failed or held deliveries (`hookrelay deliveries skip`, the
 * console's Skip): each becomes `skipped` — final, never sent — and so settled for ordering: the
 * ordered deliveries waiting behind it are woken (their parked jobs promoted). The wake is best
 * effort: with Redis away, the parked jobs wake on their own timer and the worker's reconciler
 * promotes them; Postgres alone decides that they may go.
 */
import { Job, type Queue } from 'bullmq';
import type { Db } from '../store/db.ts';
import { DELIVERY_JOB_NAME, type DeliveryJobData } from '../queue/types.ts';
import { orderingHeads, skipDeliveries, type OrderingKey, type SkipOutcome } from '../store/orderingRepo.ts';

export type { SkipOutcome } from '../store/orderingRepo.ts';

/** Skips the rows that are failed or held; returns each id's outcome and how many waiting deliveries were woken. */
export async function skipAndRelease(
  db: Db,
  queue: () => Promise<Queue<DeliveryJobData>>,
  ids: readonly string[],
): Promise<{ outcomes: SkipOutcome[]; woken: number }> {
  const outcomes = await skipDeliveries(db, ids);
  const keys = new Map<string, OrderingKey>();
  for (const o of outcomes) {
    if (o.result === 'skipped' && o.sequence !== null) {
      keys.set(`${o.tenant}\u0000${o.operationId}\u0000${o.hookId}`, { tenant: o.tenant, operationId: o.operationId, hookId: o.hookId });
    }
  }
  if (keys.size === 0) return { outcomes, woken: 0 };
  const heads = await orderingHeads(db, [...keys.values()]);
  let woken = 0;
  for (const id of heads) {
    const promoted = await new Job<DeliveryJobData>(await queue(), DELIVERY_JOB_NAME, { deliveryId: id, generation: 0 }, {}, id).promote().then(
      () => true,
      () => false,
    );
    if (promoted) woken++;
  }
  return { outcomes, woken };
}
