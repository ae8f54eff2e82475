import { isToolHookType } from './hookTypes.ts';

/**
 * D4: a matcher is a RegExp tested against `${identifier}/${apiName}`, tool events only.
 * Absent, `''` or `'*'` match every tool. Compiled without flags (no `g`/`y`), so no `lastIndex`
 * state leaks between tests.
 */
export function matchesHook(hook: { type: string; matcher?: string }, event: Record<string, unknown>): boolean {
  const { matcher } = hook;
  if (matcher === undefined || matcher === '' || matcher === '*') return true;
  if (!isToolHookType(hook.type)) return false;
  if (typeof event.identifier !== 'string' || typeof event.apiName !== 'string') return false;
  return compiled(matcher).test(`${event.identifier}/${event.apiName}`);
}

/** Matchers compile without flags, so a RegExp has no `lastIndex` state and can be reused. */
const cache = new Map<string, RegExp>();
const CACHE_LIMIT = 1024;

function compiled(matcher: string): RegExp {
  let re = cache.get(matcher);
  if (re === undefined) {
    re = new RegExp(matcher);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(matcher, re);
  }
  return re;
}
