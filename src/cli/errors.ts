/** Bad usage or nothing matched: one line on stderr, exit 2. */
export class CliUsageError extends Error {
  override readonly name = 'CliUsageError';
}
