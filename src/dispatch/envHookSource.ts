import { ENV_HOOK_VARIABLES, loadEnvHooks } from '../config/envHooks.ts';
import type { RunnableHook } from './runnableHook.ts';

const NO_HOOKS: RunnableHook[] = [];

/**
 * E4/L1: the current environment's hooks, read at every call (an operator's change applies at
 * once) and rebuilt only when one of the five variables they depend on changes. Trusted (Q5).
 * Throws naming the variables when the configuration is invalid.
 */
export function createEnvHookSource(env: Record<string, string | undefined>): () => RunnableHook[] {
  let cache: { key: string; hooks: RunnableHook[] } | undefined;
  return () => {
    const url = env[ENV_HOOK_VARIABLES.url];
    if (url === undefined || url.trim() === '') return NO_HOOKS; // E2: unset or blank = off
    // A rotated token needs no rebuild: it stays a template, resolved at send time (W2).
    const token = env[ENV_HOOK_VARIABLES.token];
    const key = JSON.stringify([
      url,
      token === undefined || token.trim() === '',
      env[ENV_HOOK_VARIABLES.events],
      env[ENV_HOOK_VARIABLES.responseHandling],
      env[ENV_HOOK_VARIABLES.onError],
    ]);
    if (cache && cache.key === key) return cache.hooks;
    const hooks = loadEnvHooks(env).map((h) => ({ ...h, env: true }));
    cache = { key, hooks };
    return hooks;
  };
}
