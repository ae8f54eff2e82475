/** What every console route works with: the ledger, settings, the operator's queue, access, the sampler. */
import type { Settings } from '../config/settings.ts';
import type { Logger } from '../observability/logger.ts';
import type { OperatorQueue } from '../admin/operatorQueue.ts';
import { replayDeliveries, type ReplayResult } from '../admin/replay.ts';
import type { Db } from '../store/db.ts';
import type { ConsoleAccess } from './access.ts';
import type { QueueSampler } from './queueSampler.ts';

export type ConsoleContext = {
  db: Db;
  settings: Settings;
  operator: OperatorQueue;
  logger: Logger;
  access: ConsoleAccess;
  sampler: QueueSampler;
};

/** The shared replay loop (admin/replay.ts); each replayed endpoint's open breaker probes now. */
export async function runReplay(ctx: ConsoleContext, ids: readonly string[]): Promise<ReplayResult[]> {
  const probe = (keys: readonly string[]) => ctx.operator.fromRedis((gate) => Promise.all(keys.map((k) => gate.probeNow(k))));
  return replayDeliveries(ctx.db, await ctx.operator.queue(), ids, { includeAccepted: false, probe });
}
