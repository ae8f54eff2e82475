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
 *
 * The scripts are `commands/*.lua` (see below); this module builds their KEYS and ARGV and reads
 * their answers.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { splitScopedKey, type EndpointState } from '../contract/endpoint.ts';
import type { LimitOutcome } from './adaptiveLimit.ts';

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
   * The adaptive limit's start (adaptiveLimit.ts): concurrent attempts a new endpoint (or one
   * whose state Redis forgot) may have at first; +1 per fast success up to the cap (or LIMIT_MAX),
   * ×0.9 per slow one (not below this), halved (down to 1) per failure. So N unknown receivers
   * that all hang hold N × this many worker slots.
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
  /**
   * The adaptive limit's ceiling across all workers: the configured cap, or LIMIT_MAX when none
   * is; 0 = no limit at all (a decision reporting its outcome).
   */
  cap: number;
  /** Deliveries per second across all workers; 0 = none. */
  rate: number;
  /**
   * N2: the endpoint's slots across all tenants, shared fairly (see the script's header); 0 or
   * left out = none. One call uses the largest its items name.
   */
  ceiling?: number;
};

export type Admission =
  | { admitted: true; inFlight: number; transition?: 'half_open' }
  | { admitted: false; reason: DeferReason; inFlight: number; retryAtMs?: number };

/** busy: at its cap; rate: over its rate limit; open: breaker open; probing: half-open with its probe out. */
export type DeferReason = 'busy' | 'rate' | 'open' | 'probing';

/** ok / slow: a success (slow: it took long, the adaptive limit shrinks); fail; none: says nothing. */
export type ReleaseOutcome = LimitOutcome;
export type ReleaseItem = { token: string; outcome: ReleaseOutcome };
export type Release = { transition?: 'open' | 'closed'; autoDisable: boolean };

/**
 * A worker's slot lease on one endpoint (endpointLeases.ts): `held` members of the holders set,
 * so every count of the endpoint's slots includes them. One call reports the outcomes of its
 * slots since the last one (run-length, in order) and sets its size: what the worker `want`s,
 * within the limit less the other holders' slots and a fair share among the workers leasing
 * the endpoint, never below `keep` (the most it may have in use until the answer arrives), and
 * nothing granted while the breaker is not closed.
 */
type LeaseCall = {
  /** Unique per worker and endpoint; its members are `<id>#0 … <id>#<held - 1>`. */
  id: string;
  /** The size the last answer gave (0: none). */
  held: number;
  want: number;
  keep: number;
  /** A new or renewed lease expires this long after the call (a worker that dies frees it then). */
  durationMs: number;
  renew: boolean;
  /** The adaptive limit's ceiling, as for an admit. */
  cap: number;
  /** The endpoint's slots across tenants, as for an admit. */
  ceiling?: number;
  /** What the worker needs now (in use + asking; `want` asks for room to grow): refused below it by the ceiling, its tenant waits. */
  need?: number;
  outcomes: readonly (readonly [ReleaseOutcome, number])[];
};
export type LeaseAnswer = {
  /** Members the lease has now (≥ keep). */
  held: number;
  /** How many of them the worker may have in use (0 while the breaker is not closed). */
  allowed: number;
  /** The endpoint's slots taken now, every worker's together (leased slots included). */
  inFlight: number;
  state: Exclude<EndpointState, 'disabled'>;
  /** Until the lease lapses (from the call's Redis time); 0 with no lease. */
  remainingMs: number;
  /** Per outcome run: the transition it made, and whether the endpoint reached auto-disable. */
  releases: Release[];
};

