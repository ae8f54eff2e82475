/**
 * Endpoint isolation state shared by every worker (and the decision path): per endpoint, a
 * holder set (the concurrency cap), a GCRA rate limiter and a circuit breaker, in Redis, changed
 * only by the two scripts below so that each decision is atomic across processes and every
 * transition happens in exactly one call (and is counted once, by the process that made it).
 *
 * Keys sit under the queue's prefix (`<prefix>:<queue>:ep:…`), so a hash-tagged prefix keeps
 * them in the queue's Redis Cluster slot. Time is Redis's own (`TIME`): no clock skew between
 * workers. A Redis flush resets breakers to closed and frees the slots: it cannot lose a delivery,
 * only forget that an endpoint was failing (documented).
 */
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { EndpointState } from '../contract/endpoint.ts';

/** Breaker and limiter settings (defaults in the README's endpoint section). */
export type BreakerPolicy = {
  /** Consecutive failures that open the breaker. */
  failureThreshold: number;
  /** Failure ratio over the window that opens it, once the window has `minRequests` attempts. */
  failureRatio: number;
  minRequests: number;
  windowMs: number;
  /** First open period; each failed half-open probe doubles it, up to `maxCooldownMs`. */
  cooldownMs: number;
  maxCooldownMs: number;
  /** No success for this long while failing → the endpoint is disabled; 0 = never. */
  autoDisableMs: number;
  /**
   * Slow start: concurrent attempts a new endpoint (or one whose state Redis forgot) may have at
   * first, within its cap; +1 per success up to the cap, halved (down to 1) per failure. So N
   * unknown receivers that all hang hold N × this many worker slots, not N × the cap.
   */
  initialLimit: number;
};

export const DEFAULT_BREAKER_POLICY: BreakerPolicy = {
  failureThreshold: 5,
  failureRatio: 0.5,
  minRequests: 20,
  windowMs: 60_000,
  cooldownMs: 10_000,
  maxCooldownMs: 300_000,
  autoDisableMs: 24 * 3_600_000,
  initialLimit: 4,
};

/** Idle endpoints' state expires after this long (the index is pruned with it). */
const STATE_TTL_MS = 7 * 24 * 3_600_000;

export type AdmitInput = {
  key: string;
  /** Unique per attempt: the slot it holds and, when it is the half-open probe, the probe's id. */
  token: string;
  /** How long the slot is held at most (a worker that dies frees it when this lapses). */
  leaseMs: number;
  /** Concurrent attempts allowed across all workers; 0 = no cap. */
  cap: number;
  /** Deliveries per second across all workers; 0 = none. */
  rate: number;
};

export type Admission =
  | { admitted: true; inFlight: number; transition?: 'half_open' }
  | { admitted: false; reason: DeferReason; inFlight: number; retryAtMs?: number };

/** busy: at its cap; rate: over its rate limit; open: breaker open; probing: half-open with its probe out. */
export type DeferReason = 'busy' | 'rate' | 'open' | 'probing';

export type ReleaseOutcome = 'ok' | 'fail' | 'none';
export type ReleaseItem = { token: string; outcome: ReleaseOutcome };
export type Release = { transition?: 'open' | 'closed'; autoDisable: boolean };

export type EndpointSnapshot = {
  key: string;
  state: Exclude<EndpointState, 'disabled'>;
  inFlight: number;
  /** The slow-start limit earned so far (null: never released under a cap; starts at `initialLimit`). */
  earnedLimit: number | null;
  consecutiveFailures: number;
  windowAttempts: number;
  windowFailures: number;
  openUntil: Date | null;
  /** Half-open: when the probe under way stops counting (its lease); null = no probe out. */
  probeUntil: Date | null;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  failingSince: Date | null;
  lastSeenAt: Date | null;
};

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** An endpoint's bookkeeping (its key, the index, the TTLs) is refreshed at most this often. */
const TOUCH_MS = 1_000;

