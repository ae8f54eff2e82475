/** The errors of src/admin/ (what the CLI and the console share); each edge words its own message from the fields. */
import { HookrelayError } from '../contract/hookrelayError.ts';

/**
 * A filter replay asked for a status that cannot be replayed (usage, nothing changed). The CLI
 * and the console word it from `status` and `includeAccepted`.
 */
export class ReplayStatusError extends HookrelayError {
  readonly code = 'HOOKRELAY_REPLAY_STATUS_INVALID' as const;
  override readonly name = 'ReplayStatusError';
  readonly status: string;
  readonly includeAccepted: boolean;

  constructor(status: string, includeAccepted: boolean) {
    super(`only failed and held deliveries${includeAccepted ? ' and accepted_by_qstash ones' : ''} can be replayed (got status ${status})`);
    this.status = status;
    this.includeAccepted = includeAccepted;
  }
}
