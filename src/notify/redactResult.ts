/**
 * B2: tool-result notifications must not carry the raw payload of a skill's Work registration.
 * That payload (`args` / `data`) exists only so the server can register the Work version
 * in-process; it is untruncated and can be huge. Task (and other) Work registrations are small
 * references and are kept as they are.
 */

import { isObject } from '../util/isObject.ts';

/**
 * Returns a copy of `result` whose skill `workRegistration` has no `args` and `data: null`;
 * any other value is returned as is (same reference). The input is never mutated.
 */
export function redactResultForEvents<T>(result: T): T {
  if (!isObject(result)) return result;
  const work = result.workRegistration;
  if (!isObject(work) || work.type !== 'skill') return result;
  const { args: _args, ...kept } = work;
  return { ...result, workRegistration: { ...kept, data: null } } as T;
}
