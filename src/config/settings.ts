import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import * as D from '../contract/defaults.ts';
import { signingSecretsProblem } from './signingSecrets.ts';
import { approvalSecretsProblem } from './approvalSecrets.ts';
import { DEFAULT_TEMPLATE_ENV, templateEnvPatternProblem } from '../contract/templateSources.ts';
import { SettingsError } from '../contract/errors.ts';
import { escapeTerminalText } from '../contract/terminalText.ts';

/** The largest whole number a setting takes: setTimeout's ceiling in ms, and Postgres `integer`. */
const MAX_SETTING_INT = 2_147_483_647;
/**
 * A whole number in min…max written in plain digits. `Number()` alone read `1e3` as 1000,
 * `0x10` as 16 and `99999999999` as itself: each is refused here, naming the expected form.
 */
const intFrom = (min: number, max: number = MAX_SETTING_INT) => {
  const rule = `must be a whole number from ${min} to ${max}, in plain digits (not 1e3, 0x10 or 5.0)`;
  return z
    .string()
    .regex(/^\s*\d{1,16}\s*$/, { message: rule })
    .transform(Number)
    .refine((n) => n >= min && n <= max, { message: rule });
};
/** A decimal number in min…max (`0.5`, `24`), plain digits only. */
const decimalFrom = (min: number, max: number) => {
  const rule = `must be a number from ${min} to ${max}, in plain digits (e.g. 24 or 0.5; not 1e3 or 0x10)`;
  return z
    .string()
    .regex(/^\s*\d{1,16}(\.\d{1,16})?\s*$/, { message: rule })
    .transform(Number)
    .refine((n) => n >= min && n <= max, { message: rule });
};
/** Most concurrent deliveries one worker takes (BullMQ holds twice as many jobs in memory). */
const MAX_CONCURRENCY = 10_000;
/** Days are turned into milliseconds: a century keeps that far inside a safe integer. */
const MAX_DAYS = 36_500;

const DATABASE_URL_RULE = 'must be a postgres:// or postgresql:// URL such as postgres://user:password@host:5432/database';
/** Why a DATABASE_URL is unusable, or undefined: a URL node-postgres can dial (a host, or `?host=` for a socket folder). */
function databaseUrlProblem(v: string): string | undefined {
  if (!URL.canParse(v)) return DATABASE_URL_RULE;
  const u = new URL(v);
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') return DATABASE_URL_RULE;
  if (u.hostname === '' && !u.searchParams.has('host')) return DATABASE_URL_RULE;
  return undefined;
}

const REDIS_URL_RULE = 'must be a redis:// or rediss:// URL such as redis://:password@host:6379/0 (port 1-65535, optional db number)';
/** Why a REDIS_URL is unusable, or undefined (ioredis threw a bare "Invalid URL" naming no variable). */
function redisUrlProblem(v: string): string | undefined {
  if (!/^rediss?:\/\//.test(v) || !URL.canParse(v)) return REDIS_URL_RULE;
  const u = new URL(v);
  if (u.port === '0' || !/^(\/\d*)?$/.test(u.pathname)) return REDIS_URL_RULE;
  return undefined;
}

/** Why a HOOKRELAY_ALLOWED_CIDRS value is not a list of CIDRs, naming the entry's position (the SSRF guard parses the same list). */
function allowedCidrsProblem(v: string): string | undefined {
  const entries = v
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const bad = entries.findIndex((e) => !ipaddr.isValidCIDR(e));
  if (bad === -1) return undefined;
  return `entry ${bad + 1} of ${entries.length} is not a CIDR: give comma-separated IPv4/IPv6 ranges such as 10.0.0.0/8,127.0.0.1/32,fd00::/8`;
}

/** Why a HOOKRELAY_OPS_ALLOW_FROM value is not `loopback`, `any` or a list of CIDRs, naming the entry's position. */
function opsAllowFromProblem(v: string): string | undefined {
  const rule = 'must be loopback, any, or comma-separated CIDRs such as 10.0.0.0/8,fd00::/8 (loopback is always allowed)';
  if (/^(loopback|any)$/i.test(v)) return undefined;
  const entries = v
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) return rule;
  const bad = entries.findIndex((e) => e.toLowerCase() !== 'loopback' && !ipaddr.isValidCIDR(e));
  return bad === -1 ? undefined : `entry ${bad + 1} of ${entries.length}: ${rule}`;
}

