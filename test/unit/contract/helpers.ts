import { inspect } from 'node:util';
import { expect } from 'vitest';
import type { z } from 'zod';
import { HookConfigError } from '../../../src/contract/errors.ts';

export type Issue = { path: string; message: string };

/** Dotted path of a zod issue, e.g. `headers.authorization`, `result.success`. */
export function issuePath(path: readonly PropertyKey[]): string {
  return path.map(String).join('.');
}

/** Parse with `schema`, expect a failure, return its issues with dotted paths. */
export function rejects(schema: z.ZodType, input: unknown): Issue[] {
  const result = schema.safeParse(input);
  if (result.success) expect.fail(`expected ${inspect(input)} to be rejected`);
  return result.error.issues.map((i) => ({ path: issuePath(i.path), message: i.message }));
}

/** Parse with `schema`, expect success, return the output. */
export function accepts<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new Error(`expected success, got: ${JSON.stringify(result.error.issues)}`);
  return result.data;
}

export function paths(issues: Issue[]): string[] {
  return issues.map((i) => i.path);
}

/** Run `fn`, expect a HookConfigError, return it. */
export function hookConfigError(fn: () => unknown): HookConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(HookConfigError);
    return error as HookConfigError;
  }
  throw new Error('expected a HookConfigError');
}
