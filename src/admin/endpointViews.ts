/**
 * One endpoint as an operator sees it — breaker state and in-flight from Redis (the workers'
 * shared gate), disable and limits from Postgres — for `hookrelay endpoints` and the console.
 * Without Redis the Postgres half still answers and the Redis fields are `null` / `unknown`.
 */
import type { Settings } from '../config/settings.ts';
import type { Db } from '../store/db.ts';
import {
  disableEndpoint,
  effectivePolicy,
  enableEndpoint,
  endpointStatusCounts,
  getEndpointPolicy,
  heldCounts,
  listEndpointPolicies,
  type EndpointPolicy,
} from '../store/endpointsRepo.ts';
import type { EndpointSnapshot } from '../isolation/endpointGate.ts';
import { ALL_TENANTS, scopedEndpointKey, splitScopedKey } from '../contract/endpoint.ts';
import { isolationSettings } from '../isolation/endpointIsolation.ts';
import type { OperatorQueue } from './operatorQueue.ts';

export type EndpointView = {
  /** The state's key: the endpoint for the default tenant and for an operator's row for every tenant (`tenant` says which), `<tenant>|<endpoint>` for another tenant. */
  key: string;
  /** N2: whose state it is (`*`: an operator's setting for every tenant). */
  tenant: string;
  /** The canonical endpoint (N4). */
  endpoint: string;
  state: 'closed' | 'open' | 'half_open' | 'disabled' | 'unknown';
  inFlight: number | null;
  cap: number;
  /** Slow start: concurrent attempts it has earned so far, within its cap. */
  limit: number | null;
  rateLimit: number | null;
  consecutiveFailures: number | null;
  windowAttempts: number | null;
  windowFailures: number | null;
  openUntil: string | null;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  failingSince: string | null;
  disabledAt: string | null;
  disabledBy: string | null;
  disabledReason: string | null;
  /** Disabled with `--hold`: its held deliveries are kept with no deadline until an operator acts. */
  hold: boolean;
  held: number;
};

/** The adaptive limit earned so far, within the configured cap (0 = none). */
function earnedLimit(snapshot: EndpointSnapshot | undefined, cap: number, initial: number): number | null {
  const earned = snapshot?.earnedLimit ?? initial;
  return cap === 0 ? earned : Math.min(cap, earned);
}

function endpointView(
  settings: Settings,
  key: string,
  snapshot: EndpointSnapshot | undefined,
  policy: EndpointPolicy | undefined,
  held: number,
  redisUp: boolean,
): EndpointView {
  const iso = isolationSettings(settings);
  const cap = policy?.concurrency ?? iso.defaultCap;
  const { tenant, endpoint } = splitScopedKey(key);
  return {
    // An operator's row for every tenant is named by its endpoint, as the command that set it named it.
    key: tenant === ALL_TENANTS ? endpoint : key,
    tenant,
    endpoint,
    state: policy?.disabledAt ? 'disabled' : snapshot ? snapshot.state : redisUp ? 'closed' : 'unknown',
    inFlight: snapshot ? snapshot.inFlight : redisUp ? 0 : null,
    cap,
    limit: earnedLimit(snapshot, cap, iso.policy.initialLimit),
    rateLimit: policy?.rateLimit ?? null,
    consecutiveFailures: snapshot?.consecutiveFailures ?? (redisUp ? 0 : null),
    windowAttempts: snapshot?.windowAttempts ?? (redisUp ? 0 : null),
    windowFailures: snapshot?.windowFailures ?? (redisUp ? 0 : null),
    openUntil: snapshot?.openUntil?.toISOString() ?? null,
    lastSuccessAt: snapshot?.lastSuccessAt?.toISOString() ?? null,
    lastFailureAt: snapshot?.lastFailureAt?.toISOString() ?? null,
    failingSince: snapshot?.failingSince?.toISOString() ?? null,
    disabledAt: policy?.disabledAt?.toISOString() ?? null,
    disabledBy: policy?.disabledBy ?? null,
    disabledReason: policy?.disabledReason ?? null,
    hold: policy?.hold === true,
    held,
  };
}