/** Why a HOOKRELAY_OPS_HOSTS value is not `*` or a list of host names. */
function opsHostsProblem(v: string): string | undefined {
  const names = v
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const ok = names.length > 0 && names.every((n) => n === '*' || /^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$/.test(n));
  return ok ? undefined : 'must be * or comma-separated host names such as worker.internal,hookrelay-worker (no scheme, port or path)';
}

/** A string setting checked by `problem` (a message naming the expected form, never the value). */
const checked = (problem: (v: string) => string | undefined) =>
  z.string().superRefine((v, ctx) => {
    const found = problem(v.trim());
    if (found) ctx.addIssue({ code: 'custom', message: found });
  });
/** An absolute http(s) URL (APP_URL, HOOKRELAY_PUBLIC_URL, QSTASH_URL are bases for HTTP requests). */
const httpUrl = () => z.string().refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), { message: 'must be an http(s) URL' });

const DURATION_UNIT_S: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3_600, d: 86_400 };
/** A duration (`90s`, `30m`, `12h`, `7d`, or bare seconds) between 1 minute and 30 days, read as seconds. */
const consoleDuration = () =>
  z
    .string()
    .regex(/^\s*\d{1,9}\s*[smhd]?\s*$/, { message: 'must be a duration such as 30m, 12h or 7d (or seconds)' })
    .transform((v) => {
      const m = /^\s*(\d+)\s*([smhd]?)\s*$/.exec(v) as RegExpExecArray;
      return Number(m[1]) * (DURATION_UNIT_S[m[2] || 's'] as number);
    })
    .refine((s) => s >= 60 && s <= 30 * 86_400, { message: 'must be between 1m and 30d' });

/** Why a HOOKRELAY_CONSOLE_ORIGIN value is not a bare http(s) origin, or undefined when it is. */
function consoleOriginProblem(v: string): string | undefined {
  const rule = 'must be an http(s) origin such as https://console.example.com or http://127.0.0.1:8788 (no path, query or credentials)';
  if (!URL.canParse(v)) return rule;
  const u = new URL(v);
  if (!/^https?:$/.test(u.protocol) || u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '' || u.pathname !== '/') return rule;
  if (v.includes('?') || v.includes('#')) return rule;
  return undefined;
}

/**
 * Every variable and its rule. What each one means, its documented default (`@defaultValue`) and
 * who reads it are in settingsReference.ts, keyed by these names: `.env.example` and the table in
 * docs/configuration.md are generated from there (`npm run config:docs`, test DEP-5).
 */
