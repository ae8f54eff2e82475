/**
 * What the processor asks before and tells after each attempt: may this delivery go to its
 * endpoint now (cap, rate limit, breaker, disabled), and what did the attempt say about the
 * endpoint. The Redis state is the gate's; the durable policy (disabled, per-endpoint limits)
 * is Postgres's, read into memory every few seconds so the hot path never queries it.
 *
 * On a healthy endpoint an admit takes a slot the worker leased (endpointLeases.ts): synchronous,
 * no Redis call. A rate limit, and anything while the breaker is not closed (open deferrals, the
 * half-open probe), is decided per attempt in the gate, batched per endpoint (endpointExchange.ts).
 */
import type { Settings } from '../config/settings.ts';
import { DEFAULT_ENDPOINT_CONCURRENCY } from '../contract/defaults.ts';
import {
  ALL_TENANTS,
  countsAgainstEndpoint,
  DEFAULT_TIMEOUT_FLOOR_MS,
  ENDPOINT_STATES,
  scopedEndpointKey,
  splitScopedKey,
  type EndpointState,
} from '../contract/endpoint.ts';
import type { NotificationResult } from '../notify/deliver.ts';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import type { Db } from '../store/db.ts';
import { disableEndpoint, effectivePolicy, listEndpointPolicies, type EndpointPolicy } from '../store/endpointsRepo.ts';
import { withDefined } from '../util/withDefined.ts';
import { isSlowAttempt, limitCeiling } from './adaptiveLimit.ts';
import { createExchangeBatcher } from './endpointExchange.ts';
import {
  DEFAULT_BREAKER_POLICY,
  type Admission,
  type BreakerPolicy,
  type DeferReason,
  type EndpointGate,
  type Release,
  type ReleaseOutcome,
} from './endpointGate.ts';
import { createEndpointLeases } from './endpointLeases.ts';
import type { PolicyAcknowledger } from './policyAcks.ts';
import { withTimeout } from '../util/withTimeout.ts';
import { deliveryQueueKeys } from '../queue/queueKeys.ts';

/** How often a worker re-reads the endpoints table (an operator's disable takes effect within it). */
const POLICY_REFRESH_MS = 2_000;
/** Bound on the Redis side of a policy read (the generation noted before it, the acknowledgement after). */
const ACK_TIMEOUT_MS = 1_000;
/**
 * Deferral backoff, jittered: while an endpoint is at its cap a slot frees soon (50 ms doubling to
 * 1 s); while its probe is out the answer takes up to a timeout (250 ms doubling to 5 s).
 */
const BUSY_BASE_MS = 50;
const BUSY_MAX_MS = 1_000;
const DEFER_BASE_MS = 250;
const DEFER_MAX_MS = 5_000;
/** Spread of the wake-up of jobs deferred until an open breaker's cooldown ends. */
const OPEN_JITTER_MS = 1_000;

/** Error classes that say nothing about the endpoint (a local problem): not counted by the breaker. */
const NEUTRAL_ERRORS = new Set(['configuration', 'cancelled', 'ssrf_blocked', 'payload_too_large']);

type AdmitRequest = {
  key: string;
  token: string;
  leaseMs: number;
  /** The hook's own `webhook.rateLimit`, if any. */
  hookRate: number | undefined;
  /** How many times BullMQ has started this job (deferrals back off with it). */
  starts: number;
};

/** defer: not now; `atMs` when to ask again (backoff, the rate limiter's or the breaker's time), `inFlight` the endpoint's attempts now. */
export type AdmitDecision = { kind: 'go' } | { kind: 'defer'; atMs: number; reason: DeferReason; inFlight: number } | { kind: 'hold' };

export type EndpointIsolation = {
  /** Synchronous when a slot this worker leased is free (endpointLeases.ts). */
  admit(request: AdmitRequest): AdmitDecision | Promise<AdmitDecision>;
  /**
   * The fast path alone, synchronous and allocating nothing: true when a slot this worker leased
   * for `key` was free and is now `token`'s (the attempt goes; settle gives it back). False: ask `admit`.
   */
  admitNow(key: string, token: string, leaseMs: number, hookRate: number | undefined): boolean;
  /**
   * Frees the slot and feeds the breaker and the adaptive limit (a success slower than the
   * webhook's `timeoutMs` allows counts as slow); never throws (a lost release only holds a slot until its lease).
   */
  settle(key: string, token: string, result: NotificationResult | undefined, timeoutMs?: number): Promise<void>;
  /** Endpoints per state (the `hookrelay_endpoint_state` gauge). */
  stateCounts(): Promise<Partial<Record<EndpointState, number>>>;
  /** Re-reads the endpoints table now (a hold found the endpoint enabled again). */
  refresh(): Promise<void>;
  start(): Promise<void>;
  /** Gives the worker's slot leases back; resolves when they went (or their one try failed). */
  stop(): Promise<void>;
};

