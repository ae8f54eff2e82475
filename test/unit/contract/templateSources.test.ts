import { describe, expect, it } from 'vitest';
import { isReservedTemplateVariable, parseTemplateEnvPattern, templateEnvAllows, templateSourceProblem } from '../../../src/contract/templateSources.ts';
import { TemplateEnvPatternError } from '../../../src/contract/errors.ts';

describe('W2 template sources: the reserved names', () => {
  it.each([
    'DATABASE_URL',
    'REDIS_URL',
    'QSTASH_URL',
    'QSTASH_TOKEN',
    'QSTASH_CURRENT_SIGNING_KEY',
    'HOOKRELAY_SIGNING_SECRETS',
    'HOOKRELAY_TEMPLATE_ENV',
    'AGENT_HOOK_WEBHOOK_TOKEN',
  ])('W2 template sources: %s is reserved', (name) => expect(isReservedTemplateVariable(name)).toBe(true));

  it.each(['HOOK_TOKEN', 'DATABASE_URL_RO', 'APP_DATABASE_URL', 'MY_QSTASH_TOKEN', 'HOOKRELAYS', 'AGENT_HOOK_TOKEN', 'APP_PGPASSWORD', 'NODE_ENV'])(
    'W2 template sources: %s is not',
    (name) => expect(isReservedTemplateVariable(name)).toBe(false),
  );

  it('W2 template sources: a reserved name is refused whatever the pattern says; env hooks may read AGENT_HOOK_WEBHOOK_* only', () => {
    const all = parseTemplateEnvPattern('*');
    expect(templateSourceProblem('DATABASE_URL', { pattern: all })).toMatch(/DATABASE_URL is one of hookrelay's own variables/);
    expect(templateSourceProblem('AGENT_HOOK_WEBHOOK_TOKEN', { pattern: all })).toBeDefined();
    expect(templateSourceProblem('AGENT_HOOK_WEBHOOK_TOKEN', { pattern: parseTemplateEnvPattern('none'), environmentHook: true })).toBeUndefined();
    expect(templateSourceProblem('QSTASH_TOKEN', { environmentHook: true })).toBeDefined();
    expect(templateSourceProblem('HOOK_TOKEN', { pattern: parseTemplateEnvPattern('BILLING_*'), environmentHook: true })).toMatch(/HOOKRELAY_TEMPLATE_ENV/);
  });
});

describe('SEC-H2 template sources: the never-templatable families, whatever the pattern', () => {
  const all = parseTemplateEnvPattern('*');
  it.each([
    'DATABASE_URL',
    'NODE_OPTIONS',
    'PGPASSWORD',
    'PGHOST',
    'REDIS_URL',
    'REDISCLI_AUTH',
    'QSTASH_TOKEN',
    'QSTASHTOKEN',
    'HOOKRELAY_CONSOLE_TOKEN',
    'OTEL_EXPORTER_OTLP_HEADERS',
    'AGENT_HOOK_WEBHOOK_TOKEN',
    'AWS_SECRET_ACCESS_KEY',
    'GOOGLE_APPLICATION_CREDENTIALS',
    'AZURE_CLIENT_SECRET',
  ])('SEC-H2 template sources: %s is refused under "*", naming it', (name) => {
    expect(isReservedTemplateVariable(name)).toBe(true);
    expect(templateSourceProblem(name, { pattern: all })).toContain(name);
    if (!name.startsWith('AGENT_HOOK_WEBHOOK_')) expect(templateSourceProblem(name, { pattern: all, environmentHook: true })).toContain(name);
  });
});

describe('W2 template sources: HOOKRELAY_TEMPLATE_ENV', () => {
  it('SEC-H2 template sources: unset or blank means "none" (deny by default); "*" is every name but the reserved ones', () => {
    for (const raw of [undefined, '', '   ']) {
      const p = parseTemplateEnvPattern(raw);
      expect(p.source).toBe('none');
      expect(templateEnvAllows(p, 'ANYTHING_AT_ALL')).toBe(false);
      expect(templateSourceProblem('HOOK_TOKEN', { pattern: p })).toMatch(/HOOK_TOKEN is not allowed by HOOKRELAY_TEMPLATE_ENV/);
      expect(templateSourceProblem('HOOK_TOKEN')).toMatch(/HOOK_TOKEN is not allowed by HOOKRELAY_TEMPLATE_ENV/);
    }
    const all = parseTemplateEnvPattern('*');
    expect(templateEnvAllows(all, 'ANYTHING_AT_ALL')).toBe(true);
    expect(templateSourceProblem('ANYTHING_AT_ALL', { pattern: all })).toBeUndefined();
    expect(templateSourceProblem('HOOKRELAY_SIGNING_SECRETS', { pattern: all })).toBeDefined();
  });

  it('W2 template sources: names and * globs, comma-separated, trimmed; nothing else matches', () => {
    const p = parseTemplateEnvPattern(' HOOK_* , BILLING_TOKEN,*_API_KEY ');
    for (const ok of ['HOOK_', 'HOOK_TOKEN', 'BILLING_TOKEN', 'STRIPE_API_KEY']) expect(templateEnvAllows(p, ok)).toBe(true);
    for (const no of ['BILLING_TOKEN_2', 'XHOOK_TOKEN', 'HOOK', 'STRIPE_API_KEY_OLD', 'OTHER']) expect(templateEnvAllows(p, no)).toBe(false);
  });

  it('W2 template sources: "none" allows no template', () => {
    const p = parseTemplateEnvPattern('none');
    expect(templateEnvAllows(p, 'HOOK_TOKEN')).toBe(false);
  });

  it.each([
    ['lower case', 'hook_*'],
    ['a space inside', 'HOOK TOKEN'],
    ['a dash', 'HOOK-TOKEN'],
    ['only commas', ' , ,'],
    ['a reserved name', 'HOOK_*,DATABASE_URL'],
    ['a glob over a reserved prefix', 'QSTASH_*'],
    ['a glob over HOOKRELAY_', 'HOOKRELAY_*_KEY'],
    ['SEC-H2 a glob over PG', 'PG*'],
    ['SEC-H2 a glob over OTEL_', 'HOOK_*,OTEL_*'],
    ['SEC-H2 a glob over AWS_', 'AWS_*'],
    ['SEC-H2 a reserved exact name', 'NODE_OPTIONS'],
  ])('W2 template sources: %s is an error naming the variable, not the entry', (_label, raw) => {
    let error: unknown;
    try {
      parseTemplateEnvPattern(raw);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TemplateEnvPatternError);
    expect((error as TemplateEnvPatternError).variables).toEqual(['HOOKRELAY_TEMPLATE_ENV']);
    expect((error as Error).message).toContain('HOOKRELAY_TEMPLATE_ENV');
  });

  it('W2 template sources: a glob may still cover reserved names; they stay refused (HOOK* vs HOOKRELAY_X)', () => {
    const p = parseTemplateEnvPattern('HOOK*');
    expect(templateEnvAllows(p, 'HOOKRELAY_SIGNING_SECRETS')).toBe(true);
    expect(templateSourceProblem('HOOKRELAY_SIGNING_SECRETS', { pattern: p })).toMatch(/own variables/);
    expect(templateSourceProblem('HOOK_TOKEN', { pattern: p })).toBeUndefined();
  });
});
