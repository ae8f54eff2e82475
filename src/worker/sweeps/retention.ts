/**
 * Q11: prune payload and attempts of finished ledger rows older than HOOKRELAY_RETENTION_DAYS
 * (the rows and their metadata stay) and, when HOOKRELAY_RETENTION_DELETE_DAYS is set, delete
 * finished rows older than that outright. Runs shortly after start and then periodically, in
 * bounded batches so it never holds long locks.
 */
import type { Logger } from '../../observability/logger.ts';
import type { DeliveryMetrics } from '../../observability/metrics.ts';
import type { Db } from '../../store/db.ts';
import { deleteFinishedDeliveries, pruneDeliveryPayloads } from '../../store/deliveriesRepo.ts';

const RETENTION_INTERVAL_MS = 60 * 60 * 1000;
/** First run after start: out of the way of the start-up reconcile pass. */
const RETENTION_FIRST_RUN_MS = 60 * 1000;
const RETENTION_BATCH_ROWS = 1_000;
const RETENTION_MAX_BATCHES_PER_RUN = 100;
const MS_PER_DAY = 24 * 60 * 60 * 1000;

export type Retention = { runOnce(now?: Date): Promise<number>; start(): void; stop(): Promise<void> };

export function createRetention(options: {
  db: Db;
  retentionDays: number;
  /** Delete finished rows older than this many days (metadata too); undefined keeps them. */
  deleteDays?: number;
  logger: Logger;
  metrics?: DeliveryMetrics;
  intervalMs?: number;
  firstRunMs?: number;
}): Retention {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;
  /** Set by stop() to cut a run in progress short between batches. */
  let halt = false;

  const runOnce = (now = new Date()): Promise<number> => {
    running ??= (async () => {
      halt = false;
      const cutoff = new Date(now.getTime() - options.retentionDays * MS_PER_DAY);
      // One batch budget per run, shared by both kinds of work.
      let batches = 0;
      const inBatches = async (step: () => Promise<number>): Promise<number> => {
        let total = 0;
        for (; batches < RETENTION_MAX_BATCHES_PER_RUN && !halt; batches += 1) {
          const n = await step();
          total += n;
          if (n < RETENTION_BATCH_ROWS) break;
        }
        return total;
      };
      if (options.deleteDays !== undefined) {
        // First the rows that go entirely: no point pruning what is about to be deleted.
        const deleteCutoff = new Date(now.getTime() - options.deleteDays * MS_PER_DAY);
        const deleted = await inBatches(() => deleteFinishedDeliveries(options.db, deleteCutoff, RETENTION_BATCH_ROWS));
        if (deleted > 0) {
          options.metrics?.retentionDeleted.inc(deleted);
          options.logger.info({ deleted, deleteDays: options.deleteDays }, 'retention deleted finished ledger rows');
        }
      }
      const pruned = await inBatches(() => pruneDeliveryPayloads(options.db, cutoff, RETENTION_BATCH_ROWS));
      if (pruned > 0) {
        options.metrics?.retentionPruned.inc(pruned);
        options.logger.info({ pruned, retentionDays: options.retentionDays }, 'retention pruned ledger payloads');
      }
      return pruned;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  const schedule = (delayMs: number) => {
    timer = setTimeout(async () => {
      try {
        await runOnce();
      } catch (error) {
        options.logger.warn({ err: error }, 'retention run failed; retrying next interval');
      }
      if (!stopped) schedule(options.intervalMs ?? RETENTION_INTERVAL_MS);
    }, delayMs);
    timer.unref();
  };

  return {
    runOnce,
    start() {
      stopped = false;
      schedule(options.firstRunMs ?? RETENTION_FIRST_RUN_MS);
    },
    async stop() {
      stopped = true;
      halt = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
