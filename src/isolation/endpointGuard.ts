/**
 * The decision path's view of the workers' endpoint breakers (contract/endpoint.ts
 * `EndpointGuard`): a synchronous answer from memory, refreshed from Redis (and, with a store,
 * the disabled endpoints from Postgres) every `refreshMs`, so `evaluateToolCall` gains no round
 * trip. An endpoint is learnt the first time it is asked about: its first answer is "closed".
 * Each decision's outcome feeds the same breaker the workers use, so decision traffic alone can
 * open it, probe it and close it again.
 */
import { randomUUID } from 'node:crypto';
import { ALL_TENANTS, scopedEndpointKey, splitScopedKey, type EndpointGuard } from '../contract/endpoint.ts';
import { resolveConfig } from '../config/resolveConfig.ts';
import { silentLogger, type Logger } from '../observability/logger.ts';
import { storeOf } from '../store/db.ts';
import { listEndpointPolicies } from '../store/endpointsRepo.ts';
import type { StoreHandle } from '../store/types.ts';
import { createEndpointGate, type EndpointGate } from './endpointGate.ts';
import { endpointKeyPrefix, isolationSettings } from './endpointIsolation.ts';
import { createQueueRedis, type QueueRedis } from '../queue/redisConnection.ts';

/** How often the cached states are re-read. */
export const GUARD_REFRESH_MS = 1_000;
/** Endpoints not asked about for this long are dropped from the refresh. */
const FORGET_AFTER_MS = 10 * 60_000;
/** The slot a decision takes to report its outcome is held this long at most. */
const RECORD_LEASE_MS = 60_000;

export type EndpointGuardOptions = {
  /** An ioredis connection or Cluster (not closed by the guard); default: one to REDIS_URL. */
  redis?: QueueRedis;
  redisUrl?: string;
  queueName?: string;
  queuePrefix?: string;
  /** Where disabled endpoints are read from; none → only breaker state counts. */
  store?: StoreHandle;
  refreshMs?: number;
  logger?: Logger;
  env?: Record<string, string | undefined>;
};

export type ClosableEndpointGuard = EndpointGuard & {
  /** Re-reads every known endpoint now (tests, and start-up before the first decision). */
  refresh(): Promise<void>;
  close(): Promise<void>;
};

