import { RE2JS } from 're2js';
import { isToolHookType } from './hookTypes.ts';

/**
 * D4 / SEC-H4: a matcher is a regular expression tested against `${identifier}/${apiName}`, tool
 * events only. Absent, `''` or `'*'` match every tool. Patterns run on RE2 (re2js, a pure-JS
 * port): matching takes time linear in the identifier, so a hook author cannot stall the event
 * loop with a catastrophic pattern (`^(a|aa)+$`). RE2 has no backreferences or lookaround; such a
 * pattern is refused at registration (`matcherProblem`), like a pattern that does not parse.
 * Same semantics as the JavaScript RegExp it replaces, where both accept a pattern: unanchored
 * search, no flags (`^`/`$` at the ends of the text, `.` not matching `\n`), case-sensitive.
 */

/** Longer patterns are refused: a matcher names tools, and compile cost grows with its length. */
export const MAX_MATCHER_LENGTH = 4_096;
/**
 * Upper bound on the compiled program (RE2 instructions). Matching is linear in the input but
 * proportional to the program too; `.{1000}` is ~1,000 instructions, a list of 100 tool names a
 * few hundred. The bound keeps one test of a 10,000-character identifier in the low milliseconds.
 */
const MAX_MATCHER_PROGRAM_SIZE = 5_000;

function isMatchAll(matcher: string): boolean {
  return matcher === '' || matcher === '*';
}

/** Compiled once per distinct pattern (validation and every dispatch share it). */
const cache = new Map<string, RE2JS>();
const CACHE_LIMIT = 1024;

/** Throws when the pattern is unusable; the message says why (never the pattern, which may be long). */
function compile(matcher: string): RE2JS {
  const hit = cache.get(matcher);
  if (hit !== undefined) return hit;
  if (matcher.length > MAX_MATCHER_LENGTH) throw new Error(`is longer than ${MAX_MATCHER_LENGTH} characters`);
  const re = RE2JS.compile(matcher);
  if (re.programSize() > MAX_MATCHER_PROGRAM_SIZE) throw new Error(`compiles to more than ${MAX_MATCHER_PROGRAM_SIZE} instructions`);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(matcher, re);
  return re;
}

/** RE2's reason without the quoted fragment (`error parsing regexp: invalid escape sequence: \`\\1\``). */
function reason(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/^error parsing regexp: /, '').replace(/: `[\s\S]*`$/, '');
}

/**
 * D4 / SEC-H4: why a matcher cannot be used, or undefined. Checked by the hook schemas, so every
 * entry (register, enqueue, createOperation, restored and job hooks) refuses it with a
 * HookConfigError naming `matcher`.
 */
export function matcherProblem(matcher: string): string | undefined {
  if (isMatchAll(matcher)) return undefined;
  try {
    compile(matcher);
    return undefined;
  } catch (error) {
    return `is not a valid regular expression for the linear-time matcher engine (RE2 syntax: no backreferences or lookaround): ${reason(error)}`;
  }
}

export function matchesHook(hook: { type: string; matcher?: string }, event: Record<string, unknown>): boolean {
  const { matcher } = hook;
  if (matcher === undefined || isMatchAll(matcher)) return true;
  if (!isToolHookType(hook.type)) return false;
  if (typeof event.identifier !== 'string' || typeof event.apiName !== 'string') return false;
  return compile(matcher).test(`${event.identifier}/${event.apiName}`);
}