export type EndpointIsolationOptions = {
  gate: EndpointGate;
  db: Db;
  /**
   * Fixed cap per endpoint across all workers (HOOKRELAY_ENDPOINT_CONCURRENCY), the adaptive
   * limit's ceiling and (N2) the endpoint's ceiling across tenants, shared fairly; 0 = none.
   */
  defaultCap: number;
  logger: Logger;
  metrics?: DeliveryMetrics;
  random?: () => number;
  refreshMs?: number;
  /** Acknowledges each read of the endpoints table (policyAcks.ts), so an operator's disable can wait for every live worker. */
  acks?: PolicyAcknowledger;
  /** Slot leases (endpointLeases.ts; default on): false sends every admit and release to the gate. */
  leases?: boolean;
};

type Effective = { policy: EndpointPolicy | undefined; cap: number; ceiling: number };

const GO: AdmitDecision = Object.freeze({ kind: 'go' });
const HOLD: AdmitDecision = Object.freeze({ kind: 'hold' });

export function createEndpointIsolation(options: EndpointIsolationOptions): EndpointIsolation {
  const random = options.random ?? Math.random;
  // A delivery's release rides along with the next admit of its endpoint: one script call each.
  const exchange = createExchangeBatcher(options.gate);
  // Keyed by scoped key (`<tenant>|<endpoint>`, `*|<endpoint>` for every tenant: N2).
  let policies = new Map<string, EndpointPolicy>();
  // What applies to one tenant's endpoint: its own row over the all-tenants row, field by field;
  // its cap (the adaptive limit's ceiling: its own concurrency, else the all-tenants one, else
  // the default, else LIMIT_MAX); and N2's ceiling across tenants (the all-tenants concurrency,
  // else the default; 0 = none). Cleared with each read.
  let effective = new Map<string, Effective>();
  const effectiveOf = (key: string): Effective => {
    let found = effective.get(key);
    if (found !== undefined) return found;
    const own = policies.get(key);
    const all = policies.get(scopedEndpointKey(ALL_TENANTS, splitScopedKey(key).endpoint));
    const policy = own === undefined ? all : all === undefined ? own : effectivePolicy(own, all);
    found = { policy, cap: limitCeiling(policy?.concurrency ?? options.defaultCap), ceiling: all?.concurrency ?? options.defaultCap };
    if (effective.size >= 50_000) effective.clear();
    effective.set(key, found);
    return found;
  };
  const policyOf = (key: string): EndpointPolicy | undefined => effectiveOf(key).policy;
  let timer: NodeJS.Timeout | undefined;

  // Reads can overlap (the timer, an auto-disable, the processor): only a read begun after the applied one replaces it.
  let readsBegun = 0;
  let appliedRead = 0;
  const refresh = async (): Promise<void> => {
    const read = ++readsBegun;
    // The generation is noted before the read: an operator change published as G is in any read that follows it.
    // Bounded (Q13): with Redis away a command waits for it, and the worker's start must not (the
    // policies still load from Postgres; no generation noted means no acknowledgement).
    const generation = options.acks
      ? await withTimeout(
          options.acks.generation().catch(() => undefined),
          ACK_TIMEOUT_MS,
          undefined,
        )
      : undefined;
    try {
      const fresh = new Map((await listEndpointPolicies(options.db)).map((p) => [scopedEndpointKey(p.tenant, p.key), p]));
      if (read < appliedRead) return;
      policies = fresh;
      effective = new Map();
      appliedRead = read;
      if (generation !== undefined && options.acks)
        await withTimeout(
          options.acks.acknowledge(generation).catch(() => undefined),
          ACK_TIMEOUT_MS,
          undefined,
        );
    } catch (error) {
      // Postgres away: keep the last known policies (the worker's Postgres wait pauses it meanwhile).
      options.logger.debug({ err: error }, 'could not refresh endpoint policies');
    }
  };

  const transition = (key: string, to: 'open' | 'half_open' | 'closed'): void => {
    options.metrics?.endpointTransitions.inc({ to });
    const log = { endpoint: key, to };
    if (to === 'open')
      options.logger.warn(log, 'endpoint circuit opened; its deliveries wait (not attempted) until a probe succeeds, or fail at their deadlines');
    else options.logger.info(log, to === 'closed' ? 'endpoint circuit closed; deliveries resume' : 'endpoint circuit half-open; one probe delivery goes out');
  };

  const autoDisable = async (key: string): Promise<void> => {
    const hours = Math.round((options.gate.policy.autoDisableMs / 3_600_000) * 100) / 100;
    // N2: auto-disable is the failing tenant's own: another tenant's deliveries to the endpoint go on.
    const { tenant, endpoint } = splitScopedKey(key);
    // Disabled already (for this tenant, or by an operator for every tenant): the first reason stays.
    if (policyOf(key)?.disabledAt) return;
    if (await disableEndpoint(options.db, { tenant, endpoint }, 'auto', `no successful delivery for ${hours} h`)) {
      options.metrics?.endpointTransitions.inc({ to: 'disabled' });
      // Never a silent hold: its deliveries are held with their deadlines and fail there (Q3).
      options.logger.warn(
        { endpoint: key, hours },
        'endpoint disabled automatically; its deliveries are held and fail at their deadlines (enable it with `hookrelay endpoints enable`)',
      );
      await refresh();
    }
  };

  const onRelease = async (key: string, released: Release): Promise<void> => {
    if (released.transition) transition(key, released.transition);
    if (released.autoDisable) await autoDisable(key);
  };
  const leases =
    options.leases === false
      ? undefined
      : createEndpointLeases(options.gate, {
          onRelease,
          onError: (key, error) => options.logger.debug({ endpoint: key, err: error }, 'could not report an endpoint lease'),
        });

  /** Not now: when to ask again (backoff by starts, the limiter's time, or an open breaker's end). */
  const defer = (request: AdmitRequest, reason: DeferReason, inFlight: number, retryAtMs: number | undefined): AdmitDecision => {
    const now = Date.now();
    const doublings = Math.min(Math.max(0, request.starts - 1), 6);
    const [base, max] = reason === 'busy' ? [BUSY_BASE_MS, BUSY_MAX_MS] : [DEFER_BASE_MS, DEFER_MAX_MS];
    const backoff = Math.min(max, base * 2 ** doublings) * (0.5 + random() / 2);
    let atMs: number;
    if (reason === 'rate') atMs = Math.max(now + 1, retryAtMs ?? now + backoff);
    else if (reason === 'open' && retryAtMs !== undefined && retryAtMs - now > DEFER_BASE_MS) {
      // Open: nothing goes out before its cooldown ends, so sleep until then (spread: one job probes first).
      atMs = retryAtMs + random() * OPEN_JITTER_MS;
    } else atMs = now + backoff;
    options.metrics?.endpointDeferrals.inc({ reason });
    return { kind: 'defer', atMs, reason, inFlight };
  };

  /** The per-attempt path: one admit in the gate (batched per endpoint), as for rate-limited endpoints and probes. */
  const admitThroughGate = async (request: AdmitRequest, cap: number, ceiling: number, rate: number | undefined): Promise<AdmitDecision> => {
    const admission: Admission = await exchange.admit(request.key, { token: request.token, leaseMs: request.leaseMs, cap, ceiling, rate: rate ?? 0 });
    if (admission.admitted) {
      if (admission.transition) transition(request.key, admission.transition);
      return GO;
    }
    return defer(request, admission.reason, admission.inFlight, admission.retryAtMs);
  };

  const admitLeased = async (request: AdmitRequest, cap: number, ceiling: number): Promise<AdmitDecision> => {
    const leased = await leases!.acquire(request.key, request.token, cap, ceiling, request.leaseMs);
    if (leased.kind === 'go') return GO;
    if (leased.kind === 'busy') return defer(request, 'busy', leased.inFlight, undefined);
    // The breaker is not closed: its open deferral or half-open probe is the gate's per-attempt decision.
    return admitThroughGate(request, cap, ceiling, undefined);
  };

  /** The per-attempt release: frees the slot and feeds the breaker; never throws. */
  const settleThroughGate = async (key: string, token: string, outcome: ReleaseOutcome): Promise<void> => {
    try {
      const released = await exchange.release(key, { token, outcome });
      // A probe closed the breaker: this worker may lease the endpoint's slots again at once.
      if (released.transition === 'closed') leases?.healthy(key);
      await onRelease(key, released);
    } catch (error) {
      options.logger.debug({ endpoint: key, err: error }, 'could not release an endpoint slot');
    }
  };

  return {
    admit(request) {
      // The adaptive limit, within the configured cap (none configured: LIMIT_MAX), and the ceiling across tenants.
      const { policy, cap, ceiling } = effectiveOf(request.key);
      if (policy?.disabledAt) return HOLD;
      const rate = lowest(request.hookRate, policy?.rateLimit ?? undefined);
      // A rate limit is decided per attempt in the gate; so is anything while the breaker is not closed.
      if (leases && rate === undefined && leases.usable(request.key)) {
        if (leases.take(request.key, request.token, cap, ceiling, request.leaseMs)) return GO;
        return admitLeased(request, cap, ceiling);
      }
      return admitThroughGate(request, cap, ceiling, rate);
    },
    admitNow(key, token, leaseMs, hookRate) {
      if (!leases || hookRate !== undefined) return false;
      const { policy, cap, ceiling } = effectiveOf(key);
      if (policy !== undefined && (policy.disabledAt || policy.rateLimit !== null)) return false;
      return leases.take(key, token, cap, ceiling, leaseMs);
    },
    settle(key, token, result, timeoutMs) {
      const outcome = breakerOutcome(result, timeoutMs, policyOf(key)?.timeoutFloorMs ?? DEFAULT_TIMEOUT_FLOOR_MS);
      // A leased slot: given back here (a failure is awaited until the gate has it).
      const given = leases?.give(token, outcome);
      if (given !== undefined) return given;
      return settleThroughGate(key, token, outcome);
    },
    async stateCounts() {
      const counts: Partial<Record<EndpointState, number>> = Object.fromEntries(ENDPOINT_STATES.map((s) => [s, 0]));
      let disabled = 0;
      for (const snapshot of await options.gate.list()) {
        if (policyOf(snapshot.key)?.disabledAt) {
          disabled += 1;
          continue;
        }
        counts[snapshot.state] = (counts[snapshot.state] ?? 0) + 1;
      }
      counts.disabled = Math.max(disabled, [...policies.values()].filter((p) => p.disabledAt).length);
      return counts;
    },
    refresh,
    async start() {
      await refresh();
      leases?.start();
      timer = setInterval(() => void refresh(), options.refreshMs ?? POLICY_REFRESH_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      void options.acks?.leave().catch(() => undefined);
      await leases?.stop();
    },
  };
}

/**
 * What an attempt tells the breaker and the adaptive limit: success (slow when it took longer
 * than the webhook's timeout makes "slow", see adaptiveLimit.ts), the endpoint's failure (N3:
 * only what shows it unhealthy for everyone, `countsAgainstEndpoint`), or nothing (a local
 * problem, an answer such as 401 or 422, a timeout shorter than the endpoint's floor).
 */
export function breakerOutcome(result: NotificationResult | undefined, timeoutMs?: number, floorMs = DEFAULT_TIMEOUT_FLOOR_MS): ReleaseOutcome {
  if (!result) return 'none';
  if (result.ok) return timeoutMs !== undefined && isSlowAttempt(result.durationMs, timeoutMs) ? 'slow' : 'ok';
  if (result.local === true || NEUTRAL_ERRORS.has(result.errorClass)) return 'none';
  return countsAgainstEndpoint({ errorClass: result.errorClass, httpStatus: result.httpStatus, timeoutMs: timeoutMs ?? floorMs, floorMs }) ? 'fail' : 'none';
}

function lowest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

/** The breaker policy and default cap the settings give (defaults where unset). */
export type IsolationSettings = Pick<
  Settings,
  | 'HOOKRELAY_ENDPOINT_ISOLATION'
  | 'HOOKRELAY_ENDPOINT_CONCURRENCY'
  | 'HOOKRELAY_BREAKER_FAILURES'
  | 'HOOKRELAY_BREAKER_COOLDOWN_MS'
  | 'HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS'
>;

export function isolationSettings(settings: IsolationSettings): { enabled: boolean; defaultCap: number; policy: BreakerPolicy } {
  const hours = settings.HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS;
  return {
    enabled: settings.HOOKRELAY_ENDPOINT_ISOLATION !== false,
    defaultCap: settings.HOOKRELAY_ENDPOINT_CONCURRENCY ?? DEFAULT_ENDPOINT_CONCURRENCY,
    policy: {
      ...DEFAULT_BREAKER_POLICY,
      ...withDefined({
        failureThreshold: settings.HOOKRELAY_BREAKER_FAILURES,
        cooldownMs: settings.HOOKRELAY_BREAKER_COOLDOWN_MS,
        autoDisableMs: hours === undefined ? undefined : Math.round(hours * 3_600_000),
      }),
    },
  };
}

/** Where a queue's endpoint state lives in Redis, for a caller that has no queue handle (queueKeys.ts owns it). */
export function endpointKeyPrefix(prefix: string, queueName: string): string {
  return deliveryQueueKeys(prefix, queueName).endpointPrefix;
}
