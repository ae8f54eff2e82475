/**
 * Exit codes: 0 success (also when a filter matched nothing), 1 partial failure (some ids
 * unknown, jobs not added, a storage error), 2 bad usage or an unknown explicit id.
 */
export const EXIT = { ok: 0, partial: 1, usage: 2 } as const;
