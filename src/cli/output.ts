/** Rows as JSON lines (`--json`): one object per line, parseable by jq. */
export function printJsonLines(rows: readonly unknown[], out: NodeJS.WritableStream = process.stdout): void {
  for (const row of rows) out.write(`${JSON.stringify(row)}\n`);
}

/** An aligned table: a header, then one line per row, columns padded to their widest cell. */
export function formatTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(columns), ...rows.map(line)].join('\n') + '\n';
}

export function iso(date: Date | null | undefined): string {
  return date ? date.toISOString() : '-';
}
