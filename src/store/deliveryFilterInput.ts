/**
 * A delivery filter from text fields (CLI flags, console query parameters): one parser, so
 * `hookrelay deliveries list`, `hookrelay replay` and the console accept exactly the same input.
 * A bad field throws FilterInputError naming it (`label` is how the caller spells it).
 */
import { FilterInputError, type FilterField } from '../contract/errors.ts';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../contract/delivery.ts';
import { isDeliveryEventType } from '../contract/hookTypes.ts';
import { canonicalEndpoint } from '../contract/endpoint.ts';
import { TENANT_PATTERN } from '../contract/tenant.ts';
import type { DeliveryFilter } from './deliveriesRepo.ts';

export type FilterFields = { [F in FilterField]?: string };

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A time the ledger can compare with: a valid date in years 1…9999 (Postgres and JS both hold it). */
function storableTime(date: Date): boolean {
  const year = date.getUTCFullYear();
  return !Number.isNaN(date.getTime()) && year >= 1 && year <= 9999;
}

/** ISO 8601, or relative to now (`15m`, `2h`, `3d`, `30s`); a time outside years 1…9999 is refused. */
function parseTimeSpec(value: string, label: string, now: Date = new Date(), field?: 'since' | 'until'): Date {
  const fields = { value, ...(field ? { field } : {}) };
  const relative = /^(\d+)([smhd])$/.exec(value.trim());
  if (relative) {
    const date = new Date(now.getTime() - Number(relative[1]) * (UNIT_MS[relative[2] as string] as number));
    if (storableTime(date)) return date;
    throw new FilterInputError(`${label} reaches back too far (before year 1): use a smaller value or an ISO 8601 time (got "${value}")`, fields);
  }
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const date = new Date(value);
    if (storableTime(date)) return date;
  }
  throw new FilterInputError(`${label} must be an ISO 8601 time or a relative one like 15m, 2h, 3d (got "${value}")`, fields);
}

function checkedTenant(value: string, label: string): string {
  if (!TENANT_PATTERN.test(value)) throw new FilterInputError(`${label} must be 1–128 characters of A-Z a-z 0-9 . _ : -`, { field: 'tenant', value });
  return value;
}

export function deliveryFilterFrom(fields: FilterFields, label: (field: keyof FilterFields) => string): DeliveryFilter {
  if (fields.status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(fields.status)) {
    throw new FilterInputError(`${label('status')} must be one of ${DELIVERY_STATUSES.join(', ')} (got "${fields.status}")`, {
      field: 'status',
      value: fields.status,
    });
  }
  if (fields.event !== undefined && !isDeliveryEventType(fields.event)) {
    throw new FilterInputError(
      `${label('event')} must be a hook type such as onComplete or afterToolCall, or approval.requested / approval.resolved (got "${fields.event}")`,
      {
        field: 'event',
        value: fields.event,
      },
    );
  }
  return {
    ...(fields.status ? { status: fields.status as DeliveryStatus } : {}),
    ...(fields.operation ? { operationId: fields.operation } : {}),
    ...(fields.hook ? { hookId: fields.hook } : {}),
    ...(fields.event ? { eventType: fields.event } : {}),
    // N4: any spelling of the endpoint's URL names it.
    ...(fields.endpoint ? { endpoint: canonicalEndpoint(fields.endpoint) } : {}),
    ...(fields.tenant ? { tenant: checkedTenant(fields.tenant, label('tenant')) } : {}),
    ...(fields.since ? { since: parseTimeSpec(fields.since, label('since'), new Date(), 'since') } : {}),
    ...(fields.until ? { until: parseTimeSpec(fields.until, label('until'), new Date(), 'until') } : {}),
  };
}
