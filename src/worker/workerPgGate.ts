/**
 * The worker's Postgres gate (pgGate.ts): Postgres away pauses taking jobs and marks it down for
 * health (Q13); back, it is marked up and taking resumes, unless the service is stopping.
 */
import type { Worker } from 'bullmq';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import type { Db } from '../store/db.ts';
import type { DependencyHealth } from './dependencyHealth.ts';
import { createPgGate, type PgGate } from './pgGate.ts';

type WorkerPgGate = PgGate & {
  /** The worker to pause and resume (built after the gate, which its processor needs). */
  follow(worker: Worker<DeliveryJobData>): void;
  /** From the stop's first step: Postgres coming back no longer resumes taking jobs. */
  stopResuming(): void;
};

export function createWorkerPgGate(p: { db: Db; health: DependencyHealth; logger: Logger }): WorkerPgGate {
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
  const gate = createPgGate({
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
