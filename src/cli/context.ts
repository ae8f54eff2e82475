import type { Queue } from 'bullmq';
import { resolveLoadedConfig } from '../config/resolveConfig.ts';
import { loadSettings, type Settings } from '../config/settings.ts';
import { openOperatorQueue, type OperatorQueue } from '../admin/operatorQueue.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import type { Store } from '../store/db.ts';
import { openCliStore } from './cliStore.ts';

/** What a CLI command works with: settings, the store, and (lazily) the delivery queue and endpoint gate. */
export type CliContext = {
  settings: Settings;
  store: Store;
  queue(): Promise<Queue<DeliveryJobData>>;
  /** The queue and gate as the console holds them too (admin/operatorQueue.ts). */
  operator: OperatorQueue;
  close(): Promise<void>;
};

async function openCliContext(): Promise<CliContext> {
  // Read and resolved once: every command of this run works from this configuration.
  const config = resolveLoadedConfig(loadSettings());
  const { settings } = config;
  const store = await openCliStore(settings, { create: false });
  const operator = openOperatorQueue(config);
  return {
    settings,
    store,
    queue: operator.queue,
    operator,
    async close() {
      await operator.close();
      await store.close();
    },
  };
}
/** Run a command body with an open context that is always closed. */
export async function withContext<T>(body: (ctx: CliContext) => Promise<T>): Promise<T> {
  const ctx = await openCliContext();
  try {
    return await body(ctx);
  } finally {
    await ctx.close();
  }
}
