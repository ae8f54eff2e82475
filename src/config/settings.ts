import { z } from 'zod';
import * as D from '../contract/defaults.ts';
import { signingSecretsProblem } from '../contract/signingSecrets.ts';
import { DEFAULT_TEMPLATE_ENV, templateEnvPatternProblem } from '../contract/templateSources.ts';
import { HookrelayError } from '../contract/hookrelayError.ts';

const intFrom = (min: number) => z.coerce.number().int().min(min);
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

/** SPEC §13: every variable, its default and its rule. One source of truth for the README table. */
export const SettingsSchema = z.object({
  DATABASE_URL: z.string().url().optional(),
  HOOKRELAY_DATA_DIR: z.string().min(1).default(D.DEFAULT_DATA_DIR),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, { message: 'must be a redis:// or rediss:// URL' })
    .default(D.DEFAULT_REDIS_URL),
  HOOKRELAY_QUEUE: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, { message: 'letters, digits, "-" and "_" only' })
    .default(D.DEFAULT_QUEUE_NAME),
  APP_URL: httpUrl().optional(),
  HOOKRELAY_ALLOWED_CIDRS: z.string().optional(),
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
  HOOKRELAY_CONCURRENCY: intFrom(1).default(D.DEFAULT_CONCURRENCY),
  HOOKRELAY_MAX_PAYLOAD_BYTES: intFrom(1).default(D.DEFAULT_MAX_PAYLOAD_BYTES),
  HOOKRELAY_RECONCILE_INTERVAL_MS: intFrom(100).default(D.DEFAULT_RECONCILE_INTERVAL_MS),
  HOOKRELAY_LOCK_DURATION_MS: intFrom(100).default(D.DEFAULT_LOCK_DURATION_MS),
  HOOKRELAY_STALLED_INTERVAL_MS: intFrom(100).default(D.DEFAULT_STALLED_INTERVAL_MS),
  HOOKRELAY_SHUTDOWN_TIMEOUT_MS: intFrom(0).default(D.DEFAULT_SHUTDOWN_TIMEOUT_MS),
  HOOKRELAY_HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(D.DEFAULT_HTTP_PORT),
  HOOKRELAY_PUBLIC_URL: httpUrl().optional(),
  HOOKRELAY_RETENTION_DAYS: intFrom(1).default(D.DEFAULT_RETENTION_DAYS),
  /** Q11 (opt-in): finished rows older than this many days are deleted, metadata and all; unset keeps their metadata forever. */
  HOOKRELAY_RETENTION_DELETE_DAYS: intFrom(1).optional(),
  /** BullMQ's key prefix (unset: `bull`); with HOOKRELAY_REDIS_CLUSTER it must be a hash tag (`{hookrelay}`). */
  HOOKRELAY_QUEUE_PREFIX: z
    .string()
    .regex(/^[^\s:]+$/, { message: 'must be a non-empty prefix without spaces or colons (e.g. bull, or {hookrelay} for Redis Cluster)' })
    .optional(),
  /** `true`: REDIS_URL is a seed node of a Redis Cluster (ioredis Cluster client; hash-tagged prefix required). Unset = false. */
  HOOKRELAY_REDIS_CLUSTER: z
    .string()
    .regex(/^(true|false|1|0)$/i, { message: 'must be true or false' })
    .optional()
    .transform((v) => (v === undefined ? undefined : /^(true|1)$/i.test(v))),
  /** `false` turns endpoint isolation off (no cap, rate limit, breaker or disable). Unset = on. */
  HOOKRELAY_ENDPOINT_ISOLATION: z
    .string()
    .regex(/^(true|false|1|0)$/i, { message: 'must be true or false' })
    .optional()
    .transform((v) => (v === undefined ? undefined : /^(true|1)$/i.test(v))),
  /** Concurrent attempts per endpoint across all workers (unset: 16); 0 = no cap. */
  HOOKRELAY_ENDPOINT_CONCURRENCY: intFrom(0).optional(),
  /** Consecutive failures that open an endpoint's circuit breaker (unset: 5). */
  HOOKRELAY_BREAKER_FAILURES: intFrom(1).optional(),
  /** First open period of a breaker in ms, doubled after each failed probe up to 5 min (unset: 10000). */
  HOOKRELAY_BREAKER_COOLDOWN_MS: intFrom(100).optional(),
  /** Hours without a successful delivery, while failing, after which an endpoint is disabled (unset: 24); 0 = never. */
  HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS: z.coerce.number().min(0).max(8_760).optional(),
  /** `false` when a separate migrate job owns the schema: the worker then starts without migrating. */
  HOOKRELAY_MIGRATE: z
    .string()
    .regex(/^(true|false|1|0)$/i, { message: 'must be true or false' })
    .default('true')
    .transform((v) => /^(true|1)$/i.test(v)),
  /** W2: which variables hook templates may read (comma-separated names, `*` globs, `none`); default `none` (deny by default); reserved names never. */
  HOOKRELAY_TEMPLATE_ENV: z
    .string()
    .default(DEFAULT_TEMPLATE_ENV)
    .superRefine((v, ctx) => {
      const problem = templateEnvPatternProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /**
   * Turns the operator console on (`/console` on the worker's HTTP server, `hookrelay console`):
   * the token every request must carry (login form or `Authorization: Bearer`). Unset = no console.
   */
  HOOKRELAY_CONSOLE_TOKEN: z.string().min(16, { message: 'must be at least 16 characters (e.g. openssl rand -hex 24)' }).optional(),
  /**
   * The console's public origin (`scheme://host[:port]`, as the browser's address bar shows it):
   * browser forms must come from it, and an https origin makes the session cookie `Secure`.
   * Unset = the address the console listens on (`http://127.0.0.1:<port>`, also `localhost`).
   */
  HOOKRELAY_CONSOLE_ORIGIN: z
    .string()
    .transform((v, ctx) => {
      const problem = consoleOriginProblem(v.trim());
      if (!problem) return new URL(v.trim()).origin;
      ctx.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    })
    .optional(),
  /** A console session ends after this long without a request (`30m`, `2h`, or seconds); 1 minute to 30 days. */
  HOOKRELAY_CONSOLE_IDLE_TIMEOUT: consoleDuration().prefault('30m'),
  /** A console session ends this long after sign-in, however busy (`12h`, `7d`, or seconds); 1 minute to 30 days. */
  HOOKRELAY_CONSOLE_SESSION_MAX_AGE: consoleDuration().prefault('12h'),
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
  'QSTASH_CURRENT_SIGNING_KEY',
  'QSTASH_NEXT_SIGNING_KEY',
  'REDIS_URL',
]);

export class SettingsError extends HookrelayError {
  readonly code = 'HOOKRELAY_SETTINGS_INVALID' as const;
  override readonly name = 'SettingsError';
  constructor(
    readonly variables: string[],
    message: string,
  ) {
    super(message);
  }
}

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
    const rule = SECRET_VARIABLES.has(name) ? 'invalid value (not shown: it may hold a secret)' : i.message;
    return `${name}: ${rule}`;
  });
  return new SettingsError(variables, `Invalid configuration: ${lines.join('; ')}. Fix the variable(s) and start again.`);
}

/**
 * Read the settings from an environment, once, at the edge (worker, CLI). Empty strings count as
 * unset. A bad value throws a SettingsError naming the variable and the rule, never the value.
 */
export function loadSettings(env: Readonly<Record<string, string | undefined>> = process.env): Settings {
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
