import { describe, expect, it } from 'vitest';
import { loadSettings, readSettings, SETTING_NAMES, signingSecrets } from '../../../src/config/settings.ts';
import { SettingsError } from '../../../src/contract/errors.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';

function settingsError(env: Record<string, string | undefined>): SettingsError {
  try {
    loadSettings(env);
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError);
    return error as SettingsError;
  }
  throw new Error(`expected a SettingsError for ${Object.keys(env).join(', ')}`);
}

describe('settings: defaults', () => {
  const s = loadSettings({});

  it('DATABASE_URL unset → undefined (embedded PGlite)', () => expect(s.DATABASE_URL).toBeUndefined());
  it('HOOKRELAY_DATA_DIR defaults to .hookrelay', () => expect(s.HOOKRELAY_DATA_DIR).toBe('.hookrelay'));
  it('REDIS_URL defaults to redis://127.0.0.1:6379', () => expect(s.REDIS_URL).toBe('redis://127.0.0.1:6379'));
  it('HOOKRELAY_QUEUE defaults to hookrelay-deliveries', () => expect(s.HOOKRELAY_QUEUE).toBe('hookrelay-deliveries'));
  it('APP_URL unset', () => expect(s.APP_URL).toBeUndefined());
  it('HOOKRELAY_ALLOWED_CIDRS unset', () => expect(s.HOOKRELAY_ALLOWED_CIDRS).toBeUndefined());
  it('HOOKRELAY_SIGNING_SECRETS unset (no secrets)', () => {
    expect(s.HOOKRELAY_SIGNING_SECRETS).toBeUndefined();
    expect(signingSecrets(s)).toEqual([]);
  });
  it('Q3: HOOKRELAY_RETRY_SCHEDULE defaults to 5,300,1800,7200,18000,36000,36000', () => {
    expect(s.HOOKRELAY_RETRY_SCHEDULE).toBe('5,300,1800,7200,18000,36000,36000');
    expect(s.retryScheduleSeconds).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
    // 8 attempts (1 immediate + 7 retries) over ~27.5 h
    expect(s.retryScheduleSeconds.length + 1).toBe(8);
    expect(s.retryScheduleSeconds.reduce((a, b) => a + b, 0) / 3600).toBeCloseTo(27.5, 0);
  });
  it('HOOKRELAY_CONCURRENCY defaults to 64', () => expect(s.HOOKRELAY_CONCURRENCY).toBe(64));
  it('Q8: HOOKRELAY_MAX_PAYLOAD_BYTES defaults to 262144', () => expect(s.HOOKRELAY_MAX_PAYLOAD_BYTES).toBe(262_144));
  it('Q2: HOOKRELAY_RECONCILE_INTERVAL_MS defaults to 15000', () => expect(s.HOOKRELAY_RECONCILE_INTERVAL_MS).toBe(15_000));
  it('HOOKRELAY_LOCK_DURATION_MS defaults to 30000', () => expect(s.HOOKRELAY_LOCK_DURATION_MS).toBe(30_000));
  it('HOOKRELAY_STALLED_INTERVAL_MS defaults to 30000', () => expect(s.HOOKRELAY_STALLED_INTERVAL_MS).toBe(30_000));
  it('Q9: HOOKRELAY_SHUTDOWN_TIMEOUT_MS defaults to 25000', () => expect(s.HOOKRELAY_SHUTDOWN_TIMEOUT_MS).toBe(25_000));
  it('HOOKRELAY_HTTP_PORT defaults to 8787', () => expect(s.HOOKRELAY_HTTP_PORT).toBe(8787));
  it('HOOKRELAY_PUBLIC_URL unset', () => expect(s.HOOKRELAY_PUBLIC_URL).toBeUndefined());
  it('Q11: HOOKRELAY_RETENTION_DAYS defaults to 30', () => expect(s.HOOKRELAY_RETENTION_DAYS).toBe(30));
  it('HOOKRELAY_MIGRATE defaults to true (the worker migrates at start)', () => expect(s.HOOKRELAY_MIGRATE).toBe(true));
  it('LOG_LEVEL defaults to info', () => expect(s.LOG_LEVEL).toBe('info'));
  it('QSTASH_URL, QSTASH_TOKEN, QSTASH_CURRENT_SIGNING_KEY, QSTASH_NEXT_SIGNING_KEY unset', () => {
    expect(s.QSTASH_URL).toBeUndefined();
    expect(s.QSTASH_TOKEN).toBeUndefined();
    expect(s.QSTASH_CURRENT_SIGNING_KEY).toBeUndefined();
    expect(s.QSTASH_NEXT_SIGNING_KEY).toBeUndefined();
  });

  it('loadSettings({}) gives exactly these keys and values', () => {
    expect(s).toEqual({
      HOOKRELAY_DATA_DIR: '.hookrelay',
      REDIS_URL: 'redis://127.0.0.1:6379',
      HOOKRELAY_QUEUE: 'hookrelay-deliveries',
      HOOKRELAY_RETRY_SCHEDULE: '5,300,1800,7200,18000,36000,36000',
      HOOKRELAY_CONCURRENCY: 64,
      HOOKRELAY_MAX_PAYLOAD_BYTES: 262_144,
      HOOKRELAY_APPROVAL_SWEEP_MS: 2_000,
      HOOKRELAY_RECONCILE_INTERVAL_MS: 15_000,
      HOOKRELAY_LOCK_DURATION_MS: 30_000,
      HOOKRELAY_STALLED_INTERVAL_MS: 30_000,
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: 25_000,
      HOOKRELAY_HTTP_PORT: 8787,
      HOOKRELAY_RETENTION_DAYS: 30,
      HOOKRELAY_MIGRATE: true,
      HOOKRELAY_TEMPLATE_ENV: 'none',
      HOOKRELAY_CONSOLE_IDLE_TIMEOUT: 1800,
      HOOKRELAY_CONSOLE_SESSION_MAX_AGE: 43_200,
      HOOKRELAY_METRICS_TENANTS: ['default'],
      LOG_LEVEL: 'info',
      retryScheduleSeconds: [5, 300, 1800, 7200, 18000, 36000, 36000],
    });
  });

  it('unrelated variables (incl. AGENT_HOOK_WEBHOOK_*) are ignored by loadSettings', () => {
    expect(loadSettings({ PATH: '/bin', AGENT_HOOK_WEBHOOK_URL: 'not a url', SOMETHING: 'x' })).toEqual(s);
  });
});

