import type { FilterFlags } from './deliveriesCommand.ts';

/** Above this many, a replay needs --yes (or a yes at the TTY prompt). */
export const CONFIRM_ABOVE = 100;

export type ReplayFlags = FilterFlags & { includeAccepted?: boolean; dryRun?: boolean; rate?: number; yes?: boolean; json?: boolean };
