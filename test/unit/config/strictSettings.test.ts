/**
 * SEC-T5 / UX-6: every numeric setting is read strictly (plain digits within its range: `Number()`
 * read 1e3 as 1000 and 0x10 as 16), DATABASE_URL / REDIS_URL / HOOKRELAY_ALLOWED_CIDRS are checked
 * at load, each refusal names the variable and the expected form, and unknown HOOKRELAY_*
 * variables are warned about once with the closest known name.
 */
import { describe, expect, it } from 'vitest';
import { loadSettings, readSettings, unknownSettingWarnings } from '../../../src/config/settings.ts';
import { SettingsError } from '../../../src/contract/errors.ts';

function refusal(env: Record<string, string>): SettingsError {
  try {
    loadSettings(env, { warn: () => undefined });
  } catch (error) {
    if (error instanceof SettingsError) return error;
    throw error;
  }
  throw new Error('expected a SettingsError');
}

const NUMERIC = [
  'HOOKRELAY_CONCURRENCY',
  'HOOKRELAY_MAX_PAYLOAD_BYTES',
  'HOOKRELAY_RECONCILE_INTERVAL_MS',
  'HOOKRELAY_LOCK_DURATION_MS',
  'HOOKRELAY_STALLED_INTERVAL_MS',
  'HOOKRELAY_SHUTDOWN_TIMEOUT_MS',
  'HOOKRELAY_HTTP_PORT',
  'HOOKRELAY_RETENTION_DAYS',
  'HOOKRELAY_RETENTION_DELETE_DAYS',
  'HOOKRELAY_ENDPOINT_CONCURRENCY',
  'HOOKRELAY_BREAKER_FAILURES',
  'HOOKRELAY_BREAKER_COOLDOWN_MS',
  'HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS',
] as const;

describe('SEC-T5 strict numbers: every numeric setting', () => {
  it.each(NUMERIC.flatMap((name) => ['1e3', '0x10', '99999999999', 'Infinity', '1_000', '+5'].map((value) => [name, value] as const)))(
    'SEC-T5 %s=%j is refused, naming the variable and the plain-digits form',
    (name, value) => {
      const error = refusal({ [name]: value });
      expect(error.variables).toEqual([name]);
      expect(error.message).toContain(`${name}: must be a`);
      expect(error.message).toContain('in plain digits');
    },
  );

  it('SEC-T5 plain digits within range are read as before (surrounding spaces allowed); fractions only for the hours', () => {
    const s = loadSettings({
      HOOKRELAY_CONCURRENCY: ' 16 ',
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS: '0.5',
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '0',
    });
    expect(s).toMatchObject({
      HOOKRELAY_CONCURRENCY: 16,
      HOOKRELAY_HTTP_PORT: 0,
      HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS: 0.5,
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: 0,
    });
    expect(refusal({ HOOKRELAY_CONCURRENCY: '10001' }).message).toContain('from 1 to 10000');
    expect(refusal({ HOOKRELAY_RETENTION_DAYS: '36501' }).variables).toEqual(['HOOKRELAY_RETENTION_DAYS']);
    // The library factories read the same rule.
    expect(() => readSettings(['HOOKRELAY_MAX_PAYLOAD_BYTES'], { HOOKRELAY_MAX_PAYLOAD_BYTES: '1e6' })).toThrow(
      /HOOKRELAY_MAX_PAYLOAD_BYTES: must be a whole number/,
    );
  });
});

describe('SEC-T5 connection strings and CIDRs are checked at load, naming the expected form, never the value', () => {
  it.each([
    ['DATABASE_URL', 'postgres://app:s3cret-marker@[::1', 'must be a postgres:// or postgresql:// URL'],
    ['DATABASE_URL', 'mysql://x', 'must be a postgres:// or postgresql:// URL'],
    ['DATABASE_URL', 'postgres:///db', 'must be a postgres:// or postgresql:// URL'],
    ['REDIS_URL', 'redis://:s3cret-marker@127.0.0.1:99999', 'must be a redis:// or rediss:// URL'],
    ['REDIS_URL', 'redis://127.0.0.1:0', 'must be a redis:// or rediss:// URL'],
    ['REDIS_URL', 'redis://127.0.0.1:6379/zero', 'must be a redis:// or rediss:// URL'],
    ['HOOKRELAY_ALLOWED_CIDRS', '10.0.0.0/8, 300.1.1.1/32', 'entry 2 of 2 is not a CIDR'],
    ['HOOKRELAY_ALLOWED_CIDRS', '127.0.0.1', 'entry 1 of 1 is not a CIDR'],
  ])('SEC-T5 %s=%j → SettingsError: %s', (name, value, rule) => {
    const error = refusal({ [name]: value });
    expect(error.variables).toEqual([name]);
    expect(error.message).toContain(`${name}: ${rule}`);
    expect(error.message).not.toContain('s3cret-marker');
  });

  it('SEC-T5 good values still load: a socket folder in ?host=, rediss with a db number, IPv6 CIDRs', () => {
    const s = loadSettings({
      DATABASE_URL: 'postgresql:///hookrelay?host=/var/run/postgresql',
      REDIS_URL: 'rediss://:pw@redis.internal:6380/2',
      HOOKRELAY_ALLOWED_CIDRS: '10.0.0.0/8, fd00::/8,127.0.0.1/32',
    });
    expect(s.HOOKRELAY_ALLOWED_CIDRS).toBe('10.0.0.0/8, fd00::/8,127.0.0.1/32');
  });
});

describe('UX-6 unknown HOOKRELAY_* variables', () => {
  it('UX-6 a misspelt setting names the closest known one; a far one points to the docs; known and other variables are silent', () => {
    expect(
      unknownSettingWarnings({
        HOOKRELAY_CONCURENCY: '4',
        HOOKRELAY_RETRY_SCHEDUEL: '1',
        HOOKRELAY_NOPE_AT_ALL_HERE: 'x',
        HOOKRELAY_CONCURRENCY: '8',
        PATH: '/bin',
      }),
    ).toEqual([
      'HOOKRELAY_CONCURENCY is not a hookrelay setting and is ignored: did you mean HOOKRELAY_CONCURRENCY?',
      'HOOKRELAY_NOPE_AT_ALL_HERE is not a hookrelay setting and is ignored (docs/configuration.md lists every setting)',
      'HOOKRELAY_RETRY_SCHEDUEL is not a hookrelay setting and is ignored: did you mean HOOKRELAY_RETRY_SCHEDULE?',
    ]);
  });

  it('UX-6 loadSettings warns once per name per process, however often it reads the settings; never a value', () => {
    const lines: string[] = [];
    const env = { HOOKRELAY_ALLOWED_CIDR: '10.0.0.0/8' };
    for (let i = 0; i < 3; i++) loadSettings(env, { warn: (line) => lines.push(line) });
    expect(lines).toEqual(['HOOKRELAY_ALLOWED_CIDR is not a hookrelay setting and is ignored: did you mean HOOKRELAY_ALLOWED_CIDRS?']);
  });
});
