import { HookrelayError } from './hookrelayError.ts';

/** One critical failure of a tier: the hook and its sanitized cause. */
export type CriticalFailure = { hookId: string; cause: unknown };

/**
 * D6: webhooks with `fallback: 'none'` that failed, thrown after the rest of the tier ran. Names
 * the first failing hook and lists every critical failure of the tier. Fatal in the worker (Q4).
 */
export class CriticalHookDeliveryError extends HookrelayError {
  readonly code = 'HOOKRELAY_CRITICAL_DELIVERY_FAILED' as const;
  override readonly name = 'CriticalHookDeliveryError';
  readonly hookId: string;
  override readonly cause: unknown;
  readonly failures: CriticalFailure[];

  constructor(failures: CriticalFailure[]) {
    const first = failures[0];
    if (!first) throw new TypeError('CriticalHookDeliveryError needs at least one failure');
    const more =
      failures.length > 1
        ? ` (+${failures.length - 1} more: ${failures
            .slice(1)
            .map((f) => f.hookId)
            .join(', ')})`
        : '';
    super(`Critical webhook delivery failed: ${first.hookId}${more}`);
    this.hookId = first.hookId;
    this.cause = first.cause;
    this.failures = failures;
  }
}

/**
 * A sanitized delivery failure used as a critical cause: classes and statuses, never remote text.
 * `name` stays `'WebhookDeliveryFailure'`: a critical failure's logged and reported cause shows it.
 */
export class WebhookDeliveryError extends HookrelayError {
  readonly code = 'HOOKRELAY_WEBHOOK_DELIVERY_FAILED' as const;
  override readonly name = 'WebhookDeliveryFailure';
  constructor(
    readonly errorClass: string,
    readonly httpStatus?: number,
  ) {
    super(httpStatus !== undefined ? `${errorClass}: HTTP ${httpStatus}` : errorClass);
  }
}

/**
 * @deprecated use `WebhookDeliveryError` (the same class; kept so existing `instanceof` checks work).
 * @alias
 */
export const WebhookDeliveryFailure = WebhookDeliveryError;
/** @deprecated use `WebhookDeliveryError`. */
export type WebhookDeliveryFailure = WebhookDeliveryError;
