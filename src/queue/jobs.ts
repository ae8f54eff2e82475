/**
 * The BullMQ side of a delivery: one job per ledger row, job id = delivery id (Q1), data minimal,
 * removed on completion and on final failure (Q11: the ledger is the record).
 */
import { Job, type JobsOptions, type Queue } from 'bullmq';
import type { DeliveryQueueConnection } from './queueConnection.ts';
import { DELIVERY_JOB_NAME, type DeliveryJobAttempt, type DeliveryJobData } from './types.ts';

/** addBulk sends this many jobs per Redis round trip (one MULTI per chunk). */
const ADD_BULK_CHUNK = 1000;

export type DeliveryJob = { deliveryId: string; generation: number; delayMs?: number; attempt?: DeliveryJobAttempt };

function deliveryJobOptions(job: DeliveryJob): JobsOptions {
  return {
    jobId: job.deliveryId,
    removeOnComplete: true,
    removeOnFail: true,
    ...(job.delayMs !== undefined && job.delayMs > 0 ? { delay: Math.round(job.delayMs) } : {}),
  };
}

function deliveryJobData(job: DeliveryJob): DeliveryJobData {
  return job.attempt
    ? { deliveryId: job.deliveryId, generation: job.generation, attempt: job.attempt }
    : { deliveryId: job.deliveryId, generation: job.generation };
}

/** Adds the jobs (a job whose id already exists is left as it is, so a re-add is harmless). */
export async function addDeliveryJobs(queue: Queue<DeliveryJobData>, jobs: readonly DeliveryJob[]): Promise<void> {
  // One job: one script call, without the pipeline addBulk builds (a request handler's enqueue).
  const [only] = jobs;
  if (jobs.length === 1 && only) {
    await queue.add(DELIVERY_JOB_NAME, deliveryJobData(only), deliveryJobOptions(only));
    return;
  }
  for (let i = 0; i < jobs.length; i += ADD_BULK_CHUNK) {
    const chunk = jobs.slice(i, i + ADD_BULK_CHUNK);
    await queue.addBulk(chunk.map((job) => ({ name: DELIVERY_JOB_NAME, data: deliveryJobData(job), opts: deliveryJobOptions(job) })));
  }
}

/** Jobs built and queued on Redis pipelines, not sent yet. */
export type StagedJobs = {
  /** Sends them (one round trip per chunk of ADD_BULK_CHUNK, all in flight at once); throws the first job's error. */
  send(): Promise<void>;
};

/**
 * An addBulk in two halves: the CPU now (each job's JSON and script arguments, BullMQ's own
 * Job.addJob on a pipeline, as addBulk's createBulk does), the round trip when send() is called.
 * The producer stages a group's jobs while Postgres stores their rows and sends them once the
 * rows are committed (Q1: never a job before its row).
 */
export async function stageDeliveryJobs(connection: DeliveryQueueConnection, jobs: readonly DeliveryJob[]): Promise<StagedJobs> {
  await connection.ready(); // BullMQ's scripts defined on hookrelay's connection
  const pipelines: Array<ReturnType<typeof connection.pipeline>> = [];
  for (let i = 0; i < jobs.length; i += ADD_BULK_CHUNK) {
    const pipeline = connection.pipeline();
    for (const job of jobs.slice(i, i + ADD_BULK_CHUNK)) {
      const staged = new Job<DeliveryJobData>(connection.queue, DELIVERY_JOB_NAME, deliveryJobData(job), deliveryJobOptions(job), job.deliveryId);
      // Its outcome is read from the pipeline's results below.
      staged.addJob(pipeline, { parentDependenciesKey: '' }).catch(() => undefined);
    }
    pipelines.push(pipeline);
  }
  return {
    async send() {
      const results = await Promise.all(pipelines.map((p) => p.exec()));
      for (const chunk of results) for (const [err] of chunk ?? []) if (err) throw err;
    },
  };
}
