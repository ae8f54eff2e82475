/**
 * The console's checks on what a visitor puts in a URL or a form: text Postgres can store and a
 * page can show (no NUL or other control characters, bounded length), delivery ids in a path
 * segment with well-formed %-escapes, bounded numbers. A bad value is a ConsoleInputError,
 * which the handler answers with 400 and the message — never a 500 from deeper down.
 */
import { ConsoleInputError } from '../contract/errors.ts';

/** Longest single query value accepted unless the caller says otherwise. */
const MAX_QUERY_VALUE = 1_000;

/** C0 and C1 controls (NUL included: Postgres text and jsonb refuse it). */
function hasControlCharacter(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

/** No lone surrogate (Postgres cannot store one; String.prototype.isWellFormed is outside this lib target). */
function wellFormed(value: string): boolean {
  return (value as string & { isWellFormed(): boolean }).isWellFormed();
}

/** Why `value` is not acceptable text for `name`, or undefined. */
export function badTextProblem(value: string, name: string, max = MAX_QUERY_VALUE): string | undefined {
  if (value.length > max) return `${name} is too long (at most ${max} characters)`;
  if (hasControlCharacter(value) || !wellFormed(value)) return `${name} contains a control character or invalid text`;
  return undefined;
}

/** A query parameter's value ('' when absent), or a ConsoleInputError naming it. */
export function textParam(q: URLSearchParams, name: string, max = MAX_QUERY_VALUE): string {
  const value = q.get(name) ?? '';
  const problem = badTextProblem(value, name, max);
  if (problem) throw new ConsoleInputError(problem);
  return value;
}

/** The delivery id in a path segment (percent-decoded), or the reason it is not one. */
export function parseDeliveryIdSegment(segment: string): string | { problem: string } {
  let id: string;
  try {
    id = decodeURIComponent(segment);
  } catch {
    return { problem: 'the delivery id in the path has a malformed %-escape' };
  }
  const problem = badTextProblem(id, 'the delivery id', 200);
  return problem ? { problem } : id;
}

/** `hours` for the overview chart: a whole number 1…24, the default when absent, else the reason. */
export function parseOverviewHours(raw: string | null, fallback: number): number | string {
  if (raw === null || raw.trim() === '') return fallback;
  if (!/^\d{1,2}$/.test(raw.trim())) return `hours must be a whole number from 1 to 24 (got "${raw.slice(0, 40)}")`;
  const n = Number(raw.trim());
  return n >= 1 && n <= 24 ? n : `hours must be a whole number from 1 to 24 (got "${raw.slice(0, 40)}")`;
}
