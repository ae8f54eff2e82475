import type { JsonValue } from '../../contract/agentHooks.ts';
import { ProjectionError } from '../../contract/errors.ts';

const MAX_DEPTH = 256; // beyond the envelope's nesting bound (128): the envelope check names that limit, this only stops runaway recursion

/**
 * The JSON value of an application's native value, as `JSON.stringify` would see it (`toJSON`
 * honoured, `undefined` / functions / symbols dropped from objects and `null` in arrays) — except
 * that a `bigint` is kept as it is, so the envelope check rejects an integer beyond 2^53 by name
 * instead of the serializer throwing or a rounded double slipping through.
 */
export function toJsonValue(value: unknown): JsonValue {
  return walk(value, 0, new Set());
}

function walk(v: unknown, depth: number, seen: Set<object>): JsonValue {
  if (depth > MAX_DEPTH) throw new ProjectionError(`value nests deeper than ${MAX_DEPTH} levels`);
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return v as unknown as JsonValue;
  if (typeof v !== 'object') return null; // undefined, function, symbol: JSON has no such value
  const withToJson = v as { toJSON?: () => unknown };
  if (typeof withToJson.toJSON === 'function') return walk(withToJson.toJSON(), depth + 1, seen);
  if (seen.has(v)) throw new ProjectionError('value contains a cycle');
  seen.add(v);
  try {
    if (Array.isArray(v)) return v.map((item) => (isAbsent(item) ? null : walk(item, depth + 1, seen)));
    const out: { [key: string]: JsonValue } = {};
    for (const [k, item] of Object.entries(v)) if (!isAbsent(item)) out[k] = walk(item, depth + 1, seen);
    return out;
  } finally {
    seen.delete(v);
  }
}

function isAbsent(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}