/**
 * One round trip for one endpoint: first the releases, then the admits, each in order (a slot a
 * release frees is there for the admits; each decision sees the state the previous one left).
 * KEYS: state, holders, index. ARGV: r, then (token, outcome) × r, then
 * (token, key, cap, leaseMs, rate) × n. → (transition, autoDisable) × r, then
 * (code, retryAt, transition, inFlight) × n; code 0 admitted, 1 busy, 2 rate, 3 open, 4 probing.
 *
 * The worker's batcher sends ~20 items a call under load, so the state is read once (one HMGET),
 * decided on in Lua locals and written back once (one HSET, one HDEL), with one ZREM and one
 * ZADD for the holders: a call costs a handful of commands whatever its size. The policy is part
 * of the script text (one script per policy).
 */
function exchangeScript(p: BreakerPolicy): string {
  return `${NOW}
local FIELDS = {'state', 'openUntil', 'probe', 'probeUntil', 'tat', 'limit', 'seenAt', 'cap', 'fails', 'wStart', 'wTotal', 'wFail', 'cooldown', 'failingSince', 'lastSuccessAt', 'lastFailureAt'}
local f = redis.call('HMGET', KEYS[1], unpack(FIELDS))
local fresh = not f[7]
local st = {}
for i, name in ipairs(FIELDS) do
  local v = f[i]
  if v and i ~= 1 and i ~= 3 then v = tonumber(v) end
  st[name] = v
end
st.state = st.state or 'closed'
st.cap = st.cap or 0
st.fails = st.fails or 0
st.wStart = st.wStart or now
st.wTotal = st.wTotal or 0
st.wFail = st.wFail or 0
local BASE, MAXC, AUTO, INITIAL = ${p.cooldownMs}, ${p.maxCooldownMs}, ${p.autoDisableMs}, ${p.initialLimit}
local dirty = false
local out = {}

local r = tonumber(ARGV[1])
local zrem = {}
for i = 2, 1 + 2 * r, 2 do
  local token, outcome = ARGV[i], ARGV[i + 1]
  zrem[#zrem + 1] = token
  local transition, disable = '', 0
  if outcome == 'none' then
    -- A probe that said nothing about the endpoint (cancelled, local error): the next admit probes.
    if st.probe == token then st.probe = false; st.probeUntil = false; dirty = true end
  else
    dirty = true
    if st.cap > 0 then
      local limit = st.limit or INITIAL
      if outcome == 'ok' then st.limit = math.min(st.cap, limit + 1) else st.limit = math.max(1, math.floor(limit / 2)) end
    end
    if now - st.wStart > ${p.windowMs} then st.wStart, st.wTotal, st.wFail = now, 0, 0 end
    if outcome == 'ok' then
      st.failingSince = false
      st.lastSuccessAt = now
      st.fails = 0
      if st.state == 'half_open' then
        st.state, st.wStart, st.wTotal, st.wFail, st.cooldown = 'closed', now, 0, 0, BASE
        st.probe, st.probeUntil, st.openUntil = false, false, false
        transition = 'closed'
      elseif st.state == 'closed' then
        st.wTotal = st.wTotal + 1
      end
    else
      st.failingSince = st.failingSince or now
      st.lastFailureAt = now
      if AUTO > 0 and now - st.failingSince >= AUTO then disable = 1 end
      if st.state == 'half_open' then
        if st.probe == token then
          local cooldown = math.min((st.cooldown or BASE) * 2, MAXC)
          st.state, st.openUntil, st.cooldown, st.probe, st.probeUntil = 'open', now + cooldown, cooldown, false, false
          transition = 'open'
        end
      elseif st.state == 'closed' then
        st.fails, st.wTotal, st.wFail = st.fails + 1, st.wTotal + 1, st.wFail + 1
        if st.fails >= ${p.failureThreshold} or (st.wTotal >= ${p.minRequests} and st.wFail / st.wTotal >= ${p.failureRatio}) then
          st.state, st.openUntil, st.cooldown, st.wStart, st.wTotal, st.wFail = 'open', now + BASE, BASE, now, 0, 0
          transition = 'open'
        end
      end
    end
  end
  out[#out + 1] = transition
  out[#out + 1] = disable
end
if #zrem > 0 then redis.call('ZREM', KEYS[2], unpack(zrem)) end

local inflight = nil
local zadd = {}
local seen = nil
for i = 2 + 2 * r, #ARGV, 5 do
  local token, key, cap, lease, rate = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
  local code, retryAt, transition = 0, 0, ''
  local probing = false
  if st.state == 'open' then
    if now < (st.openUntil or 0) then code, retryAt = 3, st.openUntil else probing = true end
  elseif st.state == 'half_open' then
    if st.probe and now < (st.probeUntil or 0) then code, retryAt = 4, st.probeUntil else probing = true end
  end
  if code == 0 then
    if inflight == nil then
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
      inflight = redis.call('ZCARD', KEYS[2])
    end
    -- Slow start: the cap an endpoint has earned (+1 per success, halved per failure), within its cap.
    if cap > 0 and inflight >= math.min(cap, st.limit or INITIAL) then
      code = 1
    elseif rate > 0 then
      local interval = 1000 / rate
      local burst = math.max(1, rate)
      local tat = math.max(st.tat or 0, now)
      local allowAt = tat - (burst - 1) * interval
      if allowAt > now then code, retryAt = 2, math.ceil(allowAt) else st.tat = tat + interval; dirty = true end
    end
  end
  if code == 0 then
    zadd[#zadd + 1] = now + lease
    zadd[#zadd + 1] = token
    inflight = inflight + 1
    if probing then
      if st.state == 'open' then transition = 'half_open' end
      st.state, st.probe, st.probeUntil = 'half_open', token, now + lease
      dirty = true
    end
    seen = seen or { key = key, cap = 0, lease = lease }
    if cap > 0 then seen.cap = cap end
  end
  out[#out + 1] = code
  out[#out + 1] = retryAt
  out[#out + 1] = transition
  out[#out + 1] = inflight or 0
end
if #zadd > 0 then redis.call('ZADD', KEYS[2], unpack(zadd)) end

-- Bookkeeping at most once a second (and when the cap changes); a decision's report (cap 0)
-- never overwrites the workers' cap.
local touched = false
if seen and (not st.seenAt or now - st.seenAt >= ${TOUCH_MS} or (seen.cap > 0 and st.cap ~= seen.cap)) then
  touched = true
  if seen.cap > 0 then st.cap = seen.cap end
  st.key, st.seenAt = seen.key, now
  dirty = true
  redis.call('PEXPIRE', KEYS[2], seen.lease + ${STATE_TTL_MS})
  redis.call('ZADD', KEYS[3], now, seen.key)
  redis.call('PEXPIRE', KEYS[3], ${STATE_TTL_MS})
end
if dirty then
  local set, del = {}, {}
  for _, name in ipairs({'key', 'state', 'openUntil', 'probe', 'probeUntil', 'tat', 'limit', 'seenAt', 'cap', 'fails', 'wStart', 'wTotal', 'wFail', 'cooldown', 'failingSince', 'lastSuccessAt', 'lastFailureAt'}) do
    local v = st[name]
    if v == false then del[#del + 1] = name
    elseif v ~= nil and not (name == 'cap' and v == 0) then set[#set + 1] = name; set[#set + 1] = tostring(v) end
  end
  redis.call('HSET', KEYS[1], unpack(set))
  if #del > 0 then redis.call('HDEL', KEYS[1], unpack(del)) end
  -- HSET keeps a TTL: set it when the hash is new and with the once-a-second bookkeeping.
  if fresh or touched then redis.call('PEXPIRE', KEYS[1], ${STATE_TTL_MS}) end
end
return out`;
}

