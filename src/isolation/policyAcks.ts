/**
 * How an operator knows every live worker applied an endpoint change (disable, hold, enable).
 * A worker re-reads the endpoints table every couple of seconds; before each read it notes the
 * policy generation (a Redis counter), and after the read it acknowledges that generation with
 * its heartbeat. An operator changes Postgres first, then bumps the generation to G, and waits
 * until every worker whose heartbeat is recent has acknowledged G or more: such a worker read the
 * table after the change, so each delivery it admits from then on sees it.
 *
 * Keys sit under the queue's prefix and name, beside the endpoint gate's (`<prefix>:<queue>:policy-…`),
 * so a hash-tagged prefix keeps them in one Redis Cluster slot. Time is Redis's own (`TIME`).
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/** A worker whose last acknowledgement is older than this is not counted as live. */
const POLICY_LIVE_MS = 15_000;
/** A worker not heard of for an hour is forgotten. */
const FORGET_MS = 3_600_000;

const ACK_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
-- Never backwards: a slow read that began before a newer one must not lower the acknowledged generation.
local had = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[2]) > had then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) end
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
for _, id in ipairs(gone) do redis.call('HDEL', KEYS[2], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
return now`;

const LIVE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[1]), '+inf')
local out = {}
for _, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[2], id) or '0'
end
return out`;

type Keys = { generation: string; workers: string; acks: string };

function keysOf(keyPrefix: string): Keys {
  return { generation: `${keyPrefix}:policy-gen`, workers: `${keyPrefix}:policy-workers`, acks: `${keyPrefix}:policy-acks` };
}

/** A worker's side: note the generation before reading the table, acknowledge it after. */
export type PolicyAcknowledger = {
  readonly workerId: string;
  generation(): Promise<number>;
  acknowledge(generation: number): Promise<void>;
  /** A stopping worker stops counting as live at once. */
  leave(): Promise<void>;
};

/** `keyPrefix` as the endpoint gate's: `endpointKeyPrefix(prefix, queue)`. */
export function createPolicyAcknowledger(
  redis: Redis | Cluster,
  keyPrefix: string,
  workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
): PolicyAcknowledger {
  const keys = keysOf(keyPrefix);
  return {
    workerId,
    async generation() {
      return Number((await redis.get(keys.generation)) ?? 0);
    },
    async acknowledge(generation) {
      await redis.eval(ACK_LUA, 2, keys.workers, keys.acks, workerId, generation, FORGET_MS);
    },
    async leave() {
      await Promise.all([redis.zrem(keys.workers, workerId), redis.hdel(keys.acks, workerId)]);
    },
  };
}

export type PolicyConfirmation = {
  /** The generation the change was published as. */
  generation: number;
  /** Live workers that read the table after the change. */
  applied: string[];
  /** Live workers that had not within the bound. */
  pending: string[];
};

/**
 * The operator's side, after the change is committed in Postgres: bump the generation, then wait
 * (polling every `pollMs`) until every live worker acknowledged it, or `timeoutMs` passed.
 */
export async function confirmPolicyApplied(
  redis: Redis | Cluster,
  keyPrefix: string,
  options: { timeoutMs: number; pollMs?: number; liveMs?: number },
): Promise<PolicyConfirmation> {
  const keys = keysOf(keyPrefix);
  const generation = await redis.incr(keys.generation);
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const flat = (await redis.eval(LIVE_LUA, 2, keys.workers, keys.acks, options.liveMs ?? POLICY_LIVE_MS)) as string[];
    const applied: string[] = [];
    const pending: string[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) (Number(flat[i + 1]) >= generation ? applied : pending).push(String(flat[i]));
    if (pending.length === 0 || Date.now() >= deadline) return { generation, applied, pending };
    await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs ?? 200, Math.max(1, deadline - Date.now()))));
  }
}
