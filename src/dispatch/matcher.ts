import { isToolHookType } from '../contract/hookTypes.ts';

/**
 * D4: a matcher is a RegExp tested against `${identifier}/${apiName}`, tool events only.
 * Absent, `''` or `'*'` match every tool. A fresh RegExp per test: no `lastIndex` state leaks.
 */
export function matchesHook(hook: { type: string; matcher?: string }, event: Record<string, unknown>): boolean {
  const { matcher } = hook;
  if (matcher === undefined || matcher === '' || matcher === '*') return true;
  if (!isToolHookType(hook.type)) return false;
  if (typeof event.identifier !== 'string' || typeof event.apiName !== 'string') return false;
  return new RegExp(matcher).test(`${event.identifier}/${event.apiName}`);
}
