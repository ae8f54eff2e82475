/**
 * Readable error messages for `onError` (and an erroring `onComplete`): an agent runtime's error
 * is often not an `Error` but a provider's error body, an SDK error wrapping one, or a state
 * object with only a type name. `String(error)` of those is `[object Object]`; these pure
 * functions pull out the sentence a person should read, and keep the raw detail as JSON.
 *
 * Rules of `readableErrorMessage(error)` (first that gives a non-empty text wins; each candidate
 * is read the same way, at most 4 levels down):
 *   1. a string: itself (a string holding a JSON object is read as that object);
 *   2. an object (an `Error` too): `body.error.message` (provider bodies: OpenAI, Anthropic, …),
 *      then `body.message`, a string `body.error`, then `error.message` / a string `error`
 *      (SDK errors that carry the body as `error`), then its own `message`, then its `cause`;
 *   3. else the error's type name, humanized: `errorType`, `type`, a string `code`, or an
 *      `Error`'s `name` other than plain `Error` (`InsufficientBudgetForModel` → "Insufficient
 *      budget for model", `invalid_api_key` → "Invalid api key");
 *   4. a number / boolean: its text; anything else: `Unknown error`.
 * Neither `[object Object]` nor the placeholder `error` (nor an empty text) counts as a message.
 * The result is trimmed and at most
 * `MAX_ERROR_MESSAGE_CHARS` characters.
 */

import { isObject } from './isObject.ts';

export const MAX_ERROR_MESSAGE_CHARS = 2_000;
const MAX_LEVELS = 4;
const MAX_DETAIL_DEPTH = 16;
const OBJECT_TEXT = '[object Object]';
const PLACEHOLDER_MESSAGE = 'error';
export const UNKNOWN_ERROR_MESSAGE = 'Unknown error';

/** A JSON value (the shape `errorDetail` takes). */
export type ErrorDetail = null | boolean | number | string | ErrorDetail[] | { [key: string]: ErrorDetail };

function read(v: unknown, key: string): unknown {
  if (!isObject(v) && !(v instanceof Error)) return undefined;
  try {
    return (v as Record<string, unknown>)[key]; // a getter may throw: then there is nothing to read
  } catch {
    return undefined;
  }
}

function clip(text: string): string {
  const t = text.trim();
  return t.length > MAX_ERROR_MESSAGE_CHARS ? `${t.slice(0, MAX_ERROR_MESSAGE_CHARS - 1)}…` : t;
}

/**
 * A usable message text: a non-empty string that is neither `[object Object]` nor the placeholder
 * `error` (any case) some runtimes put where they have no message — as LobeHub, the type name is
 * read instead.
 */
function text(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t === '' || t === OBJECT_TEXT || t.toLowerCase() === PLACEHOLDER_MESSAGE ? undefined : t;
}

