/**
 * Enqueue step 4, add jobs: one BullMQ job per row the commit inserted (job id = delivery id,
 * Q1), in pipelined addBulk chunks (jobs.ts). When every row of the group was expected to be
 * inserted (nothing keyed or ordered), the jobs were staged while Postgres stored the rows
 * (stageJobs) and are only sent now. Q2: once the rows are committed the call answers whether
 * or not Redis took the jobs in time (`queued: false`); the worker's reconciler adds the missing ones.
 */
import type { Logger } from '../observability/logger.ts';
import { addDeliveryJobs, type DeliveryJob, stageDeliveryJobs, type StagedJobs } from './jobs.ts';
import { withTimeout } from '../util/withTimeout.ts';
import type { PreparedRow } from './prepareEnqueue.ts';
import type { RedisAvailability } from './redisAvailability.ts';
import type { DeliveryQueueConnection } from './queueConnection.ts';

const jobsOf = (rows: readonly PreparedRow[]): DeliveryJob[] => rows.map((r) => ({ deliveryId: r.id, generation: 0, ...(r.job ? { attempt: r.job } : {}) }));

/** The rows' jobs built now, sent by addStoredJobs once the rows are committed (never a rejection: a failed stage is added the plain way). */
export function stageJobs(queue: () => DeliveryQueueConnection, rows: readonly PreparedRow[]): Promise<StagedJobs | undefined> {
  return stageDeliveryJobs(queue(), jobsOf(rows)).catch(() => undefined);
}

/**
 * Adds the jobs of newly stored rows (the staged ones when they are exactly these rows); false
 * (never a throw) when Redis does not take them in time. F2: a Redis known down is not asked (the
 * answer is at once); F3: nothing is sent while the connection is not ready, so no add waits in
 * the client to be sent after its call was answered.
 */
export async function addStoredJobs(
  queue: () => DeliveryQueueConnection,
  rows: readonly PreparedRow[],
  timeoutMs: number,
  logger: Logger,
  redis: RedisAvailability,
  staged?: Promise<StagedJobs | undefined>,
): Promise<boolean> {
  if (rows.length === 0) return true;
  const started = Date.now();
  const state = redis.state();
  if (state === 'down') return false;
  if (state === 'connecting' && !(await redis.waitUp(timeoutMs))) {
    redis.failed();
    return false;
  }
  const plain = () => addDeliveryJobs(queue().queue, jobsOf(rows));
  let error: unknown;
  const adding = (staged ? staged.then((s) => (s ? s.send() : plain())) : plain()).then(
    () => true,
    (err: unknown) => {
      error = err;
      return false;
    },
  );
  const added = await withTimeout(adding, Math.max(0, timeoutMs - (Date.now() - started)), false);
  if (added) return true;
  if (error === undefined || redis.state() !== 'up') {
    // No answer in time, or the connection went: an outage (one line, from redisAvailability.ts).
    redis.failed(error);
    logger.debug({ deliveries: rows.length, timeoutMs }, 'delivery jobs not added; ledger rows are committed, the reconciler will add them');
  } else {
    logger.warn({ err: error, deliveries: rows.length }, 'could not add delivery jobs; ledger rows are committed, the reconciler will add them');
  }
  return false;
}