export const SettingsSchema = z.object({
  DATABASE_URL: checked(databaseUrlProblem).optional(),
  HOOKRELAY_DATA_DIR: z.string().min(1).default(D.DEFAULT_DATA_DIR),
  REDIS_URL: checked(redisUrlProblem).default(D.DEFAULT_REDIS_URL),
  HOOKRELAY_QUEUE: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, { message: 'letters, digits, "-" and "_" only' })
    .default(D.DEFAULT_QUEUE_NAME),
  APP_URL: httpUrl().optional(),
  HOOKRELAY_ALLOWED_CIDRS: checked(allowedCidrsProblem).optional(),
  HOOKRELAY_SIGNING_SECRETS: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      // Q6: the same parser the send path uses; the message names the entry, never the secret.
      const problem = signingSecretsProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  HOOKRELAY_RETRY_SCHEDULE: z
    .string()
    .default(D.DEFAULT_RETRY_SCHEDULE_SECONDS.join(','))
    .refine((v) => v.split(',').every((s) => /^\s*\d+(\.\d+)?\s*$/.test(s)), { message: 'must be comma-separated seconds' }),
  HOOKRELAY_CONCURRENCY: intFrom(1, MAX_CONCURRENCY).default(D.DEFAULT_CONCURRENCY),
  HOOKRELAY_MAX_PAYLOAD_BYTES: intFrom(1).default(D.DEFAULT_MAX_PAYLOAD_BYTES),
  HOOKRELAY_SPOOL_MAX_BYTES: intFrom(0).optional(),
  HOOKRELAY_RECONCILE_INTERVAL_MS: intFrom(100).default(D.DEFAULT_RECONCILE_INTERVAL_MS),
  HOOKRELAY_LOCK_DURATION_MS: intFrom(100).default(D.DEFAULT_LOCK_DURATION_MS),
  HOOKRELAY_STALLED_INTERVAL_MS: intFrom(100).default(D.DEFAULT_STALLED_INTERVAL_MS),
  HOOKRELAY_SHUTDOWN_TIMEOUT_MS: intFrom(0).default(D.DEFAULT_SHUTDOWN_TIMEOUT_MS),
  HOOKRELAY_HTTP_PORT: intFrom(0, 65_535).default(D.DEFAULT_HTTP_PORT),
  HOOKRELAY_PUBLIC_URL: httpUrl().optional(),
  HOOKRELAY_OPS_ALLOW_FROM: checked(opsAllowFromProblem).optional(),
  HOOKRELAY_OPS_HOSTS: checked(opsHostsProblem).optional(),
  HOOKRELAY_RETENTION_DAYS: intFrom(1, MAX_DAYS).default(D.DEFAULT_RETENTION_DAYS),
  HOOKRELAY_RETENTION_DELETE_DAYS: intFrom(1, MAX_DAYS).optional(),
  HOOKRELAY_QUEUE_PREFIX: z
    .string()
    .regex(/^[^\s:]+$/, { message: 'must be a non-empty prefix without spaces or colons (e.g. bull, or {hookrelay} for Redis Cluster)' })
    .optional(),
  HOOKRELAY_REDIS_CLUSTER: z
    .string()
    .regex(/^(true|false|1|0)$/i, { message: 'must be true or false' })
    .optional()
    .transform((v) => (v === undefined ? undefined : /^(true|1)$/i.test(v))),
  HOOKRELAY_ENDPOINT_ISOLATION: z
    .string()
    .regex(/^(true|false|1|0)$/i, { message: 'must be true or false' })
    .optional()
    .transform((v) => (v === undefined ? undefined : /^(true|1)$/i.test(v))),
  HOOKRELAY_ENDPOINT_CONCURRENCY: intFrom(0).optional(),
  HOOKRELAY_METRICS_TENANTS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const names = (v ?? 'default')
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== '');
      if (names.length > 50 || names.some((t) => !/^[A-Za-z0-9._:-]{1,128}$/.test(t) || t === 'other')) {
        ctx.addIssue({ code: 'custom', message: 'must be at most 50 comma-separated tenants (1–128 characters of A-Z a-z 0-9 . _ : -, not "other")' });
        return z.NEVER;
      }
      return names;
    }),
  HOOKRELAY_BREAKER_FAILURES: intFrom(1).optional(),
  HOOKRELAY_BREAKER_COOLDOWN_MS: intFrom(100).optional(),
  HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS: decimalFrom(0, 8_760).optional(),
  HOOKRELAY_MIGRATE: z
    .string()
    .regex(/^(true|false|1|0)$/i, { message: 'must be true or false' })
    .default('true')
    .transform((v) => /^(true|1)$/i.test(v)),
  HOOKRELAY_TEMPLATE_ENV: z
    .string()
    .default(DEFAULT_TEMPLATE_ENV)
    .superRefine((v, ctx) => {
      const problem = templateEnvPatternProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  HOOKRELAY_CONSOLE_TOKEN: z.string().min(16, { message: 'must be at least 16 characters (e.g. openssl rand -hex 24)' }).optional(),
  HOOKRELAY_CONSOLE_ORIGIN: z
    .string()
    .transform((v, ctx) => {
      const problem = consoleOriginProblem(v.trim());
      if (!problem) return new URL(v.trim()).origin;
      ctx.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    })
    .optional(),
  HOOKRELAY_CONSOLE_IDLE_TIMEOUT: consoleDuration().prefault('30m'),
  HOOKRELAY_CONSOLE_SESSION_MAX_AGE: consoleDuration().prefault('12h'),
  HOOKRELAY_APPROVER_URL: httpUrl().optional(),
  HOOKRELAY_APPROVAL_SECRETS: checked((v) => approvalSecretsProblem(v)).optional(),
  HOOKRELAY_APPROVAL_SWEEP_MS: intFrom(100).default(D.DEFAULT_APPROVAL_SWEEP_MS),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default(D.DEFAULT_LOG_LEVEL),
  QSTASH_URL: httpUrl().optional(),
  QSTASH_TOKEN: z.string().optional(),
  QSTASH_CURRENT_SIGNING_KEY: z.string().optional(),
  QSTASH_NEXT_SIGNING_KEY: z.string().optional(),
});