export type EndpointSnapshot = {
  key: string;
  state: Exclude<EndpointState, 'disabled'>;
  inFlight: number;
  /** The adaptive limit earned so far (null: nothing released yet; starts at `initialLimit`). */
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

/** An endpoint's bookkeeping (its key, the index, the TTLs) is refreshed at most this often. */
const TOUCH_MS = 1_000;

/**
 * The two scripts, as BullMQ keeps its own: `.lua` files beside this module (`commands/`, copied
 * into dist/ by the build), read once when the module loads. The policy travels in ARGV, so one
 * script serves every policy. `endpointExchange-6.lua`: one round trip for one endpoint, a slot
 * lease's outcomes and size, releases, then admits (the worker's batchers send these; the state is read once,
 * decided on in Lua locals and written back once). `probeNow-1.lua`: an open breaker's cooldown
 * ends now. The number in a file's name is its KEYS count.
 */
const EXCHANGE_LUA = readFileSync(new URL('./commands/endpointExchange-6.lua', import.meta.url), 'utf8');
const PROBE_NOW_LUA = readFileSync(new URL('./commands/probeNow-1.lua', import.meta.url), 'utf8');
const EXCHANGE_COMMAND = 'hookrelayEndpointExchange';

/** ARGV[1..10] of the exchange script, in the order its header lists (ARGV[11..12]: tenant and ceiling; ARGV[13..22]: the lease, if any). */
function policyArgv(p: BreakerPolicy): number[] {
  return [
    p.cooldownMs,
    p.maxCooldownMs,
    p.autoDisableMs,
    p.initialLimit,
    p.windowMs,
    p.failureThreshold,
    p.minRequests,
    p.failureRatio,
    TOUCH_MS,
    STATE_TTL_MS,
  ];
}

type ExchangeCommand = (...keysThenArgv: (string | number)[]) => Promise<(number | string)[]>;

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
  /** A lease's call (optional), releases, then admits, for ONE endpoint in one round trip (the worker's batchers send these). */
  exchange(
    key: string,
    releases: readonly ReleaseItem[],
    admits: readonly Omit<AdmitInput, 'key'>[],
    lease?: LeaseCall,
  ): Promise<{ releases: Release[]; admissions: Admission[]; lease?: LeaseAnswer }>;
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
  // One script for every policy (the policy is in ARGV), defined once per connection.
  const commands = redis as unknown as Record<string, ExchangeCommand | undefined>;
  if (typeof commands[EXCHANGE_COMMAND] !== 'function') redis.defineCommand(EXCHANGE_COMMAND, { numberOfKeys: 6, lua: EXCHANGE_LUA });
  const exchangeCommand = (commands[EXCHANGE_COMMAND] as ExchangeCommand).bind(redis);
  const policyArgs = policyArgv(policy);
  const base = `${options.keyPrefix}:ep`;
  const index = `${base}-index`;
  // The Redis key names of each endpoint, computed once (a SHA-1 per call otherwise).
  // The endpoint's keys across tenants (N2's ceiling) sit under its canonical key: `<base>:all:<digest>`.
  const names = new Map<string, Names>();
  const namesOf = (key: string): Names => {
    let found = names.get(key);
    if (!found) {
      if (names.size >= 10_000) names.clear();
      const state = `${base}:${digest(key)}`;
      const { tenant, endpoint } = splitScopedKey(key);
      const all = `${base}:all:${digest(endpoint)}`;
      found = { state, holders: `${state}:slots`, tenant, allHolders: `${all}:slots`, active: `${all}:active`, waiting: `${all}:waiting` };
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
    async exchange(key, releases, admits, lease) {
      const keys = namesOf(key);
      let ceiling = Math.max(0, Math.floor(lease?.ceiling ?? 0));
      for (const input of admits) ceiling = Math.max(ceiling, Math.floor(input.ceiling ?? 0));
      const argv: (string | number)[] = policyArgs.slice();
      argv.push(keys.tenant, ceiling);
      if (lease) {
        argv.push(
          lease.id,
          lease.held,
          lease.want,
          lease.keep,
          lease.need ?? lease.want,
          Math.max(1, Math.ceil(lease.durationMs)),
          lease.renew ? 1 : 0,
          lease.cap,
          key,
          lease.outcomes.length,
        );
        for (const [outcome, count] of lease.outcomes) argv.push(outcome, count);
      } else argv.push(...NO_LEASE);
      argv.push(releases.length);
      for (const item of releases) argv.push(item.token, item.outcome);
      for (const input of admits) {
        argv.push(input.token, key, Math.max(0, Math.floor(input.cap)), Math.max(1, Math.ceil(input.leaseMs)), input.rate > 0 ? input.rate : 0);
      }
      const flat = await exchangeCommand(keys.state, keys.holders, index, keys.allHolders, keys.active, keys.waiting, ...argv);
      const r = releases.length;
      const leaseAt = 2 * r + 4 * admits.length;
      return {
        ...(lease ? { lease: toLeaseAnswer(flat, leaseAt, lease.outcomes.length) } : {}),
        releases: releases.map((_, i) => toRelease(String(flat[2 * i] ?? ''), Number(flat[2 * i + 1]))),
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
      await redis.eval(PROBE_NOW_LUA, 1, stateKey(key));
    },
    async reset(key) {
      await redis.hdel(stateKey(key), 'state', 'openUntil', 'probe', 'probeUntil', 'fails', 'wStart', 'wTotal', 'wFail', 'cooldown', 'failingSince', 'limit');
    },
  };
  return gate;
}

/** ARGV[13..22] when a call carries no lease. */
const NO_LEASE: readonly (string | number)[] = ['', 0, 0, 0, 0, 0, 0, 0, '', 0];

/** One scoped key's Redis keys: its tenant's state, and its canonical endpoint's across tenants. */
type Names = { state: string; holders: string; tenant: string; allHolders: string; active: string; waiting: string };
const LEASE_STATES = ['closed', 'open', 'half_open'] as const;

function toRelease(transition: string, autoDisable: number): Release {
  const release: Release = { autoDisable: autoDisable === 1 };
  if (transition === 'open' || transition === 'closed') release.transition = transition;
  return release;
}

function toLeaseAnswer(flat: (number | string)[], at: number, runs: number): LeaseAnswer {
  const releases: Release[] = [];
  for (let i = 0; i < runs; i++) releases.push(toRelease(String(flat[at + 5 + 2 * i] ?? ''), Number(flat[at + 6 + 2 * i])));
  return {
    held: Number(flat[at]),
    allowed: Number(flat[at + 1]),
    inFlight: Number(flat[at + 2]),
    state: LEASE_STATES[Number(flat[at + 3])] ?? 'closed',
    remainingMs: Number(flat[at + 4]),
    releases,
  };
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
