/**
 * The worker's Postgres wait (postgresWait.ts): Postgres away pauses taking jobs and marks it down for
 * health (Q13); back, it is marked up and taking resumes, unless the service is stopping.
 */
import type { Worker } from 'bullmq';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import type { Db } from '../store/db.ts';
import type { DependencyHealth } from './dependencyHealth.ts';
import { createPostgresWait, type PostgresWait } from './postgresWait.ts';

type WorkerPostgresWait = PostgresWait & {
  /** The worker to pause and resume (built after the wait, which its processor needs). */
  follow(worker: Worker<DeliveryJobData>): void;
  /** From the stop's first step: Postgres coming back no longer resumes taking jobs. */
  stopResuming(): void;
};

export function createWorkerPostgresWait(p: { db: Db; health: DependencyHealth; logger: Logger }): WorkerPostgresWait {
  let worker: Worker<DeliveryJobData> | undefined;
  let stopping = false;
  // BullMQ 6: Worker#resume is async (a failure reaches the worker's 'error' listener); awaited, never left floating.
  const resumeTaking = async (w: Worker<DeliveryJobData>): Promise<void> => {
    try {
      await w.resume();
    } catch (err) {
      p.logger.warn({ err }, 'could not resume taking jobs after Postgres came back');
    }
  };
  const gate = createPostgresWait({
    db: p.db,
    onDown: (error) => {
      p.health.markDown('postgres', error);
      void worker?.pause(true).catch(() => undefined);
    },
    onUp: () => {
      p.health.markUp('postgres');
      if (!stopping && worker) void resumeTaking(worker);
    },
  });
  return {
    ...gate,
    follow(w) {
      worker = w;
    },
    stopResuming() {
      stopping = true;
    },
  };
}