export type Settings = z.output<typeof SettingsSchema> & { retryScheduleSeconds: number[] };

/** Variables whose values are secrets: never printed, even in a validation error. */
const SECRET_VARIABLES = new Set([
  'DATABASE_URL',
  'HOOKRELAY_SIGNING_SECRETS',
  'QSTASH_TOKEN',
  'HOOKRELAY_CONSOLE_TOKEN',
  'HOOKRELAY_APPROVAL_SECRETS',
  'QSTASH_CURRENT_SIGNING_KEY',
  'QSTASH_NEXT_SIGNING_KEY',
  'REDIS_URL',
]);

export type SettingName = keyof typeof SettingsSchema.shape;
export const SETTING_NAMES = Object.keys(SettingsSchema.shape) as SettingName[];

/** Empty strings count as unset. */
function presentValues(env: Readonly<Record<string, string | undefined>>, names: readonly SettingName[]): Record<string, string> {
  const input: Record<string, string> = {};
  for (const key of names) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') input[key] = value;
  }
  return input;
}

function settingsError(error: z.ZodError): SettingsError {
  const variables = [...new Set(error.issues.map((i) => String(i.path[0])))];
  const lines = error.issues.map((i) => {
    const name = String(i.path[0]);
    // The rules are hookrelay's own words (expected form, entry position), never the value.
    const rule = SECRET_VARIABLES.has(name) ? `${i.message} (the value is not shown: it may hold a secret)` : i.message;
    return `${name}: ${rule}`;
  });
  return new SettingsError(variables, `Invalid configuration: ${lines.join('; ')}. Fix the variable(s) and start again.`);
}

/** Edits (insert, delete, substitute) between two names: the closest setting to a misspelled one. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length] as number;
}

/** Longest name compared (a variable name is short; a pasted value would make the distance slow). */
const MAX_COMPARED_NAME = 128;

/**
 * One line per `HOOKRELAY_*` variable that is no setting of hookrelay (a typo such as
 * HOOKRELAY_CONCURENCY would otherwise be ignored silently), naming the closest known name when
 * one is near. Names only, never values.
 */
export function unknownSettingWarnings(env: Readonly<Record<string, string | undefined>>): string[] {
  const known = SETTING_NAMES as readonly string[];
  return Object.keys(env)
    .filter((name) => name.startsWith('HOOKRELAY_') && !known.includes(name) && name.length <= MAX_COMPARED_NAME)
    .sort()
    .map((name) => {
      const [closest] = known.map((candidate) => ({ candidate, distance: editDistance(name, candidate) })).sort((x, y) => x.distance - y.distance);
      const near = closest !== undefined && closest.distance <= Math.max(2, Math.floor(name.length / 5));
      // W7: the name is the environment's choice: its terminal controls are shown escaped.
      const shown = escapeTerminalText(name);
      return near
        ? `${shown} is not a hookrelay setting and is ignored: did you mean ${closest.candidate}?`
        : `${shown} is not a hookrelay setting and is ignored (docs/configuration.md lists every setting)`;
    });
}

