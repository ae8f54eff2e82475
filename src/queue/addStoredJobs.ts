/**
 * Enqueue step 4, add jobs: one BullMQ job per row the commit inserted (job id = delivery id,
 * Q1), added in pipelined addBulk chunks (jobs.ts). Q2: once the rows are committed the call
 * answers whether or not Redis took the jobs in time (`queued: false`); the worker's reconciler
 * adds the missing ones.
 */
import type { Queue } from 'bullmq';
import type { Logger } from '../observability/logger.ts';
import { addDeliveryJobs, withTimeout } from './jobs.ts';
import type { PreparedRow } from './prepareEnqueue.ts';
import type { DeliveryJobData } from './types.ts';

/** Adds the jobs of newly stored rows; false (never a throw) when Redis does not take them in time. */
export async function addStoredJobs(queue: () => Queue<DeliveryJobData>, rows: readonly PreparedRow[], timeoutMs: number, logger: Logger): Promise<boolean> {
  if (rows.length === 0) return true;
  const adding = addDeliveryJobs(
    queue(),
    rows.map((r) => ({ deliveryId: r.id, generation: 0, ...(r.job ? { attempt: r.job } : {}) })),
  ).then(
    () => true,
    (err: unknown) => {
      logger.warn({ err: err, deliveries: rows.length }, 'could not add delivery jobs; the reconciler will');
      return false;
    },
  );
  const added = await withTimeout(adding, timeoutMs, false);
  if (!added)
    logger.warn(
      { deliveries: rows.length, timeoutMs: timeoutMs },
      'redis did not take the delivery jobs in time; ledger rows are committed, the reconciler will enqueue them',
    );
  return added;
}
