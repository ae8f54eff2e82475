/**
 * Parsed hooks by their stored JSON: most jobs of a queue share a few hook configs, so the zod
 * parse runs once per distinct config, not once per delivery. Bounded: past `maxEntries` the
 * cache starts over (a config that stops recurring costs one parse more, never memory).
 */
import type { ParsedSerializedHook } from '../contract/hook.ts';
import { parseSerializedHook } from '../contract/validate.ts';

export const HOOK_CACHE_ENTRIES = 1_000;

export type HookCache = {
  /** undefined when the JSON is not a valid stored hook. */
  parse(json: string): ParsedSerializedHook | undefined;
  /** The same for a hook already decoded (a ledger row's jsonb). */
  parseValue(value: unknown): ParsedSerializedHook | undefined;
};

export function createHookCache(maxEntries = HOOK_CACHE_ENTRIES): HookCache {
  let entries = new Map<string, ParsedSerializedHook | undefined>();
  const validate = (value: unknown): ParsedSerializedHook | undefined => {
    try {
      return parseSerializedHook(value, undefined, { allowEnvironmentIds: true });
    } catch {
      return undefined;
    }
  };
  const parse = (json: string): ParsedSerializedHook | undefined => {
    if (entries.has(json)) return entries.get(json);
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      value = undefined;
    }
    const parsed = value === undefined ? undefined : validate(value);
    if (entries.size >= maxEntries) entries = new Map();
    entries.set(json, parsed);
    return parsed;
  };
  return {
    parse,
    parseValue: (value) => validate(value),
  };
}
