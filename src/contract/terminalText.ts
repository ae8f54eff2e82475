/**
 * W7: text that callers, receivers or the environment chose (ids, reasons, excerpts, header
 * values, variable names) must not drive an operator's terminal. Printed, its C0 and C1 control
 * characters, DEL and the bidirectional-text controls (which reorder what is shown, "Trojan
 * Source") are escaped, as git quotes paths and kubectl escapes terminal output; at ingest, ids
 * holding one are refused. Pure functions.
 */
import { EventValidationError } from './errors.ts';

/** C0 (TAB, LF, CR, ESC, …), DEL, C1 (CSI U+009B, OSC U+009D, …), line/paragraph separators, bidi marks, embeddings, overrides and isolates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
const TERMINAL_UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const TERMINAL_UNSAFE_ALL = new RegExp(TERMINAL_UNSAFE.source, 'g');

const NAMED: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function escapeOne(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16).toUpperCase()}}`;
}

/** `text` with every terminal control written as a visible escape (`\x1b`, `\n`, `\u{202E}`); printable text unchanged. */
export function escapeTerminalText(text: string): string {
  return TERMINAL_UNSAFE.test(text) ? text.replace(TERMINAL_UNSAFE_ALL, escapeOne) : text;
}

/** One JSON text with the controls JSON.stringify leaves raw (C1, DEL, bidi, U+2028/9) as `\uXXXX`: the same JSON value, safe on a terminal. */
export function escapeJsonForTerminal(json: string): string {
  // JSON.stringify already escapes C0; what is left can only sit inside strings, where \uXXXX means the same.
  return TERMINAL_UNSAFE.test(json) ? json.replace(TERMINAL_UNSAFE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : json;
}

/**
 * W7 at ingest (register, enqueue, the operation store): an id with a control character is
 * refused with an EventValidationError naming the call and the field, before anything is kept.
 */
export function assertPrintableId(value: string | undefined, call: string, field: string): void {
  if (value === undefined) return;
  const problem = controlCharacterProblem(value);
  if (problem !== undefined) throw new EventValidationError(`${call}: ${field} ${problem}`);
}

/** Why `text` may not be an id shown to operators (a control or bidi character, named by code point and place), or undefined. */
export function controlCharacterProblem(text: string): string | undefined {
  const found = TERMINAL_UNSAFE.exec(text);
  if (found === null) return undefined;
  const code = (found[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
  return `contains a control character (U+${code} at index ${found.index}); ids are printed on operators' terminals, so they must be printable text`;
}
