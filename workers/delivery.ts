/**
 * The worker process: config → store → queue worker → HTTP server → graceful shutdown.
 * `hookrelay start` (and `npm start`) runs it on the embedded store when DATABASE_URL is unset.
 */
import { loadSettings, type Settings } from '../src/config/settings.ts';
import { createLogger, type Logger } from '../src/observability/logger.ts';
import { openStore, type Store } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { serveEmbeddedStore } from '../src/store/embedded.ts';
import { ensureRedis } from '../src/queue/redisConnection.ts';
import { startDeliveryService, type DeliveryService } from '../src/queue/service.ts';

/** Postgres `application_name` of the worker's connections (operators can tell them apart). */
export const WORKER_APPLICATION_NAME = 'hookrelay-worker';
/** The worker's pool: batched ledger statements, the reconciler, retention and readiness probes. */
export const WORKER_POOL_SIZE = 10;

export type WorkerProcessOptions = {
  env?: NodeJS.ProcessEnv;
  /** `start` may launch a private redis-server for the quickstart; `worker` never does. */
  allowPrivateRedis?: boolean;
  concurrency?: number;
  logger?: Logger;
};

export type RunningWorker = { settings: Settings; store: Store; service: DeliveryService; databaseUrl?: string; stop(): Promise<void> };

/** Adds `application_name` to a postgres URL unless the operator set one. */
export function withApplicationName(databaseUrl: string, name = WORKER_APPLICATION_NAME): string {
  try {
    const url = new URL(databaseUrl);
    if (!url.searchParams.has('application_name')) url.searchParams.set('application_name', name);
    return url.toString();
  } catch {
    return databaseUrl;
  }
}

export async function startWorkerProcess(options: WorkerProcessOptions = {}): Promise<RunningWorker> {
  const settings = loadSettings(options.env ?? process.env);
  if (options.concurrency !== undefined) settings.HOOKRELAY_CONCURRENCY = options.concurrency;
  const logger = options.logger ?? createLogger({ level: settings.LOG_LEVEL });
  const stops: Array<() => Promise<void>> = [];

  const redis = options.allowPrivateRedis
    ? await ensureRedis(settings.REDIS_URL, settings.HOOKRELAY_DATA_DIR, logger)
    : { url: settings.REDIS_URL, stop: async () => undefined };
  stops.push(redis.stop);

  const store = await openStore({
    databaseUrl: settings.DATABASE_URL ? withApplicationName(settings.DATABASE_URL) : undefined,
    maxConnections: WORKER_POOL_SIZE,
    dataDir: settings.HOOKRELAY_DATA_DIR,
    onPoolError: (err) => logger.warn({ err: err.message }, 'postgres connection lost; the pool reconnects'),
  });
  stops.unshift(() => store.close());
  await migrateStore(store);

  let databaseUrl = settings.DATABASE_URL;
  if (store.kind === 'pglite') {
    const served = await serveEmbeddedStore(store, settings.HOOKRELAY_DATA_DIR);
    databaseUrl = served.databaseUrl;
    stops.unshift(served.stop);
    logger.info({ DATABASE_URL: databaseUrl }, 'embedded store served; the CLI and a server app on this machine can use this DATABASE_URL');
  }

  const service = await startDeliveryService({ settings: { ...settings, REDIS_URL: redis.url }, store, logger });
  stops.unshift(async () => {
    await service.stop();
  });

  logger.info({ store: store.kind, queue: settings.HOOKRELAY_QUEUE, concurrency: settings.HOOKRELAY_CONCURRENCY, httpPort: service.httpPort ?? null }, 'ready');
  let stopped = false;
  return {
    settings,
    store,
    service,
    databaseUrl,
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const stop of stops) await stop().catch((err: unknown) => logger.warn({ err: String(err) }, 'error while stopping'));
    },
  };
}

/** Run until SIGINT/SIGTERM, then stop cleanly and exit 0 (Q9). */
export async function runUntilSignal(options: WorkerProcessOptions = {}): Promise<void> {
  const running = await startWorkerProcess(options);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await running.stop();
}
