/**
 * F2/F3 on the producer's side of Redis: whether a job add may be sent now. Once Redis is known
 * down — its connection lost, or an add that failed or did not answer in time — enqueue answers at
 * once with `queued: false` (the ledger rows are committed; the worker's reconciler adds the jobs)
 * instead of waiting `queueTimeoutMs` per event, and nothing is left queued in the client to be
 * sent later (a job added after its row was delivered would be sent again). It is known up again
 * when the connection is ready and answers a PING, probed in the background. One log line each way.
 */
import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../util/withTimeout.ts';
import type { QueueRedis } from './redisConnection.ts';

/** How often a known-down Redis is asked (PING) whether it answers again. */
const PROBE_INTERVAL_MS = 1_000;
/** A PING that has not answered in this long counts as no answer. */
const PROBE_TIMEOUT_MS = 1_000;

/** `up`: send the add. `connecting`: never connected yet, no failure seen: wait for it (bounded). `down`: answer at once. */
type RedisState = 'up' | 'connecting' | 'down';

export type RedisAvailability = {
  state(): RedisState;
  /** Resolves true once the connection is ready, false after `timeoutMs` (or once it is known down). */
  waitUp(timeoutMs: number): Promise<boolean>;
  /** An add failed for want of Redis or did not answer in time: known down until a probe answers. */
  failed(error?: unknown): void;
  close(): void;
};

export function createRedisAvailability(connection: QueueRedis, logger: Logger): RedisAvailability {
  let downSince: number | undefined;
  let probe: NodeJS.Timeout | undefined;
  let closed = false;
  const ready = () => connection.status === 'ready';

  const markUp = () => {
    if (downSince === undefined) return;
    const ms = Date.now() - downSince;
    downSince = undefined;
    clearInterval(probe);
    probe = undefined;
    logger.info({ dependency: 'redis', outageMs: ms }, `redis answers again after ${(ms / 1000).toFixed(1)} s; enqueue adds delivery jobs again`);
  };
  const markDown = (error?: unknown) => {
    if (downSince !== undefined || closed) return;
    downSince = Date.now();
    logger.warn(
      { dependency: 'redis', ...(error instanceof Error ? { err: error } : {}) },
      'redis is unreachable (REDIS_URL): enqueue answers at once with queued: false (the ledger rows are committed; the worker adds their jobs); probing in the background',
    );
    probe = setInterval(() => {
      if (!ready()) return; // the client reconnects on its own; its `ready` ends the outage
      void withTimeout(
        connection.ping().then(
          () => true,
          () => false,
        ),
        PROBE_TIMEOUT_MS,
        false,
      ).then((answered) => {
        if (answered) markUp();
      });
    }, PROBE_INTERVAL_MS);
    probe.unref();
  };

  let lastError: unknown;
  const onError = (error: unknown) => {
    lastError = error;
  };
  // A lost connection is an outage at once (nothing may wait in the client for it to come back).
  const onClose = () => markDown(lastError);
  const onReady = () => markUp();
  connection.on('error', onError);
  connection.on('close', onClose);
  connection.on('ready', onReady);

  return {
    state() {
      if (downSince !== undefined) return 'down';
      if (ready()) return 'up';
      return lastError === undefined ? 'connecting' : 'down';
    },
    waitUp(timeoutMs) {
      if (ready()) return Promise.resolve(true);
      if (downSince !== undefined) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const done = (up: boolean) => {
          clearTimeout(timer);
          connection.off('ready', onUp);
          connection.off('close', onDown);
          resolve(up);
        };
        const onUp = () => done(true);
        const onDown = () => done(false);
        const timer = setTimeout(() => done(false), timeoutMs);
        connection.once('ready', onUp);
        connection.once('close', onDown);
      });
    },
    failed: (error) => markDown(error ?? lastError),
    close() {
      closed = true;
      clearInterval(probe);
      connection.off('error', onError);
      connection.off('close', onClose);
      connection.off('ready', onReady);
    },
  };
}
