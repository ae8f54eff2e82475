/**
 * Whether Redis and Postgres answer, as the worker sees them (Q13): one log line when one becomes
 * unreachable and one when it is back (with how long it was away), the up/down state for
 * readiness and the stop, and the time spent in outage for the metrics.
 */
import type { Logger } from '../observability/logger.ts';
import type { QueueRedis } from '../queue/redisConnection.ts';

type Dependency = 'redis' | 'postgres';
const DEPENDENCIES: readonly Dependency[] = ['redis', 'postgres'];
const WHERE: Record<Dependency, string> = { redis: 'REDIS_URL', postgres: 'DATABASE_URL' };
const WHILE_DOWN: Record<Dependency, string> = {
  redis: 'no job is taken and finished jobs are acknowledged once it is back; outcomes are still written to the ledger',
  postgres: 'no job is taken; finished attempts keep their outcome in memory and write it when Postgres is back',
};
/** A Redis connection lost for less than this (a reconnect at once) is not an outage. */
const REDIS_DOWN_AFTER_MS = 1_000;

type DependencySnapshot = { dependency: Dependency; up: boolean; outageSeconds: number };

export type DependencyHealth = {
  markDown(dependency: Dependency, error?: unknown): void;
  markUp(dependency: Dependency): void;
  isDown(dependency: Dependency): boolean;
  /** The dependencies unreachable now. */
  downNow(): Dependency[];
  /** Per dependency: up now, and the seconds spent unreachable since start (the current outage included). */
  snapshot(): DependencySnapshot[];
  /** Follows a Redis connection: down once it has not been ready for a second, up when it is ready again. */
  watchRedis(connection: QueueRedis): void;
  stop(): void;
};

export function createDependencyHealth(logger: Logger): DependencyHealth {
  const downSince = new Map<Dependency, number>();
  const outageMs = new Map<Dependency, number>(DEPENDENCIES.map((d) => [d, 0]));
  const timers = new Set<NodeJS.Timeout>();
  const health: DependencyHealth = {
    markDown(dependency, error) {
      if (downSince.has(dependency)) return;
      downSince.set(dependency, Date.now());
      logger.warn(
        { dependency, ...(error instanceof Error ? { err: error } : {}) },
        `${dependency} is unreachable (${WHERE[dependency]}): ${WHILE_DOWN[dependency]}; retrying until it answers`,
      );
    },
    markUp(dependency) {
      const since = downSince.get(dependency);
      if (since === undefined) return;
      downSince.delete(dependency);
      const ms = Date.now() - since;
      outageMs.set(dependency, (outageMs.get(dependency) ?? 0) + ms);
      logger.info({ dependency, outageMs: ms }, `${dependency} answers again after ${(ms / 1000).toFixed(1)} s; deliveries resume`);
    },
    isDown: (dependency) => downSince.has(dependency),
    downNow: () => DEPENDENCIES.filter((d) => downSince.has(d)),
    snapshot: () =>
      DEPENDENCIES.map((dependency) => {
        const since = downSince.get(dependency);
        const ms = (outageMs.get(dependency) ?? 0) + (since === undefined ? 0 : Date.now() - since);
        return { dependency, up: since === undefined, outageSeconds: ms / 1000 };
      }),
    watchRedis(connection) {
      let lastError: unknown;
      connection.on('error', (error: unknown) => {
        lastError = error;
      });
      connection.on('close', () => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (connection.status !== 'ready' && connection.status !== 'end') health.markDown('redis', lastError);
        }, REDIS_DOWN_AFTER_MS);
        timers.add(timer);
      });
      connection.on('ready', () => health.markUp('redis'));
    },
    stop() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
  return health;
}
