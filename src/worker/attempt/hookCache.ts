/**
 * Parsed hooks by their stored JSON: most jobs of a queue share a few hook configs, so the zod
 * parse runs once per distinct config, not once per delivery. Bounded: past `maxEntries` the
 * cache starts over (a config that stops recurring costs one parse more, never memory).
 */
import type { ParsedSerializedHook } from '../../contract/hook.ts';
import { HookConfigError } from '../../contract/errors.ts';
import { parseSerializedHook } from '../../contract/validate.ts';

const HOOK_CACHE_ENTRIES = 1_000;

export type HookCache = {
  /** undefined when the JSON is not a valid stored hook. */
  parse(json: string): ParsedSerializedHook | undefined;
  /** The same for a hook already decoded (a ledger row's jsonb). */
  parseValue(value: unknown): ParsedSerializedHook | undefined;
  /** Why a stored hook (JSON text or decoded) does not validate: field paths and rules, never values. */
  problem(stored: unknown): string;
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
  // Only on the failure path (a permanent configuration failure), so it parses again rather than caching errors.
  const problem = (stored: unknown): string => {
    let value = stored;
    if (typeof stored === 'string') {
      try {
        value = JSON.parse(stored);
      } catch {
        return 'stored hook is not JSON';
      }
    }
    try {
      parseSerializedHook(value, undefined, { allowEnvironmentIds: true });
      return 'stored hook no longer validates';
    } catch (error) {
      if (!(error instanceof HookConfigError)) return 'stored hook no longer validates';
      return `stored hook no longer validates: ${error.issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`;
    }
  };
  return {
    parse,
    parseValue: (value) => validate(value),
    problem,
  };
}