/** KEYS: state. An open breaker's openUntil moves to now (Redis time); any other state is left. */
const PROBE_NOW_SCRIPT = `${NOW}
if redis.call('HGET', KEYS[1], 'state') == 'open' then redis.call('HSET', KEYS[1], 'openUntil', now) end
return 0`;

type ExchangeCommand = (s: string, h: string, i: string, ...argv: (string | number)[]) => Promise<(number | string)[]>;

const FIELDS = [
  'key',
  'state',
  'fails',
  'wTotal',
  'wFail',
  'openUntil',
  'lastSuccessAt',
  'lastFailureAt',
  'failingSince',
  'seenAt',
  'probeUntil',
  'limit',
] as const;

export type EndpointGate = {
  readonly policy: BreakerPolicy;
  admit(input: AdmitInput): Promise<Admission>;
  /** Several admits for ONE endpoint in one round trip, decided in order. */
  admitMany(key: string, inputs: readonly Omit<AdmitInput, 'key'>[]): Promise<Admission[]>;
  release(key: string, token: string, outcome: ReleaseOutcome): Promise<Release>;
  /** Several releases for ONE endpoint in one round trip, applied in order. */
  releaseMany(key: string, items: readonly ReleaseItem[]): Promise<Release[]>;
  /** Releases, then admits, for ONE endpoint in one round trip (the worker's batcher sends these). */
  exchange(
    key: string,
    releases: readonly ReleaseItem[],
    admits: readonly Omit<AdmitInput, 'key'>[],
  ): Promise<{ releases: Release[]; admissions: Admission[] }>;
  /** Every endpoint seen in the last week, most recently used first (bounded by `limit`). */
  list(limit?: number): Promise<EndpointSnapshot[]>;
  snapshot(key: string): Promise<EndpointSnapshot | undefined>;
  /** Breaker back to closed, counters and the slow-start limit cleared (operator enable). Slots held stay held. */
  reset(key: string): Promise<void>;
  /**
   * An open breaker's cooldown ends now: the next admit is its half-open probe (an operator's
   * replay says the receiver may be back). Its cooldown is kept, so a failed probe still doubles it.
   */
  probeNow(key: string): Promise<void>;
};