/** A string that is itself a JSON object (some SDKs put the provider body into `message`). */
function jsonObjectIn(s: string): Record<string, unknown> | undefined {
  if (!s.startsWith('{') || s.length > 65_536) return undefined;
  try {
    const parsed: unknown = JSON.parse(s);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function messageOf(v: unknown, level: number): string | undefined {
  if (level > MAX_LEVELS) return undefined;
  if (typeof v === 'string') {
    const inner = jsonObjectIn(v.trim());
    return (inner && messageOf(inner, level + 1)) ?? text(v);
  }
  if (!isObject(v) && !(v instanceof Error)) return undefined;
  const body = read(v, 'body');
  const nested = read(v, 'error');
  const candidates: unknown[] = [read(read(body, 'error'), 'message'), read(body, 'message'), read(body, 'error'), read(nested, 'message'), nested];
  for (const c of candidates) {
    const found = typeof c === 'string' ? messageOf(c, level + 1) : undefined;
    if (found) return found;
  }
  const own = read(v, 'message');
  const fromOwn = typeof own === 'string' ? messageOf(own, level + 1) : undefined;
  if (fromOwn) return fromOwn;
  const cause = read(v, 'cause');
  return cause === undefined || cause === v ? undefined : messageOf(cause, level + 1);
}

/** `InsufficientBudgetForModel` → `Insufficient budget for model`; `invalid_api_key` → `Invalid api key`; acronyms kept. */
export function humanizeTypeName(name: string): string {
  const words = name
    .replace(/[_\-.]+/g, ' ')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map((w, i) => (/^[A-Z0-9]{2,}$/.test(w) ? w : i === 0 ? w[0]!.toUpperCase() + w.slice(1).toLowerCase() : w.toLowerCase()));
  return words.join(' ');
}

/** The error's type name, if it has one: `errorType`, `type`, a string `code`, or an `Error`'s own `name`. */
export function errorTypeOf(error: unknown): string | undefined {
  for (const key of ['errorType', 'type', 'code'] as const) {
    const t = text(read(error, key));
    if (t !== undefined && t.length <= 200) return t;
  }
  const body = read(error, 'body');
  const bodyType = text(read(read(body, 'error'), 'type')) ?? text(read(body, 'type'));
  if (bodyType !== undefined && bodyType.length <= 200) return bodyType;
  const name = text(read(error, 'name'));
  return name !== undefined && name !== 'Error' && name.length <= 200 ? name : undefined;
}

/** The readable message of any error shape (the rules at the top of this file); never `[object Object]`. */
export function readableErrorMessage(error: unknown): string {
  const message = messageOf(error, 0);
  if (message !== undefined) return clip(message);
  const type = errorTypeOf(error);
  if (type !== undefined) return clip(humanizeTypeName(type) || type);
  if (typeof error === 'number' || typeof error === 'boolean' || typeof error === 'bigint') return String(error);
  return UNKNOWN_ERROR_MESSAGE;
}

/**
 * The raw error as JSON, for `errorDetail`: an `Error` becomes `{ name, message, …its own
 * enumerable fields, cause }` (JSON.stringify would give `{}`); functions and symbols are dropped,
 * a BigInt becomes its text, a cycle `"[Circular]"`, and nesting stops at 16 levels.
 */
export function errorDetailOf(error: unknown): ErrorDetail {
  const seen = new Set<object>();
  const walk = (v: unknown, depth: number): ErrorDetail | undefined => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
    if (typeof v === 'bigint') return v.toString();
    if (typeof v !== 'object') return undefined; // functions, symbols, undefined
    if (seen.has(v)) return '[Circular]';
    if (depth >= MAX_DETAIL_DEPTH) return '[Truncated]';
    seen.add(v);
    try {
      if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1) ?? null);
      const out: Record<string, ErrorDetail> = {};
      if (v instanceof Error) {
        out.name = v.name;
        out.message = v.message;
      }
      for (const key of Object.keys(v)) {
        const x = walk(read(v, key), depth + 1);
        if (x !== undefined) out[key] = x;
      }
      if (v instanceof Error && v.cause !== undefined && !('cause' in out)) {
        const c = walk(v.cause, depth + 1);
        if (c !== undefined) out.cause = c;
      }
      return out;
    } finally {
      seen.delete(v);
    }
  };
  return walk(error, 0) ?? null;
}

/**
 * An `onError` event with a readable `errorMessage` (the `onError` fields: `errorMessage`, `errorDetail`,
 * error metadata). The error is the event's `errorDetail`, else its `error`, else a non-string
 * `errorMessage`. A non-empty string `errorMessage` the caller gave is kept. The raw error stays
 * in `errorDetail` (as JSON; `error` is folded into it), and `errorType` is filled from the
 * error's type name when the caller gave none. Every field is an ordinary event field, so a
 * hook's `eventFields` projection picks or drops each. Returns a copy.
 */
export function withReadableError<E extends Record<string, unknown>>(event: E): E & { errorMessage: string } {
  const { error: folded, ...rest } = event as Record<string, unknown>;
  const out: Record<string, unknown> = { ...rest };
  const givenMessage = text(out.errorMessage);
  const source = out.errorDetail !== undefined ? out.errorDetail : folded !== undefined ? folded : givenMessage === undefined ? out.errorMessage : undefined;
  if (out.errorDetail === undefined && folded !== undefined) out.errorDetail = errorDetailOf(folded);
  else if (out.errorDetail === undefined && givenMessage === undefined && out.errorMessage !== undefined && typeof out.errorMessage !== 'string') {
    out.errorDetail = errorDetailOf(out.errorMessage);
  } else if (out.errorDetail !== undefined) out.errorDetail = errorDetailOf(out.errorDetail);
  const fromSource = readableErrorMessage(source);
  // A placeholder or empty message with the type given beside it: the type name, humanized.
  const givenType = text(out.errorType);
  out.errorMessage =
    givenMessage !== undefined
      ? clip(givenMessage)
      : fromSource === UNKNOWN_ERROR_MESSAGE && givenType !== undefined
        ? clip(humanizeTypeName(givenType) || givenType)
        : fromSource;
  if (out.errorType === undefined && source !== undefined) {
    const type = errorTypeOf(source);
    if (type !== undefined) out.errorType = type;
  }
  return out as E & { errorMessage: string };
}
