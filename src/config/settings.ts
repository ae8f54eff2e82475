import { z } from 'zod';
import { DEFAULT_TEMPLATE_ENV, templateEnvPatternProblem } from '../contract/templateSources.ts';

const intFrom = (min: number) => z.coerce.number().int().min(min);
/** An absolute http(s) URL (APP_URL, HOOKRELAY_PUBLIC_URL, QSTASH_URL are bases for HTTP requests). */
const httpUrl = () =>
  z
    .string()
    .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), { message: 'must be an http(s) URL' });

/** SPEC §13: every variable, its default and its rule. One source of truth for the README table. */
export const SettingsSchema = z.object({
  DATABASE_URL: z.string().url().optional(),
  HOOKRELAY_DATA_DIR: z.string().min(1).default('.hookrelay'),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, { message: 'must be a redis:// or rediss:// URL' }).default('redis://127.0.0.1:6379'),
  HOOKRELAY_QUEUE: z.string().regex(/^[A-Za-z0-9_-]+$/, { message: 'letters, digits, "-" and "_" only' }).default('hookrelay-deliveries'),
  APP_URL: httpUrl().optional(),
  HOOKRELAY_ALLOWED_CIDRS: z.string().optional(),
  HOOKRELAY_SIGNING_SECRETS: z
    .string()
    .optional()
    .refine((v) => v === undefined || v.trim().split(/\s+/).every((s) => /^whsec_[A-Za-z0-9+/=]+$/.test(s)), {
      message: 'must be space-separated whsec_<base64> secrets',
    }),
  HOOKRELAY_RETRY_SCHEDULE: z
    .string()
    .default('5,300,1800,7200,18000,36000,36000')
    .refine((v) => v.split(',').every((s) => /^\s*\d+(\.\d+)?\s*$/.test(s)), { message: 'must be comma-separated seconds' }),
  HOOKRELAY_CONCURRENCY: intFrom(1).default(64),
  HOOKRELAY_MAX_PAYLOAD_BYTES: intFrom(1).default(262_144),
  HOOKRELAY_RECONCILE_INTERVAL_MS: intFrom(100).default(15_000),
  HOOKRELAY_LOCK_DURATION_MS: intFrom(100).default(30_000),
  HOOKRELAY_STALLED_INTERVAL_MS: intFrom(100).default(30_000),
  HOOKRELAY_SHUTDOWN_TIMEOUT_MS: intFrom(0).default(25_000),
  HOOKRELAY_HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8787),
  HOOKRELAY_PUBLIC_URL: httpUrl().optional(),
  HOOKRELAY_RETENTION_DAYS: intFrom(1).default(30),
  /** `false` when a separate migrate job owns the schema: the worker then starts without migrating. */
  HOOKRELAY_MIGRATE: z
    .string()
    .regex(/^(true|false|1|0)$/i, { message: 'must be true or false' })
    .default('true')
    .transform((v) => /^(true|1)$/i.test(v)),
  /** W2: which variables hook templates may read (comma-separated names, `*` globs, `none`); hookrelay's own never. */
  HOOKRELAY_TEMPLATE_ENV: z
    .string()
    .default(DEFAULT_TEMPLATE_ENV)
    .superRefine((v, ctx) => {
      const problem = templateEnvPatternProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem.replace(/^HOOKRELAY_TEMPLATE_ENV: /, '') });
    }),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  QSTASH_URL: httpUrl().optional(),
  QSTASH_TOKEN: z.string().optional(),
  QSTASH_CURRENT_SIGNING_KEY: z.string().optional(),
  QSTASH_NEXT_SIGNING_KEY: z.string().optional(),
});

export type Settings = z.output<typeof SettingsSchema> & { retryScheduleSeconds: number[] };

/** Variables whose values are secrets: never printed, even in a validation error. */
const SECRET_VARIABLES = new Set(['DATABASE_URL', 'HOOKRELAY_SIGNING_SECRETS', 'QSTASH_TOKEN', 'QSTASH_CURRENT_SIGNING_KEY', 'QSTASH_NEXT_SIGNING_KEY', 'REDIS_URL']);

export class SettingsError extends Error {
  override readonly name = 'SettingsError';
  constructor(readonly variables: string[], message: string) {
    super(message);
  }
}

/**
 * Read the settings from an environment. Empty strings count as unset. A bad value throws a
 * SettingsError naming the variable and the rule, never the value.
 */
export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const input: Record<string, string> = {};
  for (const key of Object.keys(SettingsSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') input[key] = value;
  }
  const result = SettingsSchema.safeParse(input);
  if (!result.success) {
    const variables = [...new Set(result.error.issues.map((i) => String(i.path[0])))];
    const lines = result.error.issues.map((i) => {
      const name = String(i.path[0]);
      const rule = SECRET_VARIABLES.has(name) ? 'invalid value (not shown: it may hold a secret)' : i.message;
      return `${name}: ${rule}`;
    });
    throw new SettingsError(variables, `Invalid configuration: ${lines.join('; ')}. Fix the variable(s) and start again.`);
  }
  const retryScheduleSeconds = result.data.HOOKRELAY_RETRY_SCHEDULE.split(',').map((s) => Number(s.trim()));
  return { ...result.data, retryScheduleSeconds };
}

export function signingSecrets(settings: Pick<Settings, 'HOOKRELAY_SIGNING_SECRETS'>): string[] {
  return settings.HOOKRELAY_SIGNING_SECRETS ? settings.HOOKRELAY_SIGNING_SECRETS.trim().split(/\s+/) : [];
}