export function createEndpointGate(redis: Redis | Cluster, options: { keyPrefix: string; policy?: Partial<BreakerPolicy> }): EndpointGate {
  const policy = { ...DEFAULT_BREAKER_POLICY, ...options.policy };
  // One pair of scripts per policy (its numbers are part of the script text), defined once per connection.
  const suffix = createHash('sha1').update(JSON.stringify(policy)).digest('hex').slice(0, 12);
  const name = `hookrelayEndpointExchange_${suffix}`;
  const commands = redis as unknown as Record<string, ExchangeCommand | undefined>;
  if (typeof commands[name] !== 'function') redis.defineCommand(name, { numberOfKeys: 3, lua: exchangeScript(policy) });
  const exchangeCommand = (commands[name] as ExchangeCommand).bind(redis);
  const base = `${options.keyPrefix}:ep`;
  const index = `${base}-index`;
  // The Redis key names of each endpoint, computed once (a SHA-1 per call otherwise).
  const names = new Map<string, { state: string; holders: string }>();
  const namesOf = (key: string): { state: string; holders: string } => {
    let found = names.get(key);
    if (!found) {
      if (names.size >= 10_000) names.clear();
      const state = `${base}:${digest(key)}`;
      found = { state, holders: `${state}:slots` };
      names.set(key, found);
    }
    return found;
  };
  const stateKey = (key: string) => namesOf(key).state;
  const holdersKey = (key: string) => namesOf(key).holders;

  const snapshotOf = (fields: (string | null)[], inFlight: number, fallbackKey: string): EndpointSnapshot => {
    const [key, state, fails, wTotal, wFail, openUntil, lastSuccessAt, lastFailureAt, failingSince, seenAt, probeUntil, limit] = fields;
    return {
      key: key ?? fallbackKey,
      state: state === 'open' || state === 'half_open' ? state : 'closed',
      inFlight,
      earnedLimit: limit === null || limit === undefined ? null : Number(limit),
      consecutiveFailures: Number(fails ?? 0),
      windowAttempts: Number(wTotal ?? 0),
      windowFailures: Number(wFail ?? 0),
      openUntil: state === 'open' ? date(openUntil) : null,
      probeUntil: state === 'half_open' ? date(probeUntil) : null,
      lastSuccessAt: date(lastSuccessAt),
      lastFailureAt: date(lastFailureAt),
      failingSince: date(failingSince),
      lastSeenAt: date(seenAt),
    };
  };

  const read = async (keys: readonly string[]): Promise<EndpointSnapshot[]> => {
    if (keys.length === 0) return [];
    const [time] = await Promise.all([redis.time()]);
    const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    const pipeline = redis.pipeline();
    for (const key of keys) {
      pipeline.hmget(stateKey(key), ...FIELDS);
      pipeline.zcount(holdersKey(key), nowMs, '+inf');
    }
    const answers = (await pipeline.exec()) ?? [];
    return keys.map((key, i) => {
      const [fieldsErr, fields] = answers[2 * i] ?? [new Error('no answer'), null];
      const [countErr, count] = answers[2 * i + 1] ?? [new Error('no answer'), 0];
      if (fieldsErr) throw fieldsErr;
      if (countErr) throw countErr;
      return snapshotOf(fields as (string | null)[], Number(count), key);
    });
  };

  const gate: EndpointGate = {
    policy,
    async admit(input) {
      const [admission] = await gate.admitMany(input.key, [input]);
      return admission!;
    },
    async admitMany(key, inputs) {
      return (await gate.exchange(key, [], inputs)).admissions;
    },
    async release(key, token, outcome) {
      const [released] = await gate.releaseMany(key, [{ token, outcome }]);
      return released!;
    },
    async releaseMany(key, items) {
      return (await gate.exchange(key, items, [])).releases;
    },
    async exchange(key, releases, admits) {
      const keys = namesOf(key);
      const argv: (string | number)[] = [releases.length];
      for (const item of releases) argv.push(item.token, item.outcome);
      for (const input of admits) {
        argv.push(input.token, key, Math.max(0, Math.floor(input.cap)), Math.max(1, Math.ceil(input.leaseMs)), input.rate > 0 ? input.rate : 0);
      }
      const flat = await exchangeCommand(keys.state, keys.holders, index, ...argv);
      const r = releases.length;
      return {
        releases: releases.map((_, i) => {
          const transition = String(flat[2 * i] ?? '');
          const release: Release = { autoDisable: Number(flat[2 * i + 1]) === 1 };
          if (transition === 'open' || transition === 'closed') release.transition = transition;
          return release;
        }),
        admissions: admits.map((_, i) => {
          const at = 2 * r + 4 * i;
          return toAdmission(Number(flat[at]), Number(flat[at + 1]), String(flat[at + 2] ?? ''), Number(flat[at + 3]));
        }),
      };
    },
    async list(limit = 10_000) {
      if (limit <= 0) return [];
      const [seconds] = await redis.time();
      await redis.zremrangebyscore(index, '-inf', Number(seconds) * 1000 - STATE_TTL_MS);
      const keys = await redis.zrevrange(index, 0, limit - 1);
      return read(keys);
    },
    async snapshot(key) {
      const [found] = await read([key]);
      return found && found.lastSeenAt !== null ? found : undefined;
    },
    async probeNow(key) {
      await redis.eval(PROBE_NOW_SCRIPT, 1, stateKey(key));
    },
    async reset(key) {
      await redis.hdel(stateKey(key), 'state', 'openUntil', 'probe', 'probeUntil', 'fails', 'wStart', 'wTotal', 'wFail', 'cooldown', 'failingSince', 'limit');
    },
  };
  return gate;
}

function toAdmission(code: number, retryAt: number, transition: string, inFlight: number): Admission {
  if (code === 0) return transition === 'half_open' ? { admitted: true, inFlight, transition: 'half_open' } : { admitted: true, inFlight };
  const reason: DeferReason = code === 1 ? 'busy' : code === 2 ? 'rate' : code === 3 ? 'open' : 'probing';
  return retryAt > 0 ? { admitted: false, reason, inFlight, retryAtMs: retryAt } : { admitted: false, reason, inFlight };
}

/** Keys are bounded and free of odd characters whatever the endpoint key holds. */
function digest(key: string): string {
  return createHash('sha1').update(key).digest('hex').slice(0, 24);
}

function date(ms: string | null | undefined): Date | null {
  if (ms === null || ms === undefined || ms === '') return null;
  const n = Number(ms);
  return Number.isFinite(n) ? new Date(n) : null;
}
