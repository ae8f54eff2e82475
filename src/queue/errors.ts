/** Queue errors, in a module without the Redis client so the CLI can name them without loading it. */

export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
}
