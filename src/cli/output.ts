/**
 * What the CLI prints. `--json` output is always one JSON document on stdout — an object, or for
 * lists an array with one element per line (`[]` when nothing matched) — so `| jq` works and a
 * cut-off output never parses. Messages for people go to stderr.
 */
type Out = Pick<NodeJS.WritableStream, 'write'>;

/** One JSON document (`show`, `stats`, `enqueue`, `replay`). */
export function printJson(value: unknown, out: Out = process.stdout): void {
  out.write(`${JSON.stringify(value)}\n`);
}

/** A list as a JSON array, one element per line. */
export function printJsonArray(rows: readonly unknown[], out: Out = process.stdout): void {
  out.write(rows.length === 0 ? '[]\n' : `[\n${rows.map((r) => JSON.stringify(r)).join(',\n')}\n]\n`);
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

/** An aligned table: a header, then one line per row, columns padded to their widest cell. */
export function formatTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[line(columns), ...rows.map(line)].join('\n')}\n`;
}

export function iso(date: Date | null | undefined): string {
  return date ? date.toISOString() : '-';
}
