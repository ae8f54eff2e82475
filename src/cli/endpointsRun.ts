/**
 * What `hookrelay endpoints` does once its flags are checked, loaded only when it runs. Breaker
 * state comes from Redis (the workers' shared gate), disable and limits from Postgres; the
 * command still answers from Postgres when Redis does not.
 */
import { createEndpointGate, type EndpointGate, type EndpointSnapshot } from '../queue/endpointGate.ts';
import { endpointKeyPrefix, isolationSettings } from '../queue/endpointIsolation.ts';
import type { QueueRedis } from '../queue/redisConnection.ts';
import { DEFAULT_QUEUE_PREFIX } from '../queue/types.ts';
import {
  disableEndpoint,
  enableEndpoint,
  endpointStatusCounts,
  getEndpointPolicy,
  heldCounts,
  listEndpointPolicies,
  setEndpointLimits,
  type EndpointPolicy,
} from '../store/endpointsRepo.ts';
import type { CliContext } from './context.ts';
import { CliUsageError } from './errors.ts';
import { EXIT } from './exitCodes.ts';
import { formatTable, iso, printJson, printJsonArray } from './output.ts';
import { runReplay } from './replayRun.ts';

const REDIS_TIMEOUT_MS = 3_000;

/** One endpoint as `list` and `show` print it. */
type EndpointView = {
  key: string;
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
  held: number;
};

function gateOf(ctx: CliContext): Promise<EndpointGate> {
  const prefix = ctx.settings.HOOKRELAY_QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX;
  const { policy } = isolationSettings(ctx.settings);
  return ctx
    .queue()
    .client.then((client) =>
      createEndpointGate(client as unknown as QueueRedis, { keyPrefix: endpointKeyPrefix(prefix, ctx.settings.HOOKRELAY_QUEUE), policy }),
    );
}

/** Redis's answer, or undefined when it does not answer in time (the Postgres half still stands). */
async function fromRedis<T>(ctx: CliContext, work: (gate: EndpointGate) => Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      gateOf(ctx).then(work),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), REDIS_TIMEOUT_MS);
      }),
    ]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

function view(
  ctx: CliContext,
  key: string,
  snapshot: EndpointSnapshot | undefined,
  policy: EndpointPolicy | undefined,
  held: number,
  redisUp: boolean,
): EndpointView {
  const defaultCap = isolationSettings(ctx.settings).defaultCap;
  return {
    key,
    state: policy?.disabledAt ? 'disabled' : snapshot ? snapshot.state : redisUp ? 'closed' : 'unknown',
    inFlight: snapshot ? snapshot.inFlight : redisUp ? 0 : null,
    cap: policy?.concurrency ?? defaultCap,
    limit: earnedLimit(snapshot, policy?.concurrency ?? defaultCap, isolationSettings(ctx.settings).policy.initialLimit),
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
    held,
  };
}

function earnedLimit(snapshot: EndpointSnapshot | undefined, cap: number, initial: number): number | null {
  if (cap === 0) return null;
  return Math.min(cap, snapshot?.earnedLimit ?? initial);
}

const dash = (v: string | number | null) => (v === null ? '-' : String(v));
const redisDown = 'Redis did not answer at REDIS_URL: breaker state and in-flight counts unknown (shown from Postgres only)\n';

export async function listEndpoints(ctx: CliContext, json: boolean): Promise<void> {
  const [snapshots, policies, held] = await Promise.all([fromRedis(ctx, (gate) => gate.list()), listEndpointPolicies(ctx.store.db), heldCounts(ctx.store.db)]);
  const byKey = new Map((snapshots ?? []).map((s) => [s.key, s]));
  const policyByKey = new Map(policies.map((p) => [p.key, p]));
  const keys = [...new Set([...(snapshots ?? []).map((s) => s.key), ...policies.map((p) => p.key), ...held.keys()])].filter((k) => k !== '');
  const views = keys.map((k) => view(ctx, k, byKey.get(k), policyByKey.get(k), held.get(k) ?? 0, snapshots !== undefined));
  if (json) return printJsonArray(views);
  if (snapshots === undefined) process.stderr.write(redisDown);
  if (views.length === 0) {
    process.stdout.write('no endpoints yet: the worker records one the first time it delivers to it\n');
    return;
  }
  process.stdout.write(
    formatTable(
      ['ENDPOINT', 'STATE', 'IN FLIGHT', 'LIMIT/CAP', 'RATE/S', 'FAILS', 'WINDOW FAIL/ALL', 'LAST SUCCESS', 'LAST FAILURE', 'HELD'],
      views.map((v) => [
        v.key,
        v.state,
        dash(v.inFlight),
        v.cap === 0 ? 'none' : `${v.limit ?? v.cap}/${v.cap}`,
        dash(v.rateLimit),
        dash(v.consecutiveFailures),
        v.windowAttempts === null ? '-' : `${v.windowFailures}/${v.windowAttempts}`,
        v.lastSuccessAt ?? '-',
        v.lastFailureAt ?? '-',
        String(v.held),
      ]),
    ),
  );
}

