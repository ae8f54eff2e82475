/**
 * DEP-5 (issue 50): `.env.example` and the configuration table of docs/configuration.md are
 * generated from the one settings reference (`npm run config:docs`), and fail here on drift:
 * regenerated in memory and compared with the committed files; every documented default is the
 * value the code uses when the variable is unset; every environment read in the code is a setting
 * or is listed.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTING_NAMES, SettingsSchema, type SettingName } from '../../../src/config/settings.ts';
import { OTHER_VARIABLE_DOCS, SETTING_DOCS, UNDOCUMENTED_ENV_READS } from '../../../src/config/settingsReference.ts';
import * as D from '../../../src/contract/defaults.ts';
import { isolationSettings } from '../../../src/isolation/endpointIsolation.ts';
import { opsAccessPolicy } from '../../../src/observability/opsAccess.ts';
import { CONFIG_DOC_FILE, ENV_EXAMPLE_FILE, renderConfigTable, renderEnvExample, ROOT, withTable } from '../../../scripts/config-docs.ts';

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const unset = isolationSettings({
  HOOKRELAY_ENDPOINT_ISOLATION: undefined,
  HOOKRELAY_ENDPOINT_CONCURRENCY: undefined,
  HOOKRELAY_BREAKER_FAILURES: undefined,
  HOOKRELAY_BREAKER_COOLDOWN_MS: undefined,
  HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS: undefined,
});

/**
 * Where the code decides what an optional setting (no zod default) means when unset: each
 * documented default of such a setting must be checked here, or the test below fails.
 */
const UNSET_MEANS: Partial<Record<SettingName, (documented: string) => void>> = {
  HOOKRELAY_QUEUE_PREFIX: (v) => expect(v).toBe(D.DEFAULT_QUEUE_PREFIX),
  HOOKRELAY_SPOOL_MAX_BYTES: (v) => expect(Number(v)).toBe(D.DEFAULT_SPOOL_MAX_BYTES),
  HOOKRELAY_REDIS_CLUSTER: (v) => expect(v).toBe('false'), // unset → undefined → the single-node client
  HOOKRELAY_ENDPOINT_ISOLATION: (v) => expect(String(unset.enabled)).toBe(v),
  HOOKRELAY_ENDPOINT_CONCURRENCY: (v) => expect(unset.defaultCap).toBe(Number(v)),
  HOOKRELAY_BREAKER_FAILURES: (v) => expect(unset.policy.failureThreshold).toBe(Number(v)),
  HOOKRELAY_BREAKER_COOLDOWN_MS: (v) => expect(unset.policy.cooldownMs).toBe(Number(v)),
  HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS: (v) => expect(unset.policy.autoDisableMs).toBe(Number(v) * 3_600_000),
  HOOKRELAY_OPS_ALLOW_FROM: (v) => expect(opsAccessPolicy({})).toEqual(opsAccessPolicy({ allowFrom: v })),
};

describe('DEP-5: .env.example and the configuration table come from the one settings reference', () => {
  it('DEP-5: the committed .env.example is what `npm run config:docs` generates', () => {
    expect(read(ENV_EXAMPLE_FILE)).toBe(renderEnvExample());
  });

  it('DEP-5: the table in docs/configuration.md is what `npm run config:docs` generates', () => {
    const page = read(CONFIG_DOC_FILE);
    expect(page).toBe(withTable(page, renderConfigTable()));
    for (const name of SETTING_NAMES) expect(page, name).toContain(`| \`${name}\` |`);
  });

  it('DEP-5: every documented default is the value the schema gives an unset variable', () => {
    let checked = 0;
    for (const name of SETTING_NAMES) {
      const field = SettingsSchema.shape[name];
      const whenUnset = field.parse(undefined);
      const documented = SETTING_DOCS[name].defaultValue;
      if (whenUnset === undefined) continue;
      expect(documented, `${name}: the schema has a default, the reference must say it`).toBeDefined();
      expect(field.parse(documented), name).toEqual(whenUnset);
      checked++;
    }
    expect(checked).toBeGreaterThan(15);
  });

  it('DEP-5: an optional setting documented with a default is checked against the code that applies it (HOOKRELAY_ENDPOINT_CONCURRENCY is 0, not 16)', () => {
    for (const name of SETTING_NAMES) {
      const documented = SETTING_DOCS[name].defaultValue;
      if (documented === undefined || SettingsSchema.shape[name].parse(undefined) !== undefined) continue;
      const check = UNSET_MEANS[name];
      expect(check, `${name}: documented default ${documented} has no check in UNSET_MEANS`).toBeDefined();
      check!(documented);
    }
    expect(read(ENV_EXAMPLE_FILE)).toContain(`# HOOKRELAY_ENDPOINT_CONCURRENCY=${D.DEFAULT_ENDPOINT_CONCURRENCY}\n`);
  });

  it('DEP-5: every environment variable the code reads is a setting, a documented variable or listed with its reason', () => {
    const known = new Set<string>([...SETTING_NAMES, ...Object.keys(OTHER_VARIABLE_DOCS), ...Object.keys(UNDOCUMENTED_ENV_READS)]);
    const files = (dir: string): string[] =>
      readdirSync(path.join(ROOT, dir)).flatMap((f) => {
        const rel = path.join(dir, f);
        return statSync(path.join(ROOT, rel)).isDirectory() ? files(rel) : /\.(ts|mjs)$/.test(f) ? [rel] : [];
      });
    const reads = new Map<string, string>();
    for (const file of [...files('src'), ...files('workers'), ...files('bin')]) {
      // `process.env.NAME`, `env.NAME`, `env['NAME']`: the forms the code reads variables in.
      for (const m of read(file).matchAll(/\benv(?:\.([A-Z][A-Z0-9_]+)|\[['"]([A-Z][A-Z0-9_]+)['"]\])/g)) reads.set((m[1] ?? m[2])!, file);
    }
    expect(reads.size).toBeGreaterThan(5);
    for (const [name, file] of reads) expect(known.has(name), `${name} (read in ${file}) is in no settings schema or list`).toBe(true);
  });
});
