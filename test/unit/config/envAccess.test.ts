import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../../src/config/resolveConfig.ts';
import { SettingsError } from '../../../src/config/settings.ts';

const SRC = path.resolve(import.meta.dirname, '../../../src');

/**
 * The modules besides src/config/ that may read `process.env`, each with why. Library factories
 * (producer, operation store, dispatcher, remote interceptor, endpoint guard) are not here: they
 * take their configuration from resolveConfig.
 */
const ALLOWED: Readonly<Record<string, string>> = {
  'worker/startDeliveryWorker.ts': 'the worker entry: its default environment for loadSettings and live header templates (W2)',
  'worker/service.ts': 'the worker service: header templates and signing secrets resolve from the live environment at send time (W2)',
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
});
