import { HookrelayError } from '../contract/hookrelayError.ts';

/** Bad usage or nothing matched: one line on stderr, exit 2. */
export class CliUsageError extends HookrelayError {
  readonly code = 'HOOKRELAY_CLI_USAGE' as const;
  override readonly name = 'CliUsageError';
}
