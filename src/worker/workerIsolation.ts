/**
 * Endpoint isolation as the worker sets it up: per-endpoint cap, rate limit and breaker in Redis,
 * disable in Postgres (endpointIsolation.ts), on a Redis connection of its own.
 */
import type { Settings } from '../config/settings.ts';
import { createEndpointGate } from '../isolation/endpointGate.ts';
import { createEndpointIsolation, type EndpointIsolation, isolationSettings } from '../isolation/endpointIsolation.ts';
import { createPolicyAcknowledger } from '../isolation/policyAcks.ts';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import { createQueueRedis, type QueueRedis } from '../queue/redisConnection.ts';
import type { Db } from '../store/db.ts';

export type WorkerIsolation = {
  /** Not started yet: the service awaits its start(). */
  isolation: EndpointIsolation;
  /** Its connection: the breaker-state gauges read through it, and the stop disconnects it. */
  redis: QueueRedis;
};

/** Undefined when HOOKRELAY_ENDPOINT_ISOLATION is off (no connection is opened). */
export function createWorkerIsolation(p: {
  settings: Settings;
  redisCluster: boolean;
  /** The queue's key base: endpoint state lives beside the queue's own keys. */
  keyPrefix: string;
  db: Db;
  logger: Logger;
  metrics: DeliveryMetrics;
}): WorkerIsolation | undefined {
  const { settings, logger } = p;
  const config = isolationSettings(settings);
  if (!config.enabled) return undefined;
  // Its own connection, auto-pipelined: the admits and releases of one tick go out as one write
  // (on the queue's connection each was a socket write of its own, ~20 % of a delivery's cost).
  const redis = createQueueRedis(settings.REDIS_URL, p.redisCluster, { enableAutoPipelining: true });
  redis.on('error', (err: Error) => logger.debug({ err: err }, 'endpoint isolation redis connection error'));
  const isolation = createEndpointIsolation({
    gate: createEndpointGate(redis, { keyPrefix: p.keyPrefix, policy: config.policy }),
    acks: createPolicyAcknowledger(redis, p.keyPrefix),
    db: p.db,
    defaultCap: config.defaultCap,
    logger,
    metrics: p.metrics,
  });
  return { isolation, redis };
}