describe('settings: empty strings count as unset', () => {
  it.each([
    'DATABASE_URL',
    'HOOKRELAY_DATA_DIR',
    'REDIS_URL',
    'HOOKRELAY_QUEUE',
    'APP_URL',
    'HOOKRELAY_ALLOWED_CIDRS',
    'HOOKRELAY_SIGNING_SECRETS',
    'HOOKRELAY_RETRY_SCHEDULE',
    'HOOKRELAY_CONCURRENCY',
    'HOOKRELAY_MAX_PAYLOAD_BYTES',
    'HOOKRELAY_RECONCILE_INTERVAL_MS',
    'HOOKRELAY_LOCK_DURATION_MS',
    'HOOKRELAY_STALLED_INTERVAL_MS',
    'HOOKRELAY_SHUTDOWN_TIMEOUT_MS',
    'HOOKRELAY_HTTP_PORT',
    'HOOKRELAY_PUBLIC_URL',
    'HOOKRELAY_RETENTION_DAYS',
    'HOOKRELAY_MIGRATE',
    'HOOKRELAY_TEMPLATE_ENV',
    'LOG_LEVEL',
    'QSTASH_URL',
    'QSTASH_TOKEN',
    'QSTASH_CURRENT_SIGNING_KEY',
    'QSTASH_NEXT_SIGNING_KEY',
  ])('%s="" and "   " give the default', (name) => {
    const defaults = loadSettings({});
    expect(loadSettings({ [name]: '' })).toEqual(defaults);
    expect(loadSettings({ [name]: '   ' })).toEqual(defaults);
  });
});