/** Names already warned about in this process: a worker and its CLI read the settings more than once. */
const warnedUnknown = new Set<string>();

export type LoadSettingsOptions = {
  /** Where the unknown-variable warnings go (default: one `hookrelay: warning:` line each on stderr). */
  warn?: (line: string) => void;
};

/**
 * Read the settings from an environment, once, at the edge (worker, CLI). Empty strings count as
 * unset. A bad value throws a SettingsError naming the variable and the rule, never the value. An
 * unknown `HOOKRELAY_*` variable is warned about once per process.
 */
export function loadSettings(env: Readonly<Record<string, string | undefined>> = process.env, options: LoadSettingsOptions = {}): Settings {
  const warn = options.warn ?? ((line: string) => process.stderr.write(`hookrelay: warning: ${line}\n`));
  for (const line of unknownSettingWarnings(env)) {
    const name = line.slice(0, line.indexOf(' '));
    if (warnedUnknown.has(name)) continue;
    warnedUnknown.add(name);
    warn(line);
  }
  const result = SettingsSchema.safeParse(presentValues(env, SETTING_NAMES));
  if (!result.success) throw settingsError(result.error);
  assertQueuePrefixFits(result.data.HOOKRELAY_QUEUE_PREFIX, result.data.HOOKRELAY_REDIS_CLUSTER);
  const retryScheduleSeconds = result.data.HOOKRELAY_RETRY_SCHEDULE.split(',').map((s) => Number(s.trim()));
  return { ...result.data, retryScheduleSeconds };
}

/**
 * The slice of the settings a library factory needs (producer, operation store, dispatcher,
 * remote interceptor), read with the same schema and defaults as `loadSettings`, so a server
 * app is not refused for a variable only the worker reads.
 */
export function readSettings<K extends SettingName>(
  names: readonly K[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): Pick<z.output<typeof SettingsSchema>, K> {
  const input = presentValues(env, names);
  const out: Record<string, unknown> = {};
  const issues: z.core.$ZodIssue[] = [];
  for (const name of names) {
    // Each field's own schema: the same rule and default as the whole object's.
    const field = SettingsSchema.shape[name] as z.ZodType;
    const parsed = field.safeParse(input[name]);
    if (parsed.success) out[name] = parsed.data;
    else issues.push(...parsed.error.issues.map((i) => ({ ...i, path: [name, ...i.path] })));
  }
  if (issues.length > 0) throw settingsError(new z.ZodError(issues));
  return out as unknown as Pick<z.output<typeof SettingsSchema>, K>;
}

/**
 * Redis Cluster keeps a queue working only when all its keys share one hash slot: BullMQ's
 * prefix must then be a hash tag (`{hookrelay}`). Throws a SettingsError naming the variable.
 */
export function assertQueuePrefixFits(prefix: string | undefined, cluster: boolean | undefined): void {
  if (cluster === true && !/^\{[^{}]+\}$/.test(prefix ?? D.DEFAULT_QUEUE_PREFIX)) {
    throw new SettingsError(
      ['HOOKRELAY_QUEUE_PREFIX'],
      'Invalid configuration: HOOKRELAY_QUEUE_PREFIX: must be a hash tag such as {hookrelay} when HOOKRELAY_REDIS_CLUSTER=true (every key of a queue must live in one cluster slot). Fix the variable(s) and start again.',
    );
  }
}

export function signingSecrets(settings: Pick<Settings, 'HOOKRELAY_SIGNING_SECRETS'>): string[] {
  return settings.HOOKRELAY_SIGNING_SECRETS ? settings.HOOKRELAY_SIGNING_SECRETS.trim().split(/\s+/) : [];
}
