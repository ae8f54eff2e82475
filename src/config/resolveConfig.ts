/**
 * The one place a library factory (producer, operation store, dispatcher, remote interceptor,
 * endpoint guard) turns the environment, its explicit options and the defaults into a frozen
 * configuration. Factories never read `process.env` themselves; they name the settings they need,
 * so a server app is not refused for a variable only the worker reads. The worker and the
 * operator tools (CLI, console) read every setting once at their start (`loadSettings`) and get
 * the same resolved values from `resolveLoadedConfig`.
 */
import type { z } from 'zod';
import { DEFAULT_QUEUE_PREFIX } from '../contract/defaults.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import { assertQueuePrefixFits, readSettings, type SettingName, type Settings, type SettingsSchema } from './settings.ts';
import { resolveTemplateEnv, type TemplateEnvSource } from './templateEnv.ts';

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
   * The template pattern the lazy entry already resolved for the same options (W2,
   * `handedTemplateEnv`): used as is, and HOOKRELAY_TEMPLATE_ENV is not read a second time
   * (unless an explicit `templateEnv` won there, which leaves the setting validated here as before).
   * @defaultValue undefined (resolved here)
   */
  resolvedTemplateEnv?: TemplateEnvPattern | undefined;
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

/** What every resolved configuration holds, whichever settings it was read with. */
type Resolved<S> = Readonly<{
  /** The environment the settings came from (header templates and signing secrets stay live from it, W2). */
  env: Env;
  /** The settings, through the settings schema (defaults applied). */
  settings: Readonly<S>;
  /** W2: resolved on first read (an invalid pattern throws a TemplateEnvPatternError naming the variable). */
  templateEnv: TemplateEnvPattern;
  /** The explicit prefix, else HOOKRELAY_QUEUE_PREFIX, else `bull`. */
  queuePrefix: string;
  /** HOOKRELAY_REDIS_CLUSTER=true. */
  redisCluster: boolean;
}>;

/** A library factory's configuration: the settings it named, and the values resolved from them. */
export type ResolvedConfig<K extends SettingName> = Resolved<Pick<SettingValues, K>>;

/**
 * The worker's and the operator tools' configuration: every setting (read once by `loadSettings`
 * at the worker's start, the CLI's context, the console's start) and the values resolved from them.
 */
export type LoadedConfig = Resolved<Settings>;

/** Freezes one configuration: the prefix fallback, the cluster flag and the template pattern live only here. */
function resolved<S extends Partial<SettingValues>>(
  settings: S,
  options: ConfigOptions,
  env: Env,
  templateSource: TemplateEnvSource,
  handed: TemplateEnvPattern | undefined,
): Resolved<S> {
  const queuePrefix = options.queuePrefix ?? settings.HOOKRELAY_QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX;
  const redisCluster = settings.HOOKRELAY_REDIS_CLUSTER === true;
  if (options.ownsRedis === true) assertQueuePrefixFits(queuePrefix, redisCluster);
  let templateEnv: TemplateEnvPattern | undefined = handed;
  return Object.freeze({
    env,
    settings: Object.freeze(settings),
    get templateEnv(): TemplateEnvPattern {
      templateEnv ??= resolveTemplateEnv(options.templateEnv, templateSource);
      return templateEnv;
    },
    queuePrefix,
    redisCluster,
  });
}

/**
 * Reads the named settings once (a bad value throws a SettingsError naming the variable); the
 * template pattern comes from the parsed setting when it is named, else from the environment.
 */
export function resolveConfig<K extends SettingName>(
  names: readonly K[],
  options: ConfigOptions = {},
  env: Env = options.env ?? process.env,
): ResolvedConfig<K> {
  const handed = options.resolvedTemplateEnv;
  // The lazy entry read HOOKRELAY_TEMPLATE_ENV already (and refused a bad value): not again.
  const skipTemplateSetting = handed !== undefined && options.templateEnv === undefined;
  const read = skipTemplateSetting ? names.filter((name) => name !== 'HOOKRELAY_TEMPLATE_ENV') : names;
  const values: Partial<SettingValues> = readSettings(read, env);
  if (skipTemplateSetting && read.length !== names.length) values.HOOKRELAY_TEMPLATE_ENV = handed.source;
  const templateSource = (names as readonly SettingName[]).includes('HOOKRELAY_TEMPLATE_ENV') ? values : env;
  return resolved(values as Pick<SettingValues, K>, options, env, templateSource, handed);
}

/**
 * The configuration of settings already read with `loadSettings` (which refused a bad value and a
 * non-hash-tag HOOKRELAY_QUEUE_PREFIX on Redis Cluster): the explicit prefix wins, the template
 * pattern comes from the settings. The settings are copied, then frozen.
 */
export function resolveLoadedConfig(settings: Settings, options: Pick<ConfigOptions, 'env' | 'queuePrefix'> = {}): LoadedConfig {
  return resolved({ ...settings }, options, options.env ?? process.env, settings, undefined);
}

/** `input` itself when it is a configuration already, else the configuration of those settings (no explicit prefix). */
export function loadedConfigOf(input: Settings | LoadedConfig): LoadedConfig {
  return 'settings' in input && 'queuePrefix' in input ? input : resolveLoadedConfig(input);
}

/** Where the lazy entry leaves the pattern it resolved, on its copy of a factory's options. */
const HANDED_TEMPLATE_ENV = Symbol('hookrelay.resolvedTemplateEnv');

/**
 * The lazy entry's synchronous template check (W2), as the real factory makes it, without loading
 * that factory: an invalid pattern throws a TemplateEnvPatternError naming the variable. Returns a
 * copy of `options` carrying the pattern, for the factory to pass on as `resolvedTemplateEnv`
 * (`handedTemplateEnv`), so the setting is read once.
 */
export function withTemplateEnvResolved<T extends Pick<ConfigOptions, 'env' | 'templateEnv'>>(options: T): T {
  const pattern = resolveTemplateEnv(options.templateEnv, options.env ?? process.env);
  return { ...options, [HANDED_TEMPLATE_ENV]: pattern };
}

/** The pattern the lazy entry resolved for these options (`withTemplateEnvResolved`), if it did. */
export function handedTemplateEnv(options: object): TemplateEnvPattern | undefined {
  return (options as { [HANDED_TEMPLATE_ENV]?: TemplateEnvPattern })[HANDED_TEMPLATE_ENV];
}