/** Every endpoint a worker has seen, an operator acted on, or that holds deliveries; `redisUp` false when Redis did not answer. */
export async function listEndpointViews(db: Db, queue: OperatorQueue, settings: Settings): Promise<{ views: EndpointView[]; redisUp: boolean }> {
  const [snapshots, policies, held] = await Promise.all([queue.fromRedis((gate) => gate.list()), listEndpointPolicies(db), heldCounts(db)]);
  const byKey = new Map((snapshots ?? []).map((s) => [s.key, s]));
  const policyByKey = new Map(policies.map((p) => [scopedEndpointKey(p.tenant, p.key), p]));
  const heldByKey = new Map(held.map((h) => [scopedEndpointKey(h.tenant, h.endpoint), h.n]));
  const all = [...new Set([...(snapshots ?? []).map((s) => s.key), ...policyByKey.keys(), ...heldByKey.keys()])].filter((k) => k !== '');
  // An operator's row for every tenant shows on each tenant's row of that endpoint (merged); alone only when no tenant has one.
  const tenantEndpoints = new Set(all.filter((k) => splitScopedKey(k).tenant !== ALL_TENANTS).map((k) => splitScopedKey(k).endpoint));
  const keys = all.filter((k) => splitScopedKey(k).tenant !== ALL_TENANTS || !tenantEndpoints.has(splitScopedKey(k).endpoint));
  const views = keys.map((k) => endpointView(settings, k, byKey.get(k), policyFor(policyByKey, k), heldByKey.get(k) ?? 0, snapshots !== undefined));
  return { views, redisUp: snapshots !== undefined };
}

/** One endpoint with its ledger counts by status; undefined when nothing anywhere knows the key. */
export async function getEndpointView(
  db: Db,
  queue: OperatorQueue,
  settings: Settings,
  key: string,
): Promise<{ view: EndpointView; deliveries: Record<string, number>; redisUp: boolean } | undefined> {
  const [snapshot, policy, counts] = await Promise.all([
    queue.fromRedis(async (gate) => (await gate.snapshot(key)) ?? null),
    policyForScope(db, key),
    endpointStatusCounts(db, splitScopedKey(key)),
  ]);
  if (!snapshot && !policy && Object.keys(counts).length === 0) return undefined;
  const redisUp = snapshot !== undefined;
  return { view: endpointView(settings, key, snapshot ?? undefined, policy, counts.held ?? 0, redisUp), deliveries: counts, redisUp };
}

/**
 * Operator disable: workers hold the endpoint's deliveries within their refresh interval; they
 * keep their deadlines (and fail there) unless `hold` keeps them until an operator acts.
 */
export function disableEndpointByOperator(db: Db, key: string, reason: string, hold = false): Promise<boolean> {
  return disableEndpoint(db, splitScopedKey(key), 'operator', reason, hold);
}

/** N2: what applies to a tenant's endpoint: its own row over the row for every tenant. */
function policyFor(byKey: Map<string, EndpointPolicy>, key: string): EndpointPolicy | undefined {
  const own = byKey.get(key);
  const { tenant, endpoint } = splitScopedKey(key);
  if (tenant === ALL_TENANTS) return own;
  const all = byKey.get(scopedEndpointKey(ALL_TENANTS, endpoint));
  return own === undefined ? all : all === undefined ? own : effectivePolicy(own, all);
}

async function policyForScope(db: Db, key: string): Promise<EndpointPolicy | undefined> {
  const { tenant, endpoint } = splitScopedKey(key);
  const [own, all] = await Promise.all([
    getEndpointPolicy(db, { tenant, endpoint }),
    tenant === ALL_TENANTS ? undefined : getEndpointPolicy(db, { tenant: ALL_TENANTS, endpoint }),
  ]);
  return own === undefined ? all : all === undefined ? own : effectivePolicy(own, all);
}

/**
 * Enable again, with a fresh start: the breaker forgets the failures that led to the disable.
 * `breakerReset` is false when Redis did not answer (it then closes after its next good probe).
 */
export async function enableEndpointAndReset(db: Db, queue: OperatorQueue, key: string): Promise<{ changed: boolean; breakerReset: boolean; held: number }> {
  const scope = splitScopedKey(key);
  const changed = await enableEndpoint(db, scope);
  const reset = await queue.fromRedis(async (gate) => {
    // For every tenant: each tenant's breaker of the endpoint starts afresh.
    const keys = scope.tenant === ALL_TENANTS ? (await gate.list()).map((s) => s.key).filter((k) => splitScopedKey(k).endpoint === scope.endpoint) : [key];
    for (const k of new Set([...keys, scope.tenant === ALL_TENANTS ? scope.endpoint : key])) await gate.reset(k);
    return true;
  });
  const held = (await heldCounts(db))
    .filter((h) => h.endpoint === scope.endpoint && (scope.tenant === ALL_TENANTS || h.tenant === scope.tenant))
    .reduce((n, h) => n + h.n, 0);
  return { changed, breakerReset: reset === true, held };
}
