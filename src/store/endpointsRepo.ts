/**
 * The durable half of endpoint isolation: which endpoints are disabled (by an operator or by
 * auto-disable) or carry their own limits, and the ledger rows held for a disabled endpoint.
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import { rowsOf, type Db } from './db.ts';
import { endpoints } from './schema.ts';

/** N2: whose state an operator's row is: one tenant's, or `*` (every tenant's). */
export type EndpointScope = { tenant: string; endpoint: string };

/** A bare endpoint key names it for every tenant (`*`), as an operator's command without `--tenant` does. */
function scopeOf(scope: EndpointScope | string): EndpointScope {
  return typeof scope === 'string' ? { tenant: '*', endpoint: scope } : scope;
}

export type EndpointPolicy = {
  /** The tenant it applies to, `*` = every tenant. */
  tenant: string;
  /** The canonical endpoint (N4). */
  key: string;
  disabledAt: Date | null;
  disabledBy: 'operator' | 'auto' | null;
  disabledReason: string | null;
  /** Disabled with `--hold`: deliveries kept (held, no deadline) until an operator acts. */
  hold: boolean;
  concurrency: number | null;
  rateLimit: number | null;
  /** N3: the endpoint's timeout floor (null: the default webhook timeout). */
  timeoutFloorMs: number | null;
};

function toPolicy(r: typeof endpoints.$inferSelect): EndpointPolicy {
  return {
    tenant: r.tenant,
    key: r.key,
    disabledAt: r.disabledAt,
    disabledBy: r.disabledBy === 'operator' || r.disabledBy === 'auto' ? r.disabledBy : null,
    disabledReason: r.disabledReason,
    hold: r.hold === true && r.disabledAt !== null,
    concurrency: r.concurrency,
    rateLimit: r.rateLimit,
    timeoutFloorMs: r.timeoutFloorMs,
  };
}

/** A tenant's own policy over the all-tenants one: disabled when either is, its own limits first. */
export function effectivePolicy(own: EndpointPolicy, all: EndpointPolicy): EndpointPolicy {
  const disabler = own.disabledAt ? own : all;
  return {
    ...own,
    disabledAt: disabler.disabledAt,
    disabledBy: disabler.disabledBy,
    disabledReason: disabler.disabledReason,
    hold: (own.disabledAt !== null && own.hold) || (all.disabledAt !== null && all.hold),
    concurrency: own.concurrency ?? all.concurrency,
    rateLimit: own.rateLimit ?? all.rateLimit,
    timeoutFloorMs: own.timeoutFloorMs ?? all.timeoutFloorMs,
  };
}

export async function listEndpointPolicies(db: Db): Promise<EndpointPolicy[]> {
  const rows = await db.select().from(endpoints).orderBy(asc(endpoints.key), asc(endpoints.tenant));
  return rows.map(toPolicy);
}

/**
 * Disables the endpoint; an endpoint already disabled keeps its first reason. True when this call
 * disabled it. `hold` (operators only) keeps its deliveries held with no deadline until an operator
 * acts; asked of an endpoint already disabled, it turns hold on (and clears the deadlines of the
 * rows already held for it). Auto-disable never holds.
 */
export async function disableEndpoint(db: Db, target: EndpointScope | string, by: 'operator' | 'auto', reason: string, hold = false): Promise<boolean> {
  const keep = hold && by === 'operator';
  const { tenant, endpoint: key } = scopeOf(target);
  const result = await db.execute(sql`
    INSERT INTO endpoints (tenant, key, disabled_at, disabled_by, disabled_reason, hold)
    VALUES (${tenant}, ${key}, now(), ${by}, ${reason}, ${keep})
    ON CONFLICT (tenant, key) DO UPDATE
       SET disabled_at = now(), disabled_by = EXCLUDED.disabled_by, disabled_reason = EXCLUDED.disabled_reason, hold = EXCLUDED.hold, updated_at = now()
     WHERE endpoints.disabled_at IS NULL
    RETURNING key`);
  const changed = rowsOf(result).length > 0;
  if (keep) {
    await db.execute(sql`
      WITH ep AS (UPDATE endpoints SET hold = true, updated_at = now() WHERE tenant = ${tenant} AND key = ${key} AND disabled_at IS NOT NULL RETURNING key)
      UPDATE deliveries SET deadline_at = NULL, updated_at = now()
       WHERE status = 'held' AND endpoint_key IN (SELECT key FROM ep) AND (${tenant} = '*' OR tenant = ${tenant})`);
  }
  return changed;
}

/** True when the endpoint was disabled and now is not. */
export async function enableEndpoint(db: Db, target: EndpointScope | string): Promise<boolean> {
  const scope = scopeOf(target);
  const result = await db.execute(sql`
    UPDATE endpoints SET disabled_at = NULL, disabled_by = NULL, disabled_reason = NULL, hold = false, updated_at = now()
     WHERE tenant = ${scope.tenant} AND key = ${scope.endpoint} AND disabled_at IS NOT NULL
    RETURNING key`);
  return rowsOf(result).length > 0;
}

