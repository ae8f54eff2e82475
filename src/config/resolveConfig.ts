/**
 * The one place a library factory (producer, operation store, dispatcher, remote interceptor,
 * endpoint guard) turns the environment, its explicit options and the defaults into a frozen
 * configuration. Factories never read `process.env` themselves; they name the settings they need,
 * so a server app is not refused for a variable only the worker reads.
 */
import type { z } from 'zod';
import { DEFAULT_QUEUE_PREFIX } from '../contract/defaults.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import { assertQueuePrefixFits, readSettings, type SettingName, type SettingsSchema } from './settings.ts';
import { resolveTemplateEnv } from './templateEnv.ts';

type Env = Readonly<Record<string, string | undefined>>;
type SettingValues = z.output<typeof SettingsSchema>;

export type ConfigOptions = {
  /**
   * Where settings are read from.
   * @defaultValue the live `process.env`
   */
  env?: Env | undefined;
  /**
   * The names header templates may read (W2); wins over HOOKRELAY_TEMPLATE_ENV.
   * @defaultValue HOOKRELAY_TEMPLATE_ENV, else `none` (no template resolves)
   */
  templateEnv?: string | undefined;
  /**
   * BullMQ key prefix; wins over HOOKRELAY_QUEUE_PREFIX.
   * @defaultValue HOOKRELAY_QUEUE_PREFIX, else `bull`
   */
  queuePrefix?: string | undefined;
  /**
   * True when the factory opens its own Redis connection from these settings: a Redis Cluster
   * then needs a hash-tag prefix, refused at construction (a SettingsError naming the variable).
   * @defaultValue false
   */
  ownsRedis?: boolean | undefined;
};

export type ResolvedConfig<K extends SettingName> = Readonly<{
  /** The environment the settings came from (header templates and signing secrets stay live from it, W2). */
  env: Env;
  /** The named settings, through the settings schema (defaults applied). */
  settings: Readonly<Pick<SettingValues, K>>;
  /** W2: resolved on first read (an invalid pattern throws a TemplateEnvPatternError naming the variable). */
  templateEnv: TemplateEnvPattern;
  /** The explicit prefix, else HOOKRELAY_QUEUE_PREFIX, else `bull`. */
  queuePrefix: string;
  /** HOOKRELAY_REDIS_CLUSTER=true. */
  redisCluster: boolean;
}>;

/**
 * Reads the named settings once (a bad value throws a SettingsError naming the variable); the
 * template pattern comes from the parsed setting when it is named, else from the environment.
 */
export function resolveConfig<K extends SettingName>(
  names: readonly K[],
  options: ConfigOptions = {},
  env: Env = options.env ?? process.env,
): ResolvedConfig<K> {
  const settings = Object.freeze(readSettings(names, env));
  const values = settings as Partial<SettingValues>;
  const queuePrefix = options.queuePrefix ?? values.HOOKRELAY_QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX;
  const redisCluster = values.HOOKRELAY_REDIS_CLUSTER === true;
  if (options.ownsRedis === true) assertQueuePrefixFits(queuePrefix, redisCluster);
  const templateSource = (names as readonly SettingName[]).includes('HOOKRELAY_TEMPLATE_ENV') ? values : env;
  let templateEnv: TemplateEnvPattern | undefined;
  return Object.freeze({
    env,
    settings,
    get templateEnv(): TemplateEnvPattern {
      templateEnv ??= resolveTemplateEnv(options.templateEnv, templateSource);
      return templateEnv;
    },
    queuePrefix,
    redisCluster,
  });
}

/** The lazy entry's synchronous check, as the real factory makes it (W2), without loading it. */
export function checkTemplateEnv(options: Pick<ConfigOptions, 'env' | 'templateEnv'>): void {
  resolveTemplateEnv(options.templateEnv, options.env ?? process.env);
}
