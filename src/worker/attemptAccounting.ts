/**
 * What a stop must drain (Q9): the jobs running now, and the attempts begun whose outcome is not
 * written yet (delivery ids). A job whose outcome is written but that waits on Redis (its
 * acknowledgement, its endpoint's slot) is done. Also the ledger writer and in-flight marks (Q12)
 * the processor is given, wrapped to keep that account.
 */
import type { Logger } from '../observability/logger.ts';
import type { Db } from '../store/db.ts';
import { createInFlightTracker, type InFlightTracker } from './attempt/inFlightTracker.ts';
import { createLedgerWriter, type LedgerWriter } from './attempt/ledgerWriter.ts';
import type { DeliveryProcessor } from './attempt/processor.ts';
import type { PostgresWait } from './postgresWait.ts';

export type AttemptAccounting = {
  ledger: LedgerWriter;
  inFlight: InFlightTracker;
  /** `processor`, counting the jobs it runs and forgetting each one's attempt when it ends. */
  counted(processor: DeliveryProcessor): DeliveryProcessor;
  /** Jobs running now (the stop's one line reports them). */
  running(): number;
  /** Attempts begun whose outcome is not written yet. */
  unrecorded(): number;
};

export function createAttemptAccounting(p: {
  db: Db;
  logger: Logger;
  /** The Postgres wait's run; the gate is built after this (its pause needs the worker). */
  run: PostgresWait['run'];
}): AttemptAccounting {
  const ledgerWriter = createLedgerWriter(p.db, { logger: p.logger });
  // Q12: attempts still running after a second get their in_flight row, with a lease of the
  // webhook timeout + one lock duration (past it a row whose job vanished is re-enqueued, Q2).
  const unrecorded = new Set<string>();
  const tracker = createInFlightTracker({
    mark: (marks) => p.run(() => Promise.all(marks.map((m) => ledger.markInFlight(m)))).then(() => undefined),
    onError: (error) => p.logger.debug({ err: error }, 'could not mark long-running attempts in_flight'),
  });
  const inFlight: InFlightTracker = {
    begin(key, mark) {
      unrecorded.add(mark.id);
      tracker.begin(key, mark);
    },
    end: (key) => tracker.end(key),
    stop: () => tracker.stop(),
  };
  const ledger: LedgerWriter = {
    ...ledgerWriter,
    async record(outcome) {
      await ledgerWriter.record(outcome);
      unrecorded.delete(outcome.id);
    },
  };
  let running = 0;
  return {
    ledger,
    inFlight,
    counted: (processor) => async (job, token) => {
      running++;
      try {
        return await processor(job, token);
      } finally {
        running--;
        unrecorded.delete(job.data.deliveryId);
      }
    },
    running: () => running,
    unrecorded: () => unrecorded.size,
  };
}
