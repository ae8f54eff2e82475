/** Queue errors, in a module without the Redis client so the CLI can name them without loading it. */
import { HookrelayError } from '../contract/hookrelayError.ts';

export class RedisUnavailableError extends HookrelayError {
  readonly code = 'HOOKRELAY_REDIS_UNAVAILABLE' as const;
  override readonly name = 'RedisUnavailableError';
}
