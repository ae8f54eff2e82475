import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as errors from '../../../src/contract/errors.ts';

type ErrorClass = abstract new (...args: never[]) => Error;

const ERRORS_FILE = path.resolve(import.meta.dirname, '../../../src/contract/errors.ts');

/** Every error class errors.ts exports, by its own name (the deprecated aliases are the same objects). */
function classesOf(module: Record<string, unknown>): Map<string, ErrorClass> {
  const found = new Map<string, ErrorClass>();
  for (const value of Object.values(module)) {
    if (typeof value !== 'function') continue;
    const prototype = (value as { prototype?: unknown }).prototype;
    if (prototype instanceof Error || value === module.HookrelayError) found.set(value.name, value as ErrorClass);
  }
  return found;
}

/** An instance of `cls` without running its constructor: its prototype chain is all that `instanceof` may look at. */
const instanceOf = (cls: ErrorClass): Error => Object.create(cls.prototype) as Error;

/**
 * A second copy of errors.ts (as two installs of the package, or a bundled copy, give): the same
 * file under another URL is another module, with its own classes.
 */
let copy: typeof errors;
beforeAll(async () => {
  copy = (await import(/* @vite-ignore */ `${ERRORS_FILE}?copy=2`)) as typeof errors;
});

describe('ARCH-errors: an error of a second copy of the package is instanceof the classes of this one', () => {
  it('the second copy is another module: its classes are other objects', () => {
    expect(copy.ToolError).not.toBe(errors.ToolError);
    expect(copy.HookrelayError).not.toBe(errors.HookrelayError);
    expect(classesOf(copy).size).toBe(classesOf(errors).size);
  });

  it('for every pair of classes, `instanceof` answers the same across the two copies as within one', () => {
    const ours = classesOf(errors);
    const theirs = classesOf(copy);
    expect(ours.size).toBeGreaterThan(40);
    let holds = 0;
    for (const [name, cls] of ours) {
      const mine = instanceOf(cls);
      const foreign = instanceOf(theirs.get(name)!);
      for (const [otherName, other] of ours) {
        const expected = mine instanceof other;
        if (expected) holds += 1;
        expect(foreign instanceof other, `${name} (second copy) instanceof ${otherName}`).toBe(expected);
        expect(mine instanceof theirs.get(otherName)!, `${name} instanceof ${otherName} (second copy)`).toBe(expected);
      }
    }
    // Each class for itself, each but the base and InterceptionTimeoutError (an Error) for HookrelayError, ApprovalPendingError for InterceptionBlockedError.
    expect(holds).toBeGreaterThanOrEqual(2 * ours.size - 1);
  });

  it('a real error of the second copy keeps its built-in base, its parents and its fields', () => {
    const pending = new copy.ApprovalPendingError(
      { interception_point: 'pre_tool_call', verdict: { decision: 'deny', reason: 'host_error:approval_unresolved' } } as never,
      { decision: 'deny' } as never,
      { id: 'apr_1', tenant: 'default', operationId: 'op', expiresAt: '2026-12-08T00:00:00.000Z' },
    );
    expect(pending).toBeInstanceOf(errors.ApprovalPendingError);
    expect(pending).toBeInstanceOf(errors.InterceptionBlockedError);
    expect(pending).toBeInstanceOf(errors.InterceptionBlocked);
    expect(pending).toBeInstanceOf(errors.HookrelayError);
    expect(pending).not.toBeInstanceOf(errors.ToolError);
    expect(errors.isHookrelayError(pending)).toBe(true);
    expect([pending.name, pending.code, pending.approval.id]).toEqual(['ApprovalPendingError', 'HOOKRELAY_APPROVAL_PENDING', 'apr_1']);

    const invalid = new copy.EventValidationError('event must be an object');
    expect(invalid).toBeInstanceOf(errors.EventValidationError);
    expect(invalid).toBeInstanceOf(errors.HookrelayError);
    expect(invalid).toBeInstanceOf(TypeError);
    expect(invalid).not.toBeInstanceOf(errors.TenantError);
  });

  it('an object carrying a class’s brand is instanceof it (the check is the brand, as undici’s)', () => {
    const branded = { [Symbol.for('hookrelay.error.HOOKRELAY_TOOL_FAILED')]: true, [Symbol.for('hookrelay.error')]: true };
    expect(branded).toBeInstanceOf(errors.ToolError);
    expect(branded).toBeInstanceOf(errors.HookrelayError);
    expect(branded).not.toBeInstanceOf(errors.AgentRunStateError);
    expect({}).not.toBeInstanceOf(errors.ToolError);
    expect(null).not.toBeInstanceOf(errors.HookrelayError);
  });

  it('a subclass a caller declares keeps the prototype check (it has no brand of its own)', () => {
    class RetryableToolError extends errors.ToolError {}
    expect(new RetryableToolError('r')).toBeInstanceOf(RetryableToolError);
    expect(new RetryableToolError('r')).toBeInstanceOf(copy.ToolError);
    expect(new errors.ToolError('r')).not.toBeInstanceOf(RetryableToolError);
    expect(new copy.ToolError('r')).not.toBeInstanceOf(RetryableToolError);
  });
});
