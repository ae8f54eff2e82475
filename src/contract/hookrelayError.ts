/**
 * The base of every error hookrelay throws on purpose. Each subclass has a stable `code`
 * (`HOOKRELAY_*`, as undici's `UND_ERR_*`): branch on `code`, not on the message, which may be
 * reworded. `error instanceof HookrelayError` is also true for the few errors that must stay a
 * built-in subclass for compatibility (EventValidationError is a TypeError): they carry the
 * brand instead of the prototype.
 */
const BRAND: unique symbol = Symbol.for('hookrelay.error');

export type HookrelayErrorCode = `HOOKRELAY_${string}`;

export abstract class HookrelayError extends Error {
  abstract readonly code: HookrelayErrorCode;

  static override [Symbol.hasInstance](value: unknown): boolean {
    // Only the base answers by brand; `x instanceof SomeSubclass` stays a prototype check.
    if (this !== HookrelayError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
  }
}

// The brand sits on the prototype: every subclass instance inherits it, no own field is added.
Object.defineProperty(HookrelayError.prototype, BRAND, { value: true, enumerable: false });

/** Marks an error of another built-in class (e.g. TypeError) as a hookrelay error. */
export function brandHookrelayError(error: Error): void {
  Object.defineProperty(error, BRAND, { value: true, enumerable: false });
}

/** True for any hookrelay error (same as `instanceof HookrelayError`). */
export function isHookrelayError(value: unknown): value is Error & { code: HookrelayErrorCode } {
  return value instanceof HookrelayError;
}