export async function showEndpoint(ctx: CliContext, key: string, json: boolean): Promise<void> {
  const [snapshot, policy, counts] = await Promise.all([
    fromRedis(ctx, async (gate) => (await gate.snapshot(key)) ?? null),
    getEndpointPolicy(ctx.store.db, key),
    endpointStatusCounts(ctx.store.db, key),
  ]);
  const redisUp = snapshot !== undefined;
  if (!snapshot && !policy && Object.keys(counts).length === 0) {
    throw new CliUsageError(`no endpoint "${key}" (not seen by a worker, not disabled or limited, no deliveries); see hookrelay endpoints list`);
  }
  const v = view(ctx, key, snapshot ?? undefined, policy, counts.held ?? 0, redisUp);
  if (json) return printJson({ ...v, deliveries: counts });
  if (!redisUp) process.stderr.write(redisDown);
  const lines = [
    `${v.key}  ${v.state}${v.state === 'open' && v.openUntil ? ` until ${v.openUntil}` : ''}`,
    `in flight ${dash(v.inFlight)}, limit ${v.cap === 0 ? 'none (no cap)' : `${v.limit ?? v.cap} of cap ${v.cap}`}   rate limit ${v.rateLimit === null ? 'none' : `${v.rateLimit}/s`}`,
    `consecutive failures ${dash(v.consecutiveFailures)}   window ${v.windowAttempts === null ? '-' : `${v.windowFailures} failed of ${v.windowAttempts}`}`,
    `last success ${v.lastSuccessAt ?? '-'}   last failure ${v.lastFailureAt ?? '-'}   failing since ${v.failingSince ?? '-'}`,
    ...(v.disabledAt ? [`disabled ${v.disabledAt} by ${v.disabledBy ?? '?'}: ${v.disabledReason ?? ''}`] : []),
    '',
    Object.keys(counts).length === 0
      ? 'no deliveries in the ledger'
      : formatTable(
          ['STATUS', 'DELIVERIES'],
          Object.entries(counts).map(([s, n]) => [s, String(n)]),
        ).trimEnd(),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

export async function disableEndpointCommand(ctx: CliContext, key: string, reason: string, json: boolean): Promise<void> {
  const changed = await disableEndpoint(ctx.store.db, key, 'operator', reason);
  const policy = await getEndpointPolicy(ctx.store.db, key);
  if (json) return printJson({ key, disabled: true, changed, disabledAt: iso(policy?.disabledAt), reason: policy?.disabledReason ?? reason });
  process.stdout.write(
    changed
      ? `disabled ${key}: workers hold its deliveries (status held) within a few seconds; enable it with: hookrelay endpoints enable ${key} --replay\n`
      : `${key} was already disabled (${policy?.disabledBy ?? '?'}: ${policy?.disabledReason ?? ''}); nothing changed\n`,
  );
}

export async function enableEndpointCommand(ctx: CliContext, key: string, replay: boolean, json: boolean): Promise<number> {
  const changed = await enableEndpoint(ctx.store.db, key);
  // A fresh start: the breaker forgets the failures that led to the disable.
  const reset = await fromRedis(ctx, async (gate) => {
    await gate.reset(key);
    return true;
  });
  const held = (await heldCounts(ctx.store.db)).get(key) ?? 0;
  if (!replay || held === 0) {
    if (json) printJson({ key, enabled: true, changed, breakerReset: reset === true, held });
    else {
      process.stdout.write(changed ? `enabled ${key}\n` : `${key} was not disabled; nothing changed\n`);
      if (reset !== true) process.stderr.write('Redis did not answer: the breaker was not reset (it closes by itself after its next successful probe)\n');
      if (held > 0) process.stdout.write(`${held} deliveries are held for it; replay them with: hookrelay endpoints enable ${key} --replay\n`);
    }
    return EXIT.ok;
  }
  if (!json) process.stdout.write(`${changed ? 'enabled' : 'already enabled:'} ${key}; replaying its ${held} held deliveries\n`);
  return runReplay(ctx, [], { status: 'held', endpoint: key, yes: true, ...(json ? { json: true } : {}) });
}

export async function limitEndpointCommand(
  ctx: CliContext,
  key: string,
  limits: { concurrency: number | null | undefined; rateLimit: number | null | undefined },
  json: boolean,
): Promise<void> {
  await setEndpointLimits(ctx.store.db, key, {
    ...(limits.concurrency !== undefined ? { concurrency: limits.concurrency } : {}),
    ...(limits.rateLimit !== undefined ? { rateLimit: limits.rateLimit } : {}),
  });
  const policy = await getEndpointPolicy(ctx.store.db, key);
  const cap = policy?.concurrency ?? isolationSettings(ctx.settings).defaultCap;
  if (json) return printJson({ key, concurrency: cap, ownConcurrency: policy?.concurrency ?? null, rateLimit: policy?.rateLimit ?? null });
  process.stdout.write(
    `${key}: concurrency ${cap === 0 ? 'no cap' : cap}${policy?.concurrency === null ? ' (default)' : ''}, rate limit ${policy?.rateLimit === null || policy?.rateLimit === undefined ? 'none' : `${policy.rateLimit}/s`}; workers apply it within a few seconds\n`,
  );
}
