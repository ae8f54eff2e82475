/**
 * A non-null object that is not an array — the shape a JSON object, an event or an options bag
 * has. Functions, `null` and arrays are not (class instances are: only the prototype-free check
 * of canonical JSON asks for more).
 */
export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
