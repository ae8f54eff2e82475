/**
 * The delivery worker as a function: settings → store (migrated unless told not to) → queue
 * worker → HTTP server, with one ordered stop. `hookrelay start` / `hookrelay worker` run it until
 * a signal; applications that want their own worker file (with an email look-up, say) call it.
 */
import { resolveLoadedConfig } from '../config/resolveConfig.ts';
import { loadSettings, type Settings } from '../config/settings.ts';
import { createCredentialGuard } from '../observability/credentialGuard.ts';
import type { RequestHandler } from '../observability/httpServer.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import type { EmailLookup } from '../notify/emailCache.ts';
import { createWebhookPayloadBuilder } from '../notify/buildPayload.ts';
import { ensureRedis } from '../queue/redisConnection.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDeliveryService } from './service.ts';
import { openStore } from '../store/db.ts';
import type { StoreHandle } from '../store/types.ts';
import { serveEmbeddedStore } from '../store/embedded.ts';
import { migrateStore } from '../store/migrate.ts';
import { withDefined } from '../util/withDefined.ts';

/** Postgres `application_name` of the worker's connections (operators can tell them apart). */
export const WORKER_APPLICATION_NAME = 'hookrelay-worker';
/** The worker's pool: batched ledger statements, the reconciler, retention and readiness probes. */
export const WORKER_POOL_SIZE = 10;

export type StartDeliveryWorkerOptions = {
  /**
   * Reads a user's email for `userEmail` (B3–B5): one cache per worker, shared by all its
   * deliveries; a throwing look-up or a missing email omits the field, the delivery still goes.
   */
  emailLookup?: EmailLookup;
  /** The environment settings are read from and header templates resolve from (W2). Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Settings already loaded (default: read from `env`). */
  settings?: Settings;
  logger?: Logger;
  /** Jobs processed at once (default HOOKRELAY_CONCURRENCY). */
  concurrency?: number;
  /** Apply the migrations at start (default HOOKRELAY_MIGRATE, true); false when a migrate job owns them. */
  migrate?: boolean;
  /** BullMQ key prefix; must be the producer's (default `bull`). */
  queuePrefix?: string;
  /** `hookrelay start` may launch a private redis-server for the quickstart; nothing else does. */
  allowPrivateRedis?: boolean;
};

export type RunningDeliveryWorker = {
  settings: Settings;
  /** The store the worker opened (pass its `db` to createStoreRecordSink, say); closed by stop(). */
  store: StoreHandle;
  /** The worker HTTP server's port (health, metrics, QStash callbacks); undefined when off or busy. */
  httpPort: number | undefined;
  /** The DATABASE_URL in use: the configured one, or the embedded store's socket. */
  databaseUrl: string | undefined;
  /** Settles once Redis and Postgres both answered (the `ready` log line), or when stopped first. */
  ready: Promise<void>;
  /**
   * Q9: stop taking jobs, let in-flight ones finish (bounded), close Redis, HTTP and the store —
   * within HOOKRELAY_SHUTDOWN_TIMEOUT_MS + a few seconds whatever Redis and Postgres do. True when
   * the stop was clean (nothing cut off, the ledger flushed, every close step done in time).
   */
  stop(): Promise<boolean>;
};

const READY_POLL_MS = 500;
/** Bound on each closing step after the delivery service (console, store, embedded socket, private Redis). */
const STOP_STEP_TIMEOUT_MS = 2_000;

/** `step`, or false once STOP_STEP_TIMEOUT_MS passed (the step is left to finish, or not, on its own). */
async function withinStepTimeout(step: Promise<unknown>): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([step, new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), STOP_STEP_TIMEOUT_MS)))]);
  } finally {
    clearTimeout(timer);
  }
}
const READY_CHECK_TIMEOUT_MS = 2_000;

async function answers(check: () => Promise<boolean>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      check().catch(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), READY_CHECK_TIMEOUT_MS))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls until both answer (true) or the signal aborts (false); says once which one it waits for. */
async function waitUntilReady(
  checks: { redis: () => Promise<boolean>; postgres: () => Promise<boolean> },
  signal: AbortSignal,
  logger: Logger,
): Promise<boolean> {
  const waitingFor = new Set<string>();
  while (!signal.aborted) {
    const [redis, postgres] = await Promise.all([answers(checks.redis), answers(checks.postgres)]);
    if (redis && postgres) {
      if (waitingFor.size > 0) logger.info({ waitedFor: [...waitingFor] }, 'dependencies answer again');
      return true;
    }
    for (const [name, ok, where] of [
      ['redis', redis, 'REDIS_URL'],
      ['postgres', postgres, 'DATABASE_URL'],
    ] as const) {
      if (!ok && !waitingFor.has(name)) {
        waitingFor.add(name);
        logger.warn({ dependency: name }, `waiting for ${name} (${where}) to answer before reporting ready; deliveries start when it does`);
      }
    }
    // timers/promises removes its abort listener when the pause ends (one listener added per poll
    // leaked: a MaxListenersExceededWarning after 11 polls while a dependency was down).
    await sleep(READY_POLL_MS, undefined, { signal }).catch(() => undefined);
  }
  return false;
}

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

