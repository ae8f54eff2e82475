/** N1: the tenant of everything the server app does not name a tenant for. */
const DEFAULT_TENANT = 'default';

/** N1: 1–128 characters of `[A-Za-z0-9._:-]`. */
export const TENANT_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * N1: the tenant the server app named (undefined → `default`), checked; the error names the field,
 * never echoes more than the rule. A tenant is never read from hook config or event data.
 */
export function parseTenant(value: unknown, field = 'tenant'): string {
  if (value === undefined) return DEFAULT_TENANT;
  if (typeof value !== 'string' || !TENANT_PATTERN.test(value)) throw new TypeError(`${field} must be 1–128 characters of A-Z a-z 0-9 . _ : - (N1)`);
  return value;
}
