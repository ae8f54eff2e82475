/**
 * What the CLI prints. `--json` output is always one JSON document on stdout — an object, or for
 * lists an array with one element per line (`[]` when nothing matched) — so `| jq` works and a
 * cut-off output never parses. Messages for people go to stderr.
 *
 * W7: every text a caller, receiver or the environment chose is shown through `shown()` (or a
 * table cell, which is escaped here): its terminal controls (ESC, OSC, CR, LF, bidi overrides)
 * become visible escapes, so no id can rewrite a row or the clipboard. `--json` stays exact JSON
 * (the controls JSON.stringify leaves raw are written as \uXXXX: the same value).
 */
import { escapeJsonForTerminal, escapeTerminalText } from '../contract/terminalText.ts';

type Out = Pick<NodeJS.WritableStream, 'write'>;

/** A value someone else chose, as one printable piece of a line (`\x1b`, `\n`, `\u{202E}` shown as such). */
export function shown(value: string | number | null | undefined): string {
  return escapeTerminalText(String(value ?? '-'));
}

/** JSON.stringify for the terminal: exact JSON, with C1, DEL and bidi controls as \uXXXX. */
export function jsonText(value: unknown): string {
  return escapeJsonForTerminal(JSON.stringify(value));
}

/** One JSON document (`show`, `stats`, `enqueue`, `replay`). */
export function printJson(value: unknown, out: Out = process.stdout): void {
  out.write(`${jsonText(value)}\n`);
}

/** A list as a JSON array, one element per line. */
export function printJsonArray(rows: readonly unknown[], out: Out = process.stdout): void {
  out.write(rows.length === 0 ? '[]\n' : `[\n${rows.map((r) => jsonText(r)).join(',\n')}\n]\n`);
}

/**
 * Lines for people, each with its controls escaped: a last guard for text a printer built
 * without `shown()` (a line break inside a value still needs `shown()`, or it starts a new line).
 */
export function printLines(lines: readonly string[], out: Out = process.stdout): void {
  out.write(`${lines.join('\n').split('\n').map(escapeTerminalText).join('\n')}\n`);
}

/** Text for people (lines ending in `\n`), each line's controls escaped; on stdout, or `out`. */
export function printText(text: string, out: Out = process.stdout): void {
  out.write(text.split('\n').map(escapeTerminalText).join('\n'));
}

/** `printText` on stderr. */
export function printErrorText(text: string): void {
  printText(text, process.stderr);
}

/** A one-line message on stderr, prefixed `hookrelay: `, its controls escaped (an error may quote an id). */
export function printError(message: string, out: Out = process.stderr): void {
  out.write(`hookrelay: ${escapeTerminalText(message)}\n`);
}

/**
 * Resolves once everything written to `stream` so far has been handed to the OS. Writes to a
 * pipe are asynchronous: a process that exits before this drops what a slow reader has not read
 * yet. A closed reader (EPIPE) or a destroyed stream resolves too: nothing more can be delivered.
 */
export function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    stream.write('', () => resolve());
  });
}

/** An aligned table: a header, then one line per row, columns padded to their widest cell; every cell escaped (W7). */
export function formatTable(columns: readonly string[], cells: readonly (readonly string[])[]): string {
  const rows = cells.map((r) => r.map(escapeTerminalText));
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[line(columns), ...rows.map(line)].join('\n')}\n`;
}

/** A table cell cut to `max` characters with an ellipsis; `show` and `--json` keep the whole text. */
export function truncated(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  const kept = chars.slice(0, max - 1).join('');
  return `${kept.trimEnd()}…`;
}

export function iso(date: Date | null | undefined): string {
  return date ? date.toISOString() : '-';
}
