import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { handedTemplateEnv, loadedConfigOf, resolveConfig, resolveLoadedConfig, withTemplateEnvResolved } from '../../../src/config/resolveConfig.ts';
import { loadSettings } from '../../../src/config/settings.ts';
import { parseTemplateEnvPattern } from '../../../src/contract/templateSources.ts';
import { SettingsError } from '../../../src/contract/errors.ts';

const SRC = path.resolve(import.meta.dirname, '../../../src');

/**
 * The modules besides src/config/ that may read `process.env`, each with why. Library factories
 * (producer, operation store, dispatcher, remote interceptor, endpoint guard) are not here: they
 * take their configuration from resolveConfig; nor are the worker's start and service, which take
 * theirs from resolveLoadedConfig (its environment, live for header templates, W2).
 */
const ALLOWED: Readonly<Record<string, string>> = {
  'worker/runUntilSignal.ts': 'the worker process entry (bin): the environment it starts from',
  'worker/otelSdk.ts': 'the OpenTelemetry SDK reads its own variables from process.env when it starts',
  'queue/redisConnection.ts': 'the quickstart looks for redis-server on PATH (not a setting)',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Code only: block comments and whole-line comments (docs may name the default) are dropped. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

/**
 * What only src/config/ may do: the queue-prefix fallback, reading the Redis Cluster flag, turning
 * HOOKRELAY_TEMPLATE_ENV into a pattern and reading a slice of the settings. A factory names
 * HOOKRELAY_REDIS_CLUSTER in its list of settings (a string), and reads the resolved `redisCluster`.
 */
const RESOLVED_ONLY_IN_CONFIG: ReadonlyArray<readonly [string, RegExp]> = [
  ['the queue-prefix fallback (?? DEFAULT_QUEUE_PREFIX)', /\?\?\s*DEFAULT_QUEUE_PREFIX\b/],
  ['the queue-prefix fallback (HOOKRELAY_QUEUE_PREFIX ??)', /\bHOOKRELAY_QUEUE_PREFIX\s*\?\?/],
  ['a read of HOOKRELAY_REDIS_CLUSTER', /\.HOOKRELAY_REDIS_CLUSTER\b|\[\s*['"`]HOOKRELAY_REDIS_CLUSTER['"`]\s*\]/],
  ['a call of resolveTemplateEnv', /\bresolveTemplateEnv\s*\(/],
  ['a call of readSettings', /\breadSettings\s*\(/],
];

describe('ARCH-config: settings are resolved once, in src/config/', () => {
  it('ARCH-config no module outside src/config/ reads process.env, other than the listed entry points', () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(50);
    const readers = files
      .map((file) => path.relative(SRC, file).split(path.sep).join('/'))
      .filter((rel) => !rel.startsWith('config/'))
      .filter((rel) => /\bprocess\.env\b/.test(code(readFileSync(path.join(SRC, rel), 'utf8'))));
    expect(readers.filter((rel) => !(rel in ALLOWED))).toEqual([]);
    // Every listed exception still exists and still needs its place on the list.
    expect(Object.keys(ALLOWED).filter((rel) => !readers.includes(rel))).toEqual([]);
  });

  it('ARCH-config resolveConfig: explicit options win over the environment, defaults fill the rest, the result is frozen', () => {
    const env = { HOOKRELAY_QUEUE_PREFIX: '{from-env}', HOOKRELAY_QUEUE: 'q-env', HOOKRELAY_TEMPLATE_ENV: 'A_*' };
    const fromEnv = resolveConfig(['HOOKRELAY_QUEUE', 'HOOKRELAY_QUEUE_PREFIX', 'HOOKRELAY_REDIS_CLUSTER', 'HOOKRELAY_TEMPLATE_ENV'], {}, env);
    expect(fromEnv.settings.HOOKRELAY_QUEUE).toBe('q-env');
    expect(fromEnv.queuePrefix).toBe('{from-env}');
    expect(fromEnv.redisCluster).toBe(false);
    expect(fromEnv.templateEnv.source).toBe('A_*');
    expect(Object.isFrozen(fromEnv)).toBe(true);
    expect(Object.isFrozen(fromEnv.settings)).toBe(true);
    const explicit = resolveConfig(['HOOKRELAY_QUEUE_PREFIX', 'HOOKRELAY_TEMPLATE_ENV'], { queuePrefix: 'mine', templateEnv: 'B' }, env);
    expect(explicit.queuePrefix).toBe('mine');
    expect(explicit.templateEnv.source).toBe('B');
    const defaults = resolveConfig(['HOOKRELAY_QUEUE_PREFIX'], {}, {});
    expect(defaults.queuePrefix).toBe('bull');
    expect(defaults.templateEnv.source).toBe('none');
  });

  it('ARCH-config resolveConfig refuses a non-hash-tag prefix on Redis Cluster only when the factory opens its own Redis', () => {
    const env = { HOOKRELAY_REDIS_CLUSTER: 'true' };
    const names = ['HOOKRELAY_QUEUE_PREFIX', 'HOOKRELAY_REDIS_CLUSTER'] as const;
    expect(() => resolveConfig(names, { ownsRedis: true }, env)).toThrow(SettingsError);
    expect(() => resolveConfig(names, { ownsRedis: true }, env)).toThrow(/HOOKRELAY_QUEUE_PREFIX/);
    expect(resolveConfig(names, { ownsRedis: false }, env).redisCluster).toBe(true);
    expect(resolveConfig(names, { ownsRedis: true, queuePrefix: '{hookrelay}' }, env).queuePrefix).toBe('{hookrelay}');
  });

  it('ARCH-config a setting the factory does not name is not validated (a server app is not refused for a worker-only variable)', () => {
    expect(() => resolveConfig(['HOOKRELAY_QUEUE'], {}, { HOOKRELAY_BREAKER_FAILURES: 'lots' })).not.toThrow();
    expect(() => resolveConfig(['HOOKRELAY_BREAKER_FAILURES'], {}, { HOOKRELAY_BREAKER_FAILURES: 'lots' })).toThrow(/HOOKRELAY_BREAKER_FAILURES/);
  });

  it('ARCH-config no module outside src/config/ has the queue-prefix fallback, reads HOOKRELAY_REDIS_CLUSTER or calls resolveTemplateEnv/readSettings', () => {
    const found = sourceFiles(SRC)
      .map((file) => path.relative(SRC, file).split(path.sep).join('/'))
      .filter((rel) => !rel.startsWith('config/'))
      .flatMap((rel) => {
        const text = code(readFileSync(path.join(SRC, rel), 'utf8'));
        return RESOLVED_ONLY_IN_CONFIG.filter(([, pattern]) => pattern.test(text)).map(([what]) => `${rel}: ${what}`);
      });
    expect(found).toEqual([]);
  });

  it('ARCH-config resolveLoadedConfig: the worker, CLI and console get the prefix, cluster flag and template pattern from their loaded settings, frozen', () => {
    const settings = loadSettings(
      { HOOKRELAY_QUEUE_PREFIX: '{env}', HOOKRELAY_REDIS_CLUSTER: 'true', HOOKRELAY_TEMPLATE_ENV: 'APP_*' },
      { warn: () => undefined },
    );
    const env = { APP_TOKEN: 'live' };
    const config = resolveLoadedConfig(settings, { env });
    expect(config.queuePrefix).toBe('{env}');
    expect(config.redisCluster).toBe(true);
    expect(config.templateEnv.source).toBe('APP_*');
    expect(config.env).toBe(env);
    expect(config.settings.retryScheduleSeconds).toEqual(settings.retryScheduleSeconds);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.settings)).toBe(true);
    expect(Object.isFrozen(settings)).toBe(false); // the caller's settings are copied, not frozen under it
    expect(resolveLoadedConfig(settings, { queuePrefix: '{mine}' }).queuePrefix).toBe('{mine}');
    const defaults = resolveLoadedConfig(loadSettings({}, { warn: () => undefined }));
    expect([defaults.queuePrefix, defaults.redisCluster, defaults.templateEnv.source, defaults.env]).toEqual(['bull', false, 'none', process.env]);
    // Settings alone (tests, older callers) are resolved; a configuration is used as it is.
    expect(loadedConfigOf(config)).toBe(config);
    expect(loadedConfigOf(settings).queuePrefix).toBe('{env}');
  });

  it('ARCH-config the lazy entry hands the pattern it resolved to the factory: resolveConfig then reads HOOKRELAY_TEMPLATE_ENV no second time', () => {
    let reads = 0;
    const env = new Proxy({ HOOKRELAY_TEMPLATE_ENV: 'APP_*', HOOKRELAY_QUEUE: 'q' } as Record<string, string | undefined>, {
      get(target, name) {
        if (name === 'HOOKRELAY_TEMPLATE_ENV') reads++;
        return target[name as string];
      },
    });
    const options = withTemplateEnvResolved({ env, queueName: 'mine' });
    expect(reads).toBe(1);
    expect(options.queueName).toBe('mine');
    const handed = handedTemplateEnv(options);
    expect(handed?.source).toBe('APP_*');
    const config = resolveConfig(['HOOKRELAY_QUEUE', 'HOOKRELAY_TEMPLATE_ENV'], { env, resolvedTemplateEnv: handed });
    expect(config.templateEnv).toBe(handed);
    expect(config.settings.HOOKRELAY_TEMPLATE_ENV).toBe('APP_*');
    expect(config.settings.HOOKRELAY_QUEUE).toBe('q');
    expect(reads).toBe(1);
    // Options the lazy entry never saw resolve as before.
    expect(handedTemplateEnv({ env })).toBeUndefined();
    expect(resolveConfig(['HOOKRELAY_TEMPLATE_ENV'], { env }).templateEnv.source).toBe('APP_*');
    expect(reads).toBe(2);
  });

  it('ARCH-config an explicit templateEnv still wins, and the setting is still validated by the factory as before', () => {
    const bad = { HOOKRELAY_TEMPLATE_ENV: 'HOOKRELAY_*' };
    const options = withTemplateEnvResolved({ env: bad, templateEnv: 'APP_*' });
    const handed = handedTemplateEnv(options);
    expect(handed?.source).toBe('APP_*');
    expect(() => resolveConfig(['HOOKRELAY_TEMPLATE_ENV'], { env: bad, templateEnv: 'APP_*', resolvedTemplateEnv: handed })).toThrow(SettingsError);
    expect(() => resolveConfig(['HOOKRELAY_TEMPLATE_ENV'], { env: bad, templateEnv: 'APP_*' })).toThrow(SettingsError);
    // Without an explicit value the lazy entry refuses the bad setting itself, synchronously.
    expect(() => withTemplateEnvResolved({ env: bad })).toThrow(/HOOKRELAY_TEMPLATE_ENV/);
    const fine = parseTemplateEnvPattern('APP_*');
    expect(resolveConfig(['HOOKRELAY_QUEUE'], { env: bad, resolvedTemplateEnv: fine }).templateEnv).toBe(fine);
  });
});
