/**
 * The BullMQ Worker that runs the delivery processor, with the lock and stall settings of
 * SPEC §13 and a bounded close (Q9: BullMQ's own close waits for active jobs without a limit).
 */
import { Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryProcessor } from './processor.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import { throttledErrorLog } from '../observability/logger.ts';

/**
 * A job whose lock lapsed this many times is failed by BullMQ (then removed); the reconciler
 * re-enqueues its row once the lease expires, so this only bounds BullMQ's own re-runs.
 */
const MAX_STALLED_COUNT = 3;

export type DeliveryWorkerOptions = {
  queueName: string;
  prefix: string;
  /** Shared with the queue; BullMQ duplicates it for its blocking connection. */
  connection: Redis | Cluster;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  processor: DeliveryProcessor;
  logger: Logger;
};

export function createDeliveryWorker(options: DeliveryWorkerOptions): Worker<DeliveryJobData> {
  const worker = new Worker<DeliveryJobData>(options.queueName, (job, token) => options.processor(job, token), {
    connection: options.connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    maxStalledCount: MAX_STALLED_COUNT,
    // Belt and braces for jobs added by other clients: the ledger is the record (Q11).
    removeOnComplete: { count: 0 },
    removeOnFail: { count: 0 },
  });
  // Redis away: BullMQ reports each reconnect; one line per distinct error per 30 s is enough.
  worker.on('error', throttledErrorLog(options.logger, 'queue worker error (Redis?)'));
  return worker;
}

/**
 * Q9: stop taking jobs and let in-flight ones finish within `timeoutMs`; past it, close by force
 * (their locks lapse and BullMQ re-runs them elsewhere). Resolves true when every job finished.
 */
export async function closeDeliveryWorker(worker: Worker<DeliveryJobData>, timeoutMs: number, logger: Logger, onTimeout?: () => void): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const graceful = worker.close().then(() => true);
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const finished = await Promise.race([graceful, timedOut]);
  clearTimeout(timer);
  if (!finished) {
    logger.warn({ timeoutMs }, 'shutdown bound reached with deliveries still in flight; closing the worker by force');
    onTimeout?.();
    await worker.close(true).catch(() => undefined);
  }
  return finished;
}
