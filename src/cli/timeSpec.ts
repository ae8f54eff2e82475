import { CliUsageError } from './errors.ts';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since` / `--until`: ISO 8601, or relative to now (`15m`, `2h`, `3d`, `30s`). */
export function parseTimeSpec(value: string, flag: string, now: Date = new Date()): Date {
  const relative = /^(\d+)([smhd])$/.exec(value.trim());
  if (relative) return new Date(now.getTime() - Number(relative[1]) * UNIT_MS[relative[2]!]!);
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw new CliUsageError(`${flag} must be an ISO 8601 time or a relative one like 15m, 2h, 3d (got "${value}")`);
}
