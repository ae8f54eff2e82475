/**
 * The worker's HTTP server: health, readiness (with the local spools, F1), metrics, the approval
 * answer endpoint (A3), QStash callbacks (with HOOKRELAY_PUBLIC_URL) and the caller's handlers
 * (the operator console), ops reads guarded by opsAccess and the console token.
 */
import type { LoadedConfig } from '../config/resolveConfig.ts';
import { createCredentialGuard, type CredentialGuard } from '../observability/credentialGuard.ts';
import { type PostRoute, type RequestHandler, type RunningHttpServer, startHttpServer } from '../observability/httpServer.ts';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import { opsAccessPolicy } from '../observability/opsAccess.ts';
import type { DeliveryQueueKeys } from '../queue/queueKeys.ts';
import type { QueueRedis } from '../queue/redisConnection.ts';
import type { SpoolSummary } from '../queue/spoolSummary.ts';
import { pingStore, type Db } from '../store/db.ts';
import { QSTASH_CALLBACK_PATH, QSTASH_FAILURE_PATH } from './qstash/callbackUrls.ts';
import { createRedisReplayGuard, type ReplayRedis } from './qstash/callbackReplay.ts';
import { importQStash } from './qstashLoading.ts';

type Readiness = { redis: () => Promise<boolean>; postgres: () => Promise<boolean> };

/** Redis and Postgres answer: /readyz, and the worker's `ready` line. */
export function dependencyReadiness(connection: QueueRedis, redisReady: () => boolean, db: Db): Readiness {
  return {
    redis: async () => redisReady() && (await connection.ping()) === 'PONG',
    postgres: async () => {
      await pingStore(db);
      return true;
    },
  };
}

export async function startServiceHttp(p: {
  config: LoadedConfig;
  db: Db;
  logger: Logger;
  metrics: DeliveryMetrics;
  readiness: Readiness;
  readSpool: () => Promise<SpoolSummary>;
  /** A3: the answer endpoint for chat buttons, when HOOKRELAY_APPROVAL_SECRETS is set. */
  approvalRoutes: Record<string, PostRoute>;
  connection: QueueRedis;
  redisReady: () => boolean;
  keys: DeliveryQueueKeys;
  credentialGuard: CredentialGuard | undefined;
  httpHandlers: RequestHandler[] | undefined;
}): Promise<RunningHttpServer> {
  const { settings } = p.config;
  const { logger, metrics } = p;
  const postRoutes: Record<string, PostRoute> = { ...p.approvalRoutes };
  if (settings.HOOKRELAY_PUBLIC_URL) {
    const { createQStashCallbackRoute } = await importQStash(() => import('./qstash/callbackRoute.ts'), 'HOOKRELAY_PUBLIC_URL');
    const route = createQStashCallbackRoute({
      db: p.db,
      publicUrl: settings.HOOKRELAY_PUBLIC_URL,
      currentSigningKey: settings.QSTASH_CURRENT_SIGNING_KEY,
      nextSigningKey: settings.QSTASH_NEXT_SIGNING_KEY,
      logger,
      metrics,
      env: p.config.env,
      maxPayloadBytes: settings.HOOKRELAY_MAX_PAYLOAD_BYTES,
      // Next to the queue's own keys: one prefix to list, expire and delete.
      replay: createRedisReplayGuard({
        redis: p.connection as unknown as ReplayRedis,
        keyPrefix: p.keys.qstashSeen,
        ready: p.redisReady,
      }),
    });
    postRoutes[QSTASH_CALLBACK_PATH] = route;
    postRoutes[QSTASH_FAILURE_PATH] = route;
  }
  const consoleToken = settings.HOOKRELAY_CONSOLE_TOKEN;
  return startHttpServer({
    port: settings.HOOKRELAY_HTTP_PORT,
    logger,
    registry: metrics.registry,
    readiness: p.readiness,
    readinessDetails: async () => ({ spool: spoolView(await p.readSpool()) }),
    postRoutes,
    ops: opsAccessPolicy({
      allowFrom: settings.HOOKRELAY_OPS_ALLOW_FROM,
      hosts: settings.HOOKRELAY_OPS_HOSTS,
      knownUrls: [settings.HOOKRELAY_PUBLIC_URL, settings.HOOKRELAY_CONSOLE_ORIGIN],
    }),
    ...(consoleToken ? { opsBearer: { token: consoleToken, guard: p.credentialGuard ?? createCredentialGuard({ logger }) } } : {}),
    onRefused: (reason) => metrics.httpRefused.inc({ reason }),
    ...(p.httpHandlers ? { handlers: p.httpHandlers } : {}),
  });
}

/** `/readyz`'s view of the local spools (F1). */
function spoolView(s: SpoolSummary): Record<string, number | null> {
  return {
    events: s.events,
    bytes: s.bytes,
    oldestAgeSeconds: s.oldestAt ? Math.round((Date.now() - s.oldestAt.getTime()) / 1000) : null,
    rejected: s.rejected,
  };
}