export async function startDeliveryWorker(options: StartDeliveryWorkerOptions = {}): Promise<RunningDeliveryWorker> {
  const base = options.settings ?? loadSettings(options.env);
  const settings: Settings = options.concurrency !== undefined ? { ...base, HOOKRELAY_CONCURRENCY: options.concurrency } : base;
  const logger = options.logger ?? createLogger({ level: settings.LOG_LEVEL });
  // Run in reverse order of start by stop(), and on a failed start, so nothing is left open. Each
  // step but the service's own (bounded itself) gets STOP_STEP_TIMEOUT_MS: a store or Redis that
  // does not answer never holds the process (Q9). False when a step failed or timed out.
  const stops: Array<{ name: string; run: () => Promise<unknown>; bounded?: true }> = [];
  const stopAll = async (): Promise<boolean> => {
    let clean = true;
    for (const step of stops.splice(0).reverse()) {
      const done = await (step.bounded ? step.run() : withinStepTimeout(step.run())).then(
        (result) => result !== false,
        (err: unknown) => {
          logger.warn({ err: err, step: step.name }, 'error while stopping');
          return false;
        },
      );
      if (!done && !step.bounded) logger.warn({ step: step.name, timeoutMs: STOP_STEP_TIMEOUT_MS }, `stop: ${step.name} did not close in time; left behind`);
      clean &&= done;
    }
    return clean;
  };

  try {
    const redis = options.allowPrivateRedis
      ? await ensureRedis(settings.REDIS_URL, settings.HOOKRELAY_DATA_DIR, logger)
      : { url: settings.REDIS_URL, stop: async () => undefined };
    stops.push({ name: 'private redis-server', run: redis.stop });
    // Resolved once, here: the delivery service and the console's queue share the prefix, the
    // cluster flag, the template pattern and the environment templates resolve from (W2).
    const config = resolveLoadedConfig({ ...settings, REDIS_URL: redis.url }, { env: options.env, queuePrefix: options.queuePrefix });

    const store = await openStore({
      databaseUrl: settings.DATABASE_URL ? withApplicationName(settings.DATABASE_URL) : undefined,
      maxConnections: WORKER_POOL_SIZE,
      dataDir: settings.HOOKRELAY_DATA_DIR,
      // Q13: the outage itself has one line (dependency health); each lost pool connection is debug.
      onPoolError: (err) => logger.debug({ err: err }, 'postgres connection lost; the pool reconnects'),
    });
    stops.push({ name: 'store', run: () => store.close() });
    if (options.migrate ?? settings.HOOKRELAY_MIGRATE) await migrateStore(store);
    else logger.info('migrations skipped (HOOKRELAY_MIGRATE=false / --no-migrate)');

    let databaseUrl = settings.DATABASE_URL;
    if (store.kind === 'pglite') {
      const served = await serveEmbeddedStore(store, settings.HOOKRELAY_DATA_DIR);
      databaseUrl = served.databaseUrl;
      stops.push({ name: 'embedded store socket', run: served.stop });
      logger.info({ DATABASE_URL: databaseUrl }, 'embedded store served; the CLI and a server app on this machine can use this DATABASE_URL');
    }

    // The operator console on the same HTTP server, only when its token is set.
    let consoleHandler: RequestHandler | undefined;
    // Known once the HTTP server listens (on every interface): the console's default public origin.
    let httpPort: number | undefined;
    // One token-guess throttle for the process: the console's sign-in and bearer, and /metrics' bearer.
    const credentialGuard = createCredentialGuard({ logger });
    if (settings.HOOKRELAY_CONSOLE_TOKEN) {
      const [{ createConsole }, { openOperatorQueue }] = await Promise.all([import('../console/consoleHandler.ts'), import('../admin/operatorQueue.ts')]);
      const operator = openOperatorQueue(config);
      const consoleApp = createConsole({
        db: store.db,
        settings,
        operator,
        token: settings.HOOKRELAY_CONSOLE_TOKEN,
        logger,
        listening: () => (httpPort === undefined ? undefined : { port: httpPort }),
        guard: credentialGuard,
      });
      stops.push({
        name: 'console',
        run: async () => {
          await consoleApp.close();
          await operator.close();
        },
      });
      consoleHandler = consoleApp.handle;
    }

    const service = await startDeliveryService({
      config,
      store,
      logger,
      // One builder per worker: its email cache (B4) is shared by this worker's deliveries only.
      payloadBuilder: createWebhookPayloadBuilder({ logger, ...withDefined({ emailLookup: options.emailLookup }) }),
      ...(consoleHandler ? { httpHandlers: [consoleHandler] } : {}),
      credentialGuard,
    });
    stops.push({ name: 'delivery service', run: () => service.stop(), bounded: true });
    httpPort = service.httpPort;

    // `ready` only once Redis and Postgres both answer; until then one line says what is awaited.
    const readyFields = {
      store: store.kind,
      queue: settings.HOOKRELAY_QUEUE,
      concurrency: settings.HOOKRELAY_CONCURRENCY,
      httpPort: service.httpPort ?? null,
      emailLookup: options.emailLookup !== undefined,
      console: consoleHandler ? `/console on port ${service.httpPort ?? '(http off)'}` : 'off (set HOOKRELAY_CONSOLE_TOKEN)',
    };
    const readiness = new AbortController();
    stops.push({ name: 'readiness wait', run: async () => readiness.abort() });
    const ready = waitUntilReady(service.readiness, readiness.signal, logger).then((ok) => {
      if (ok) logger.info(readyFields, 'ready');
    });
    let stopped: Promise<boolean> | undefined;
    return { settings, store, httpPort: service.httpPort, databaseUrl, ready, stop: () => (stopped ??= stopAll()) };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
