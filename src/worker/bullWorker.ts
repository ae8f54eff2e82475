/**
 * The BullMQ Worker that runs the delivery processor, with the documented lock and stall
 * settings (docs/configuration.md) and a bounded close (Q9: BullMQ's own close waits for active jobs without a limit).
 */
import { Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryProcessor } from './attempt/processor.ts';
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
  /** True while Redis is away (the outage has one line of its own, Q13): BullMQ's reconnect errors go to debug then. */
  quiet?: () => boolean;
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
  // Redis away: BullMQ reports each reconnect; the outage has its own line (Q13), and other errors
  // one line per distinct error per 30 s.
  const logError = throttledErrorLog(options.logger, 'queue worker error (Redis?)');
  worker.on('error', (err) => (options.quiet?.() ? options.logger.debug({ err }, 'queue worker error while redis is unreachable') : logError(err)));
  return worker;
}

/** How often a stop looks whether nothing runs while Redis is away (then it does not wait for Redis). */
const IDLE_POLL_MS = 100;

export type CloseWorkerOptions = {
  timeoutMs: number;
  logger: Logger;
  /** Called once at the bound, before the worker is closed by force (abandon what waits). */
  onTimeout?: () => void;
  /** Every attempt under way has its outcome written and Redis does not answer: nothing is left to drain, only Redis' side (acknowledgements, slot releases). */
  idleWithoutRedis: () => boolean;
  /** Drops the Redis connections, so BullMQ's pending commands fail at once instead of waiting for Redis. */
  disconnect: () => void;
  /** Bound on BullMQ's own close once the connections are dropped. */
  forceTimeoutMs: number;
};

/**
 * Q9: stop taking jobs and let in-flight ones finish within `timeoutMs`. Past it — or at once
 * when nothing runs and Redis is unreachable — the Redis connections are dropped and BullMQ's
 * close is waited for at most `forceTimeoutMs`: a stop never waits on Redis. (BullMQ's close(true)
 * after close() only returns the first close's promise, and that one waits on Redis without a
 * limit.) Jobs whose completion Redis did not take re-run when their lock lapses; the ledger
 * says they were delivered, so nothing is sent twice (Q1). Says what ended the wait.
 */
export async function closeDeliveryWorker(worker: Worker<DeliveryJobData>, options: CloseWorkerOptions): Promise<'closed' | 'idle' | 'bound'> {
  const closing = worker.close().then(
    () => 'closed' as const,
    () => 'closed' as const,
  );
  let timer: NodeJS.Timeout | undefined;
  let poll: NodeJS.Timeout | undefined;
  const bound = new Promise<'bound'>((resolve) => {
    timer = setTimeout(() => resolve('bound'), options.timeoutMs);
  });
  const idle = new Promise<'idle'>((resolve) => {
    poll = setInterval(() => {
      if (options.idleWithoutRedis()) resolve('idle');
    }, IDLE_POLL_MS);
  });
  const first = await Promise.race([closing, bound, idle]);
  clearTimeout(timer);
  clearInterval(poll);
  if (first === 'closed') return first;
  if (first === 'bound') {
    options.logger.warn({ timeoutMs: options.timeoutMs }, 'shutdown bound reached with deliveries still in flight; closing the worker by force');
    options.onTimeout?.();
  }
  options.disconnect();
  let forceTimer: NodeJS.Timeout | undefined;
  await Promise.race([closing, new Promise((resolve) => (forceTimer = setTimeout(resolve, options.forceTimeoutMs)))]);
  clearTimeout(forceTimer);
  return first;
}
