import { HostError } from '../reasons.ts';
import { HostFailureError } from '../../contract/errors.ts';

/**
 * RFC 8785 (JCS) canonical JSON for the `jcs-sha256` identity and the evidence
 * size cap. The input domain is I-JSON: anything outside it fails closed with
 * `host_error:context_invalid` and a value-free detail; nothing is normalized.
 */

/** AGENT-HOOKS-0.1's recommended nesting bound; the root value is depth 1. */
export const DEFAULT_MAX_DEPTH = 128;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

function isPlainObject(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

const INT_BEYOND_2_53 = 'integer exceeds 2^53; string-encode 64-bit identifiers';

/**
 * What a `bigint` is to the domain check. `'reject'` (I-JSON, every context): a bigint is never
 * I-JSON — beyond ±(2^53−1) it names the 2^53 bound, inside it asks for a number. `'json'` (the
 * verdict gate, which only asks "is this JSON?"): a bigint is an integer token the lossless
 * parser kept exact (`parseJsonLossless`); where it would enter a context, that check rejects it.
 */
export type BigIntPolicy = 'reject' | 'json';

/**
 * Value-domain guard: JSON types only, finite numbers, no lone
 * surrogates (in values or member names), nesting within `maxDepth`.
 * Iterative so that a hostile depth cannot overflow the stack before it is
 * rejected. Returns a detail naming the path and constraint, or null.
 */
export function findDomainViolation(root: unknown, maxDepth = DEFAULT_MAX_DEPTH, bigints: BigIntPolicy = 'reject'): string | null {
  const stack: Array<[unknown, string, number]> = [[root, '$', 1]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop() as [unknown, string, number];
    if (depth > maxDepth) return `${path}: nests deeper than ${maxDepth} levels`;
    if (v === null || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return `${path}: non-finite number is not representable in JSON`;
      continue;
    }
    if (typeof v === 'bigint') {
      if (bigints === 'json') continue;
      const safe = v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER);
      return safe ? `${path}: bigint is not an I-JSON value; pass a number` : `${path}: ${INT_BEYOND_2_53}`;
    }
    if (typeof v === 'string') {
      if (hasLoneSurrogate(v)) return `${path}: lone Unicode surrogate is not representable in I-JSON`;
      continue;
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${path}[${i}]`, depth + 1]);
      continue;
    }
    if (typeof v === 'object' && isPlainObject(v)) {
      for (const [k, item] of Object.entries(v)) {
        if (hasLoneSurrogate(k)) return `${path}: member name with a lone Unicode surrogate`;
        if (item === undefined) continue; // absent on the wire
        stack.push([item, `${path}.${k}`, depth + 1]);
      }
      continue;
    }
    return `${path}: ${typeof v} is not a JSON value`;
  }
  return null;
}

/** 10^k as the reference core's table holds them (correctly rounded literals). */
const POW10: number[] = Array.from({ length: 309 }, (_, k) => Number(`1e${k}`));

/**
 * The double the reference Rust core (serde_json, default features) reads back
 * from ECMA-262's shortest rendering of `n`. serde_json builds a non-integer
 * as `significand as f64` scaled by a power of ten, which can land one ULP
 * away from the correctly rounded value for 17-digit significands. Every
 * shipped SDK canonicalizes through that parse, and the golden vectors pin
 * its bytes (G-15), so identities only agree across SDKs if we mirror it.
 */
function referenceCoreDouble(n: number): number {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(n));
  if (m === null) return n;
  const frac = m[3] ?? '';
  let exponent = Number(m[4] ?? '0') - frac.length;
  let f = Number(BigInt(m[2] + frac)); // u64 → f64, round-half-even like `as f64`
  for (;;) {
    const k = Math.abs(exponent);
    if (k < POW10.length) {
      f = exponent >= 0 ? f * POW10[k] : f / POW10[k];
      break;
    }
    if (f === 0 || exponent >= 0) break;
    f /= 1e308;
    exponent += 308;
  }
  return m[1] === '-' ? -f : f;
}

function serializeNumber(n: number, path: string): string {
  if (!Number.isFinite(n)) throw domainError(`${path}: non-finite number is not representable in JSON`);
  if (n === 0) return '0'; // -0 too
  // An integral value below 1e21 renders as an integer token: beyond ±(2^53−1)
  // it has already been rounded, so its identity would be non-injective.
  if (Number.isInteger(n) && Math.abs(n) < 1e21) {
    if (!Number.isSafeInteger(n)) {
      throw domainError(`${path}: ${INT_BEYOND_2_53}`);
    }
    return String(n);
  }
  return String(referenceCoreDouble(n));
}

function domainError(detail: string): HostFailureError {
  return new HostFailureError(HostError.ContextInvalid, detail);
}

function serialize(v: unknown, path: string): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      return serializeNumber(v, path);
    case 'string':
      return JSON.stringify(v); // minimal RFC 8259 escapes, lowercase \u00xx
    default:
      break;
  }
  if (Array.isArray(v)) return `[${v.map((item, i) => serialize(item, `${path}[${i}]`)).join(',')}]`;
  const obj = v as Record<string, unknown>;
  // Default sort compares UTF-16 code units, exactly as RFC 8785 section 3.2.3 requires.
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${serialize(obj[k], `${path}.${k}`)}`).join(',')}}`;
}

/** RFC 8785 canonical form of `value`; throws `HostFailureError(context_invalid)` outside I-JSON. */
export function canonicalizeJcs(value: unknown, maxDepth = DEFAULT_MAX_DEPTH): string {
  const violation = findDomainViolation(value, maxDepth);
  if (violation !== null) throw domainError(violation);
  return serialize(value, '$');
}
