import { TenantError } from './errors.ts';

export { TenantError, TenantMismatchError } from './errors.ts';

/** N1: the tenant of everything the server app does not name a tenant for. */
export const DEFAULT_TENANT = 'default';

/** N1: 1–128 characters of `[A-Za-z0-9._:-]`. */
export const TENANT_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * N1: the tenant the server app named (undefined → `default`), checked; the error names the field,
 * never echoes more than the rule. A tenant is never read from hook config or event data.
 */
export function parseTenant(value: unknown, field = 'tenant'): string {
  if (value === undefined) return DEFAULT_TENANT;
  if (typeof value !== 'string' || !TENANT_PATTERN.test(value)) throw new TenantError(field);
  return value;
}
