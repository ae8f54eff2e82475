/**
 * The worker's approval sweep (A1, A3), every HOOKRELAY_APPROVAL_SWEEP_MS: pending requests past
 * their expiry become `expired`, then every approval event the ledger does not have yet is
 * enqueued (a CLI or console decision, an expiry, an announcement a server app could not make).
 */
import type { Logger } from '../observability/logger.ts';
import { expireDueApprovals } from '../store/approvalsRepo.ts';
import type { Db } from '../store/db.ts';
import type { ApprovalAnnouncer } from './announce.ts';

export type ApprovalSweeper = { start(): void; stop(): Promise<void>; sweepOnce(): Promise<void> };

export function createApprovalSweeper(options: { db: Db; announcer: ApprovalAnnouncer; intervalMs: number; logger: Logger }): ApprovalSweeper {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const sweepOnce = async () => {
    await expireDueApprovals(options.db);
    await options.announcer.sweep();
  };
  const tick = () => {
    running = sweepOnce()
      .catch((err: unknown) => options.logger.warn({ err }, 'approval sweep failed; retried at the next one'))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, options.intervalMs).unref();
      });
  };
  return {
    start() {
      stopped = false;
      tick();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
    sweepOnce,
  };
}