describe('settings: values are read', () => {
  it('every variable is taken from the given env', () => {
    const s = loadSettings({
      DATABASE_URL: 'postgres://hook:pw@db.internal:5432/hookrelay',
      HOOKRELAY_DATA_DIR: '/var/lib/hookrelay',
      REDIS_URL: 'rediss://:pw@redis.internal:6380/2',
      HOOKRELAY_QUEUE: 'my_queue-2',
      APP_URL: 'https://app.example.com/api',
      HOOKRELAY_ALLOWED_CIDRS: '10.0.0.0/8,fd00::/8',
      HOOKRELAY_SIGNING_SECRETS: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw whsec_CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=',
      HOOKRELAY_RETRY_SCHEDULE: '1, 2.5 ,60',
      HOOKRELAY_CONCURRENCY: '8',
      HOOKRELAY_MAX_PAYLOAD_BYTES: '1024',
      HOOKRELAY_RECONCILE_INTERVAL_MS: '500',
      HOOKRELAY_LOCK_DURATION_MS: '1000',
      HOOKRELAY_STALLED_INTERVAL_MS: '2000',
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '0',
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_PUBLIC_URL: 'https://worker.example.com',
      HOOKRELAY_RETENTION_DAYS: '7',
      HOOKRELAY_MIGRATE: 'false',
      HOOKRELAY_TEMPLATE_ENV: 'HOOK_*,BILLING_TOKEN',
      LOG_LEVEL: 'debug',
      QSTASH_URL: 'http://127.0.0.1:8080',
      QSTASH_TOKEN: 'qtok',
      QSTASH_CURRENT_SIGNING_KEY: 'sig_cur',
      QSTASH_NEXT_SIGNING_KEY: 'sig_next',
    });
    expect(s).toMatchObject({
      DATABASE_URL: 'postgres://hook:pw@db.internal:5432/hookrelay',
      HOOKRELAY_DATA_DIR: '/var/lib/hookrelay',
      REDIS_URL: 'rediss://:pw@redis.internal:6380/2',
      HOOKRELAY_QUEUE: 'my_queue-2',
      APP_URL: 'https://app.example.com/api',
      HOOKRELAY_ALLOWED_CIDRS: '10.0.0.0/8,fd00::/8',
      HOOKRELAY_CONCURRENCY: 8,
      HOOKRELAY_MAX_PAYLOAD_BYTES: 1024,
      HOOKRELAY_RECONCILE_INTERVAL_MS: 500,
      HOOKRELAY_LOCK_DURATION_MS: 1000,
      HOOKRELAY_STALLED_INTERVAL_MS: 2000,
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: 0,
      HOOKRELAY_HTTP_PORT: 0,
      HOOKRELAY_PUBLIC_URL: 'https://worker.example.com',
      HOOKRELAY_RETENTION_DAYS: 7,
      HOOKRELAY_MIGRATE: false,
      HOOKRELAY_TEMPLATE_ENV: 'HOOK_*,BILLING_TOKEN',
      LOG_LEVEL: 'debug',
      QSTASH_URL: 'http://127.0.0.1:8080',
      QSTASH_TOKEN: 'qtok',
      QSTASH_CURRENT_SIGNING_KEY: 'sig_cur',
      QSTASH_NEXT_SIGNING_KEY: 'sig_next',
      retryScheduleSeconds: [1, 2.5, 60],
    });
    expect(signingSecrets(s)).toEqual(['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=']);
  });

  it('Q3: HOOKRELAY_RETRY_SCHEDULE is parsed into retryScheduleSeconds', () => {
    expect(loadSettings({ HOOKRELAY_RETRY_SCHEDULE: '10' }).retryScheduleSeconds).toEqual([10]);
    expect(loadSettings({ HOOKRELAY_RETRY_SCHEDULE: '0,1,2' }).retryScheduleSeconds).toEqual([0, 1, 2]);
    expect(loadSettings({ HOOKRELAY_RETRY_SCHEDULE: ' 5 , 300 ' }).retryScheduleSeconds).toEqual([5, 300]);
  });

  it('Q6: several whitespace characters between signing secrets are fine', () => {
    expect(
      signingSecrets(
        loadSettings({ HOOKRELAY_SIGNING_SECRETS: '  whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH\t whsec_CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=  ' }),
      ),
    ).toEqual(['whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH', 'whsec_CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=']);
  });

  it('HOOKRELAY_HTTP_PORT bounds 0 and 65535 are accepted', () => {
    expect(loadSettings({ HOOKRELAY_HTTP_PORT: '65535' }).HOOKRELAY_HTTP_PORT).toBe(65_535);
    expect(loadSettings({ HOOKRELAY_HTTP_PORT: '0' }).HOOKRELAY_HTTP_PORT).toBe(0);
  });

  it.each([
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['false', false],
    ['False', false],
    ['0', false],
  ])('HOOKRELAY_MIGRATE=%s → %s', (value, expected) => {
    expect(loadSettings({ HOOKRELAY_MIGRATE: value }).HOOKRELAY_MIGRATE).toBe(expected);
  });

  it.each(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])('LOG_LEVEL=%s is a pino level', (level) => {
    expect(loadSettings({ LOG_LEVEL: level }).LOG_LEVEL).toBe(level);
  });

  it('loadSettings does not mutate the env it is given', () => {
    const env = { HOOKRELAY_CONCURRENCY: '4', LOG_LEVEL: '' };
    loadSettings(env);
    expect(env).toEqual({ HOOKRELAY_CONCURRENCY: '4', LOG_LEVEL: '' });
  });
});

