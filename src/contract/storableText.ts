/**
 * Text Postgres cannot store: `\u0000` (refused by `text` and `jsonb`) and unpaired UTF-16
 * surrogates (refused by `jsonb`, which sees JSON.stringify's `\ud800` escape). Inputs carrying
 * either are refused at the front door (events, hook configs, ids), so one caller's bad string
 * never reaches a batched statement; text from receivers is sanitised instead (replacement char).
 */
import { EventValidationError } from './errors.ts';

/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what this finds
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/** U+FFFD, what a sanitised character becomes. */
const REPLACEMENT_CHARACTER = '\uFFFD';

/** Longest key rendered in a path: a path names a field, it is not a copy of the input. */
const MAX_PATH_KEY_CHARS = 64;

export type UnstorableText = {
  /** Where the first bad string is, e.g. `metadata.notes[2]`, `body["k\u0000"]` (key itself); `(root)` for the value itself. */
  path: string;
  /** Whether the key or the value at that path is bad. */
  in: 'key' | 'value';
  problem: 'NUL character (\\u0000)' | 'unpaired UTF-16 surrogate';
};

/** True when Postgres can store the string (no NUL, no lone surrogate). */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** NUL and lone surrogates → U+FFFD; everything else unchanged (for text received from elsewhere). */
export function sanitizeStorableText(text: string): string {
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, REPLACEMENT_CHARACTER) : text;
}

/**
 * D10: a copy of a JSON-like value with every string (keys too) sanitised, or the value itself
 * when nothing needed it — for records built from text hookrelay does not control (an
 * interceptor's deny reason), which must still be written.
 */
export function sanitizeStorableValue<T>(value: T): T {
  if (findUnstorableText(value) === undefined) return value;
  return sanitizeDeep(value) as T;
}

function sanitizeDeep(value: unknown): unknown {
  if (typeof value === 'string') return sanitizeStorableText(value);
  if (Array.isArray(value)) return value.map(sanitizeDeep);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) out[sanitizeStorableText(key)] = sanitizeDeep(child);
  return out;
}

function problemOf(text: string): UnstorableText['problem'] {
  return text.includes('\u0000') ? 'NUL character (\\u0000)' : 'unpaired UTF-16 surrogate';
}

function pathKey(key: string): string {
  const shown = key.length > MAX_PATH_KEY_CHARS ? `${key.slice(0, MAX_PATH_KEY_CHARS)}…` : key;
  // JSON.stringify escapes NUL and lone surrogates, so a path never carries the bad text itself.
  return /^[A-Za-z_$][\w$]*$/.test(shown) ? `.${shown}` : `[${JSON.stringify(shown)}]`;
}

function join(parent: string, segment: string): string {
  if (parent === '') return segment.startsWith('.') ? segment.slice(1) : segment;
  return `${parent}${segment}`;
}

/**
 * The path of the first string (object key or value, at any depth) Postgres cannot store, or
 * undefined. Iterative (no stack overflow on deep input) and visits each object once (cycles end).
 * Only own enumerable keys are read, as JSON.stringify does.
 */
export function findUnstorableText(value: unknown, rootPath = ''): UnstorableText | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value, path: rootPath }];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const { value: current, path } = stack.pop() as { value: unknown; path: string };
    if (typeof current === 'string') {
      if (!isStorableText(current)) return { path: path || '(root)', in: 'value', problem: problemOf(current) };
      continue;
    }
    if (current === null || typeof current !== 'object' || seen.has(current)) continue;
    seen.add(current);
    const children: Array<{ value: unknown; path: string }> = [];
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i += 1) children.push({ value: current[i], path: `${path}[${i}]` });
    } else {
      for (const key of Object.keys(current)) {
        const keyPath = join(path, pathKey(key));
        if (!isStorableText(key)) return { path: keyPath, in: 'key', problem: problemOf(key) };
        children.push({ value: (current as Record<string, unknown>)[key], path: keyPath });
      }
    }
    // Reversed onto the stack: the first bad string in document order is the one reported.
    for (let i = children.length - 1; i >= 0; i -= 1) stack.push(children[i] as { value: unknown; path: string });
  }
  return undefined;
}

/** What is wrong at the path, for an error message: names the rule, never the text. */
export function unstorableTextMessage(found: UnstorableText): string {
  return `${found.in === 'key' ? 'a key contains' : 'contains'} a ${found.problem}, which cannot be stored; remove or replace it`;
}

/** One line for an error message: the path and the rule, never the text. */
function describeUnstorableText(found: UnstorableText): string {
  return `${found.path}: ${unstorableTextMessage(found)}`;
}

/**
 * D10: an event (or an id travelling with it) that Postgres could not store is refused with an
 * EventValidationError naming the path, before anything is stored. `name` is the root of the path.
 */
export function assertStorableEvent(value: unknown, label: string, name = 'event'): void {
  const found = findUnstorableText(value, name);
  if (found !== undefined) throw new EventValidationError(`${label}: ${describeUnstorableText(found)}`);
}