export function createEndpointGuard(options: EndpointGuardOptions = {}): ClosableEndpointGuard {
  const config = resolveConfig(
    [
      'REDIS_URL',
      'HOOKRELAY_QUEUE',
      'HOOKRELAY_QUEUE_PREFIX',
      'HOOKRELAY_REDIS_CLUSTER',
      'HOOKRELAY_ENDPOINT_ISOLATION',
      'HOOKRELAY_ENDPOINT_CONCURRENCY',
      'HOOKRELAY_BREAKER_FAILURES',
      'HOOKRELAY_BREAKER_COOLDOWN_MS',
      'HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS',
    ],
    { env: options.env, queuePrefix: options.queuePrefix },
  );
  const settings = config.settings;
  const logger = options.logger ?? silentLogger();
  const owned = options.redis ? undefined : createQueueRedis(options.redisUrl ?? settings.REDIS_URL, config.redisCluster);
  owned?.on('error', (err: Error) => logger.debug({ err: err }, 'endpoint guard redis connection error'));
  const redis = options.redis ?? owned!;
  const prefix = config.queuePrefix;
  const gate: EndpointGate = createEndpointGate(redis, {
    keyPrefix: endpointKeyPrefix(prefix, options.queueName ?? settings.HOOKRELAY_QUEUE),
    policy: isolationSettings(settings).policy,
  });
  const asked = new Map<string, number>();
  let open = new Set<string>();
  // N2: endpoints an operator disabled for every tenant; and each scoped key's timeout floor (N3).
  let disabledForAll = new Set<string>();
  let floors = new Map<string, number>();
  // Each time an endpoint enters the open set it gets a new number (a warning is said once per opening).
  const openings = new Map<string, number>();
  let openingCount = 0;
  let refreshing: Promise<void> | undefined;
  let again: Promise<void> | undefined;
  let closed = false;

  // A refresh asked for while one is reading runs once more after it: an awaited refresh always
  // reflects what was stored when it was asked (a read started before an operator's reset would not).
  const refresh = (): Promise<void> => {
    if (refreshing) {
      again ??= refreshing.then(() => {
        again = undefined;
        return refresh();
      });
      return again;
    }
    refreshing = (async () => {
      const now = Date.now();
      for (const [key, at] of asked) if (now - at > FORGET_AFTER_MS) asked.delete(key);
      const keys = [...asked.keys()];
      const next = new Set<string>();
      try {
        const [snapshots, policies] = await Promise.all([
          Promise.all(keys.map((k) => gate.snapshot(k))),
          options.store ? listEndpointPolicies(storeOf(options.store).db) : Promise.resolve([]),
        ]);
        for (const s of snapshots) {
          if (!s) continue;
          // Open until its cooldown ends (then the next decision may probe); half-open while a probe is out.
          const until = s.state === 'open' ? s.openUntil : s.probeUntil;
          if (until !== null && until.getTime() > Date.now()) next.add(s.key);
        }
        const nextAll = new Set<string>();
        const nextFloors = new Map<string, number>();
        for (const p of policies) {
          const scoped = scopedEndpointKey(p.tenant, p.key);
          if (p.timeoutFloorMs !== null) nextFloors.set(scoped, p.timeoutFloorMs);
          if (!p.disabledAt) continue;
          if (p.tenant === ALL_TENANTS) nextAll.add(p.key);
          else next.add(scoped);
        }
        for (const key of keys) if (nextAll.has(splitScopedKey(key).endpoint)) next.add(key);
        disabledForAll = nextAll;
        floors = nextFloors;
        for (const key of next) if (!open.has(key)) openings.set(key, ++openingCount);
        for (const key of openings.keys()) if (!next.has(key)) openings.delete(key);
        open = next;
      } catch (error) {
        // Redis or Postgres away: keep the last answers (a decision still has its own timeout).
        logger.debug({ err: error }, 'could not refresh endpoint breaker states');
      }
    })().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  };

  const timer = setInterval(() => void refresh(), options.refreshMs ?? GUARD_REFRESH_MS);
  timer.unref();

  return {
    isOpen(key) {
      if (!asked.has(key)) queueMicrotask(() => void refresh());
      asked.set(key, Date.now());
      return open.has(key) || (disabledForAll.size > 0 && disabledForAll.has(splitScopedKey(key).endpoint));
    },
    floorMs(key) {
      return floors.get(key) ?? floors.get(scopedEndpointKey(ALL_TENANTS, splitScopedKey(key).endpoint));
    },
    record(key, ok) {
      if (closed) return;
      // Take a slot (which turns an open breaker past its cooldown half-open, this decision its
      // probe) and release it with the outcome: the transitions the workers' attempts make.
      const token = `decision:${randomUUID()}`;
      void gate
        .admit({ key, token, leaseMs: RECORD_LEASE_MS, cap: 0, rate: 0 })
        .then(async (admission) => {
          if (!admission.admitted) return;
          const released = await gate.release(key, token, ok ? 'ok' : 'fail');
          if (released.transition) {
            logger.info({ endpoint: key, to: released.transition }, 'endpoint circuit changed state (decision webhook)');
            void refresh();
          }
        })
        .catch((error: unknown) => logger.debug({ err: error }, 'could not record a decision outcome'));
    },
    opening(key) {
      return open.has(key) ? openings.get(key) : undefined;
    },
    refresh,
    async close() {
      closed = true;
      clearInterval(timer);
      await refreshing;
      owned?.disconnect();
    },
  };
}
