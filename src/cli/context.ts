import { Queue } from 'bullmq';
import { loadSettings, type Settings } from '../config/settings.ts';
import { createQueueRedis } from '../queue/redisConnection.ts';
import { DEFAULT_QUEUE_PREFIX, type DeliveryJobData } from '../queue/types.ts';
import type { Store } from '../store/db.ts';
import { openCliStore } from './cliStore.ts';

/** What a CLI command works with: settings, the store, and (lazily) the delivery queue. */
export type CliContext = {
  settings: Settings;
  store: Store;
  queue(): Queue<DeliveryJobData>;
  close(): Promise<void>;
};

export async function openCliContext(): Promise<CliContext> {
  const settings = loadSettings();
  const store = await openCliStore(settings);
  let queue: Queue<DeliveryJobData> | undefined;
  let redis: ReturnType<typeof createQueueRedis> | undefined;
  return {
    settings,
    store,
    queue() {
      if (!queue) {
        redis = createQueueRedis(settings.REDIS_URL, settings.HOOKRELAY_REDIS_CLUSTER === true, {
          maxRetriesPerRequest: 3,
          enableOfflineQueue: false,
          lazyConnect: false,
        });
        redis.on('error', () => undefined); // surfaced by the command that needed Redis
        queue = new Queue<DeliveryJobData>(settings.HOOKRELAY_QUEUE, { connection: redis, prefix: settings.HOOKRELAY_QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX });
      }
      return queue;
    },
    async close() {
      await queue?.close().catch(() => undefined);
      redis?.disconnect();
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
