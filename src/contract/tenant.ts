import { brandHookrelayError } from './hookrelayError.ts';

/** N1: the tenant of everything the server app does not name a tenant for. */
export const DEFAULT_TENANT = 'default';

/** N1: 1–128 characters of `[A-Za-z0-9._:-]`. */
export const TENANT_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * N1: a tenant that is not a bounded token. A TypeError (as the other bad-input errors of
 * register and enqueue); the message names the field and the rule, never the value.
 */
export class TenantError extends TypeError {
  override readonly name = 'TenantError';
  readonly code = 'HOOKRELAY_TENANT_INVALID' as const;
  readonly field: string;

  constructor(field: string) {
    super(`${field} must be 1–128 characters of A-Z a-z 0-9 . _ : - (N1)`);
    this.field = field;
    brandHookrelayError(this);
  }
}

/**
 * N1: an operation registered (or stored) under one tenant was used with another: a caller bug,
 * never guessed between (the operation keeps the tenant it has).
 */
export class TenantMismatchError extends TypeError {
  override readonly name = 'TenantMismatchError';
  readonly code = 'HOOKRELAY_TENANT_MISMATCH' as const;
  readonly operationId: string;

  constructor(operationId: string, registered: string, given: string) {
    super(
      `operation ${JSON.stringify(operationId.slice(0, 200))} belongs to tenant ${JSON.stringify(registered)}; it was used with tenant ${JSON.stringify(given)} (N1)`,
    );
    this.operationId = operationId;
    brandHookrelayError(this);
  }
}

/**
 * N1: the tenant the server app named (undefined → `default`), checked; the error names the field,
 * never echoes more than the rule. A tenant is never read from hook config or event data.
 */
export function parseTenant(value: unknown, field = 'tenant'): string {
  if (value === undefined) return DEFAULT_TENANT;
  if (typeof value !== 'string' || !TENANT_PATTERN.test(value)) throw new TenantError(field);
  return value;
}
