/**
 * F4/L1: an environment hook's delivery is sent where the worker's environment says now, at every
 * attempt and replay — never where it pointed when it was enqueued. Its hook is looked up by id
 * (`server-env-webhook:<event>`) among this worker's current environment hooks: found → that
 * hook (URL, token template, timeouts: an operator's change applies to the next attempt); gone
 * (URL unset, event unsubscribed) → the delivery is skipped; an invalid environment configuration
 * → a configuration failure naming the variables. A row's stored URL is never contacted, so a row
 * written with a reserved id buys neither the operator's trust nor its token for another URL.
 */
import { ENV_HOOK_VARIABLES, loadEnvHooks } from '../../config/envHooks.ts';
import type { ParsedSerializedHook } from '../../contract/hook.ts';
import { isEnvHookId } from '../../contract/hookTypes.ts';

export type EnvironmentTarget =
  /** Not an environment hook: the stored hook is the target. */
  { kind: 'stored' } | { kind: 'current'; hook: ParsedSerializedHook } | { kind: 'removed' } | { kind: 'invalid'; problem: string };

const STORED: EnvironmentTarget = { kind: 'stored' };
const REMOVED: EnvironmentTarget = { kind: 'removed' };

/** Reads the environment at every call; re-parses only when one of the variables the hooks depend on changed. */
export function createEnvironmentTargets(env: Record<string, string | undefined>): (hookId: string) => EnvironmentTarget {
  let cache: { key: string; hooks: Map<string, ParsedSerializedHook> | Error } | undefined;
  const current = (): Map<string, ParsedSerializedHook> | Error => {
    // The token stays a template (resolved at send time): a rotated token needs no re-parse.
    const key = JSON.stringify(
      Object.values(ENV_HOOK_VARIABLES).map((name) => (name === ENV_HOOK_VARIABLES.token ? (env[name] ?? '').trim() === '' : env[name])),
    );
    if (cache?.key === key) return cache.hooks;
    let hooks: Map<string, ParsedSerializedHook> | Error;
    try {
      hooks = new Map(loadEnvHooks(env).map((h) => [h.id, h]));
    } catch (error) {
      hooks = error instanceof Error ? error : new Error('invalid environment hook configuration');
    }
    cache = { key, hooks };
    return hooks;
  };
  return (hookId) => {
    if (!isEnvHookId(hookId)) return STORED;
    const hooks = current();
    // EnvHookConfigError names the variables, never their values.
    if (hooks instanceof Error) return { kind: 'invalid', problem: `environment hook configuration invalid: ${hooks.message}` };
    const hook = hooks.get(hookId);
    return hook ? { kind: 'current', hook } : REMOVED;
  };
}