/** Sets (a number) or clears (null) the endpoint's own limits; undefined leaves one as it is. */
export async function setEndpointLimits(
  db: Db,
  target: EndpointScope | string,
  limits: { concurrency?: number | null; rateLimit?: number | null; timeoutFloorMs?: number | null },
): Promise<void> {
  const scope = scopeOf(target);
  const concurrency = limits.concurrency === undefined ? null : limits.concurrency;
  const rateLimit = limits.rateLimit === undefined ? null : limits.rateLimit;
  const floor = limits.timeoutFloorMs === undefined ? null : limits.timeoutFloorMs;
  await db.execute(sql`
    INSERT INTO endpoints (tenant, key, concurrency, rate_limit, timeout_floor_ms) VALUES (${scope.tenant}, ${scope.endpoint}, ${concurrency}, ${rateLimit}, ${floor})
    ON CONFLICT (tenant, key) DO UPDATE
       SET concurrency = ${limits.concurrency === undefined ? sql`endpoints.concurrency` : sql`EXCLUDED.concurrency`},
           rate_limit = ${limits.rateLimit === undefined ? sql`endpoints.rate_limit` : sql`EXCLUDED.rate_limit`},
           timeout_floor_ms = ${limits.timeoutFloorMs === undefined ? sql`endpoints.timeout_floor_ms` : sql`EXCLUDED.timeout_floor_ms`},
           updated_at = now()`);
}

export async function getEndpointPolicy(db: Db, target: EndpointScope | string): Promise<EndpointPolicy | undefined> {
  const scope = scopeOf(target);
  const rows = await db
    .select()
    .from(endpoints)
    .where(and(eq(endpoints.tenant, scope.tenant), eq(endpoints.key, scope.endpoint)))
    .limit(1);
  return rows[0] ? toPolicy(rows[0]) : undefined;
}

/**
 * Parks a delivery whose endpoint is disabled: status `held`, no attempt recorded — only while the
 * endpoint is still disabled (a worker's cached policy may be seconds old) and only for a row
 * still waiting in this generation (a replayed or finished row is left). The row keeps its
 * deadline (`deadlineAt` when it has none yet; the reconciler fails it there, Q3) unless the
 * endpoint was disabled with `--hold`: then it has none and waits for an operator. `kept` says which.
 */
export async function holdDelivery(
  db: Db,
  id: string,
  generation: number,
  scope: EndpointScope,
  deadlineAt: Date,
): Promise<{ result: 'held' | 'enabled' | 'not_waiting'; kept: boolean }> {
  const key = scope.endpoint;
  const result = await db.execute(sql`
    WITH ep AS (SELECT hold FROM endpoints WHERE key = ${key} AND tenant IN (${scope.tenant}, '*') AND disabled_at IS NOT NULL),
         held AS (
           UPDATE deliveries SET status = 'held', endpoint_key = ${key}, lease_expires_at = NULL, next_attempt_at = NULL, updated_at = now(),
                  deadline_at = CASE WHEN (SELECT bool_or(hold) FROM ep) THEN NULL ELSE coalesce(deadline_at, ${deadlineAt.toISOString()}::timestamptz) END
            WHERE id = ${id} AND generation = ${generation} AND status IN ('queued', 'retrying', 'in_flight') AND EXISTS (SELECT 1 FROM ep)
           RETURNING id)
    SELECT (SELECT count(*) FROM ep)::int AS disabled, (SELECT count(*) FROM held)::int AS held, coalesce((SELECT bool_or(hold) FROM ep), false) AS kept`);
  const row = rowsOf<{ disabled: number; held: number; kept: boolean }>(result)[0];
  if (!row || Number(row.disabled) === 0) return { result: 'enabled', kept: false };
  return { result: Number(row.held) > 0 ? 'held' : 'not_waiting', kept: row.kept === true };
}

/** Held deliveries per (tenant, endpoint), as `{ tenant, endpoint, n }` (for `endpoints list`). */
export async function heldCounts(db: Db): Promise<{ tenant: string; endpoint: string; n: number }[]> {
  const result = await db.execute(
    sql`SELECT tenant, endpoint_key AS key, count(*)::int AS n FROM deliveries WHERE status = 'held' GROUP BY tenant, endpoint_key`,
  );
  return rowsOf<{ tenant: string; key: string | null; n: number }>(result).map((r) => ({ tenant: r.tenant, endpoint: r.key ?? '', n: Number(r.n) }));
}

/** Ledger counts for one endpoint (one tenant's, or every tenant's with `*`) by status (for `endpoints show`). */
export async function endpointStatusCounts(db: Db, target: EndpointScope | string): Promise<Record<string, number>> {
  const scope = scopeOf(target);
  const result = await db.execute(
    sql`SELECT status, count(*)::int AS n FROM deliveries WHERE endpoint_key = ${scope.endpoint} AND (${scope.tenant} = '*' OR tenant = ${scope.tenant}) GROUP BY status`,
  );
  return Object.fromEntries(rowsOf<{ status: string; n: number }>(result).map((r) => [r.status, Number(r.n)]));
}