describe('settings: bad values throw a SettingsError naming the variable', () => {
  it.each([
    ['HOOKRELAY_CONCURRENCY', 'abc'],
    ['HOOKRELAY_CONCURRENCY', '0'],
    ['HOOKRELAY_CONCURRENCY', '-4'],
    ['HOOKRELAY_CONCURRENCY', '2.5'],
    ['HOOKRELAY_MAX_PAYLOAD_BYTES', 'big'],
    ['HOOKRELAY_MAX_PAYLOAD_BYTES', '0'],
    ['HOOKRELAY_RECONCILE_INTERVAL_MS', '50'],
    ['HOOKRELAY_LOCK_DURATION_MS', 'x'],
    ['HOOKRELAY_STALLED_INTERVAL_MS', '-1'],
    ['HOOKRELAY_SHUTDOWN_TIMEOUT_MS', '-1'],
    ['HOOKRELAY_SHUTDOWN_TIMEOUT_MS', 'soon'],
    ['HOOKRELAY_HTTP_PORT', '70000'],
    ['HOOKRELAY_HTTP_PORT', '65536'],
    ['HOOKRELAY_HTTP_PORT', '-1'],
    ['HOOKRELAY_HTTP_PORT', 'http'],
    ['HOOKRELAY_HTTP_PORT', '80.5'],
    ['HOOKRELAY_RETENTION_DAYS', '0'],
    ['HOOKRELAY_RETENTION_DAYS', 'forever'],
    ['HOOKRELAY_MIGRATE', 'no'],
    ['HOOKRELAY_MIGRATE', 'off'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_LEVEL', 'INFO'],
    ['HOOKRELAY_QUEUE', 'bad queue'],
    ['HOOKRELAY_QUEUE', 'a:b'],
    ['HOOKRELAY_RETRY_SCHEDULE', '5,x'],
    ['HOOKRELAY_RETRY_SCHEDULE', '5,,300'],
    ['HOOKRELAY_RETRY_SCHEDULE', '-5'],
    ['HOOKRELAY_RETRY_SCHEDULE', '5;300'],
    ['APP_URL', 'not a url'],
    ['APP_URL', 'ftp://files.example.com'],
    ['APP_URL', 'app.example.com'],
    ['HOOKRELAY_PUBLIC_URL', 'worker.example.com'],
    ['HOOKRELAY_PUBLIC_URL', 'ws://worker.example.com'],
    ['QSTASH_URL', 'qstash'],
    ['QSTASH_URL', 'redis://qstash.example.com'],
    ['HOOKRELAY_TEMPLATE_ENV', 'hook_*'],
    ['HOOKRELAY_TEMPLATE_ENV', 'HOOK_*,bad name'],
    ['HOOKRELAY_TEMPLATE_ENV', ','],
    ['HOOKRELAY_TEMPLATE_ENV', 'DATABASE_URL'],
    ['HOOKRELAY_TEMPLATE_ENV', 'HOOK_*,QSTASH_*'],
    ['HOOKRELAY_TEMPLATE_ENV', 'HOOKRELAY_*'],
    ['HOOKRELAY_CONSOLE_ORIGIN', 'console.example.com'],
    ['HOOKRELAY_CONSOLE_ORIGIN', 'https://console.example.com/console'],
    ['HOOKRELAY_CONSOLE_ORIGIN', 'https://user:pw@console.example.com'],
    ['HOOKRELAY_CONSOLE_ORIGIN', 'https://console.example.com/?x=1'],
    ['HOOKRELAY_CONSOLE_ORIGIN', 'ftp://console.example.com'],
    ['HOOKRELAY_CONSOLE_IDLE_TIMEOUT', '30 minutes'],
    ['HOOKRELAY_CONSOLE_IDLE_TIMEOUT', '10s'],
    ['HOOKRELAY_CONSOLE_IDLE_TIMEOUT', '-5m'],
    ['HOOKRELAY_CONSOLE_SESSION_MAX_AGE', '31d'],
    ['HOOKRELAY_CONSOLE_SESSION_MAX_AGE', '1e9'],
  ])('%s=%j throws naming the variable', (name, value) => {
    const error = settingsError({ [name]: value });
    expect(error.name).toBe('SettingsError');
    expect(error.variables).toEqual([name]);
    expect(error.message).toContain(name);
  });

  it.each([
    ['REDIS_URL', 'http://x'],
    ['REDIS_URL', '127.0.0.1:6379'],
    ['DATABASE_URL', 'not a url'],
    ['HOOKRELAY_SIGNING_SECRETS', 'notwhsec'],
    ['HOOKRELAY_SIGNING_SECRETS', 'whsec_YQ== plain'],
    // Q6: one parser for settings and the send path: a secret under 24 bytes is refused here too
    ['HOOKRELAY_SIGNING_SECRETS', 'whsec_b2xkc2VjcmV0'],
  ])('secret variable %s=%j throws naming the variable, not the value', (name, value) => {
    const error = settingsError({ [name]: value });
    expect(error.variables).toEqual([name]);
    expect(error.message).toContain(name);
    expect(error.message).not.toContain(value);
  });

  it('UX-6 Q6: HOOKRELAY_SIGNING_SECRETS=whsec_ (the prefix alone) → the rule and the expected whsec_<base64> form, nothing else of the value', () => {
    const error = settingsError({ HOOKRELAY_SIGNING_SECRETS: 'whsec_' });
    expect(error.variables).toEqual(['HOOKRELAY_SIGNING_SECRETS']);
    expect(error.message).toContain('HOOKRELAY_SIGNING_SECRETS: entry #1');
    expect(error.message).toContain('expected whsec_<base64 of 24-64 random bytes>');
  });

  it('HOOKRELAY_SIGNING_SECRETS=whsec_!!!secretvalue!!! → message lacks the value', () => {
    const error = settingsError({ HOOKRELAY_SIGNING_SECRETS: 'whsec_!!!secretvalue!!!' });
    expect(error.variables).toEqual(['HOOKRELAY_SIGNING_SECRETS']);
    expect(error.message).toContain('HOOKRELAY_SIGNING_SECRETS');
    expect(error.message).not.toContain('secretvalue');
    expect(error.message).not.toContain('whsec_!!!');
  });

  it('a bad REDIS_URL with a password does not leak the password', () => {
    const error = settingsError({ REDIS_URL: 'http://:hunter2redis@redis.internal:6379' });
    expect(error.message).not.toContain('hunter2redis');
  });

  it('a bad DATABASE_URL with a password does not leak it', () => {
    const error = settingsError({ DATABASE_URL: 'postgres://u:hunter2db@@@ bad host' });
    expect(error.variables).toEqual(['DATABASE_URL']);
    expect(error.message).not.toContain('hunter2db');
  });

  it('no bad value (secret or not) is echoed in the message', () => {
    const error = settingsError({ HOOKRELAY_CONCURRENCY: 'abc-marker', LOG_LEVEL: 'loud-marker', APP_URL: 'ftp://url-marker' });
    expect(error.message).not.toMatch(/marker/);
  });

  it('several bad variables are all named, each once', () => {
    const error = settingsError({ HOOKRELAY_CONCURRENCY: 'abc', HOOKRELAY_HTTP_PORT: '70000', LOG_LEVEL: 'loud', REDIS_URL: 'http://x' });
    expect([...error.variables].sort()).toEqual(['HOOKRELAY_CONCURRENCY', 'HOOKRELAY_HTTP_PORT', 'LOG_LEVEL', 'REDIS_URL'].sort());
    for (const name of error.variables) expect(error.message).toContain(name);
    expect(new Set(error.variables).size).toBe(error.variables.length);
  });

  it('a good variable next to a bad one is not named', () => {
    const error = settingsError({ HOOKRELAY_CONCURRENCY: '8', LOG_LEVEL: 'loud' });
    expect(error.variables).toEqual(['LOG_LEVEL']);
    expect(error.message).not.toContain('HOOKRELAY_CONCURRENCY');
  });
});

describe('one settings schema for every factory (readSettings)', () => {
  it('a slice gets the same defaults as loadSettings', () => {
    const all = loadSettings({});
    const slice = readSettings(['HOOKRELAY_QUEUE', 'REDIS_URL', 'HOOKRELAY_MAX_PAYLOAD_BYTES', 'HOOKRELAY_DATA_DIR'], {});
    expect(slice).toEqual({
      HOOKRELAY_QUEUE: all.HOOKRELAY_QUEUE,
      REDIS_URL: all.REDIS_URL,
      HOOKRELAY_MAX_PAYLOAD_BYTES: all.HOOKRELAY_MAX_PAYLOAD_BYTES,
      HOOKRELAY_DATA_DIR: all.HOOKRELAY_DATA_DIR,
    });
  });

  it('a slice validates with the same rules, naming the variable and not the value', () => {
    expect(() => readSettings(['HOOKRELAY_MAX_PAYLOAD_BYTES'], { HOOKRELAY_MAX_PAYLOAD_BYTES: 'big' })).toThrow(/HOOKRELAY_MAX_PAYLOAD_BYTES/);
    const error = (() => {
      try {
        readSettings(['REDIS_URL'], { REDIS_URL: 'http://secret-host:1' });
      } catch (e) {
        return e as SettingsError;
      }
      throw new Error('expected a SettingsError');
    })();
    expect(error).toBeInstanceOf(SettingsError);
    expect(error.variables).toEqual(['REDIS_URL']);
    expect(error.message).not.toContain('secret-host');
  });

  it('a variable outside the slice is neither read nor validated', () => {
    expect(readSettings(['HOOKRELAY_QUEUE'], { HOOKRELAY_CONCURRENCY: 'abc', HOOKRELAY_QUEUE: 'q1' })).toEqual({ HOOKRELAY_QUEUE: 'q1' });
  });

  it('the producer reads its environment through the schema (a bad HOOKRELAY_MAX_PAYLOAD_BYTES is an error, not silently the default)', () => {
    expect(() => createHookProducer({ env: { HOOKRELAY_MAX_PAYLOAD_BYTES: '12kb' } })).toThrow(SettingsError);
    expect(() => createHookProducer({ env: { HOOKRELAY_QUEUE: 'bad name' } })).toThrow(/HOOKRELAY_QUEUE/);
  });

  it('SETTING_NAMES lists every variable of the schema', () => {
    expect(SETTING_NAMES).toContain('DATABASE_URL');
    expect(SETTING_NAMES).toContain('HOOKRELAY_TEMPLATE_ENV');
    // every defaulted setting loadSettings returns is a listed name (retryScheduleSeconds is derived)
    for (const key of Object.keys(loadSettings({}))) if (key !== 'retryScheduleSeconds') expect(SETTING_NAMES).toContain(key);
  });
});

describe('SEC-H5 console settings', () => {
  it('SEC-H5 console: HOOKRELAY_CONSOLE_ORIGIN is read as an origin; the timeouts as seconds (30m and 12h by default)', () => {
    const s = loadSettings({
      HOOKRELAY_CONSOLE_ORIGIN: 'https://Console.Example.com:443/',
      HOOKRELAY_CONSOLE_IDLE_TIMEOUT: '2h',
      HOOKRELAY_CONSOLE_SESSION_MAX_AGE: '7d',
    });
    expect(s.HOOKRELAY_CONSOLE_ORIGIN).toBe('https://console.example.com');
    expect(s.HOOKRELAY_CONSOLE_IDLE_TIMEOUT).toBe(7_200);
    expect(s.HOOKRELAY_CONSOLE_SESSION_MAX_AGE).toBe(604_800);
    expect(loadSettings({ HOOKRELAY_CONSOLE_IDLE_TIMEOUT: '900' }).HOOKRELAY_CONSOLE_IDLE_TIMEOUT).toBe(900);
  });
});
