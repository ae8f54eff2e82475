import { spawn } from 'node:child_process';
import { ensurePrivateDir } from '../store/privateFiles.ts';
import path from 'node:path';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import { RedisUnavailableError } from '../contract/errors.ts';

/** A queue connection: one Redis, or a Redis Cluster reached through one of its nodes. */
export type QueueRedis = Redis | Cluster;

/**
 * ioredis 6 changed two defaults hookrelay's outage handling was measured with; both are kept as
 * they were. RESP2: RESP3 (HELLO 3, maintenance notifications) gives hookrelay nothing — the
 * "legacy" reply mapping returns RESP2's shapes anyway — and costs a round trip per connection
 * (the CLI opens one per command). Reconnects every 50 ms × attempt up to 2 s, not 6's exponential
 * back-off to 5 s: a Redis that is back is seen within 2 s (Q13, F2).
 */
const REDIS_BASE_OPTIONS = {
  protocol: 2,
  retryStrategy: (times: number) => Math.min(times * 50, 2_000),
} as const satisfies RedisOptions;

/** BullMQ needs blocking connections that never give up on a command (maxRetriesPerRequest: null). */
function createRedis(url: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, { ...REDIS_BASE_OPTIONS, maxRetriesPerRequest: null, enableReadyCheck: true, ...extra });
}

/**
 * The connection the producer, the worker and the CLI use. With `cluster`, `url` is a seed node
 * of a Redis Cluster (ioredis discovers the others); BullMQ then needs a hash-tagged prefix
 * (checked by the settings).
 */
export function createQueueRedis(url: string, cluster: boolean, extra: RedisOptions = {}): QueueRedis {
  if (!cluster) return createRedis(url, extra);
  return new Cluster([url], {
    redisOptions: { ...REDIS_BASE_OPTIONS, maxRetriesPerRequest: null, enableReadyCheck: true, ...extra },
    ...(extra.enableOfflineQueue === false ? { enableOfflineQueue: false } : {}),
  });
}

/** Does a Redis answer PING at this URL within the timeout? */
export async function redisAnswers(url: string, timeoutMs = 1_500): Promise<boolean> {
  const client = new Redis(url, { protocol: 2, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * The quickstart's Redis: use REDIS_URL when it answers; otherwise, for the default local URL
 * with `redis-server` on PATH, start a private one with its files under the data dir.
 */
export async function ensureRedis(url: string, dataDir: string, logger: Logger): Promise<{ url: string; stop(): Promise<void> }> {
  if (await redisAnswers(url)) return { url, stop: async () => undefined };
  const { statSync } = await import('node:fs');
  const binary = (process.env.PATH ?? '')
    .split(path.delimiter)
    .map((d) => path.join(d, 'redis-server'))
    .find((p) => {
      try {
        return statSync(p).isFile();
      } catch {
        return false;
      }
    });
  const parsed = new URL(url);
  const local = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(parsed.hostname);
  if (!binary || !local) {
    throw new RedisUnavailableError(
      `No Redis answers at REDIS_URL (${parsed.protocol}//${parsed.hostname}:${parsed.port || 6379}). Start one (e.g. \`docker compose up -d redis\` or \`redis-server\`) or set REDIS_URL.`,
    );
  }
  const dir = path.resolve(dataDir, 'redis');
  ensurePrivateDir(dir); // W7: its append-only files hold job data: the owner's alone
  const port = parsed.port || '6379';
  const child = spawn(binary, ['--bind', '127.0.0.1', '--port', port, '--dir', dir, '--appendonly', 'yes', '--maxmemory-policy', 'noeviction', '--save', ''], {
    stdio: 'ignore',
  });
  logger.info({ port, dir }, 'started a private redis-server for the embedded quickstart');
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (await redisAnswers(url, 500)) {
      return {
        url,
        async stop() {
          child.kill('SIGTERM');
        },
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new RedisUnavailableError(`A private redis-server did not answer on port ${port} within 10 s; start Redis yourself and set REDIS_URL.`);
}
