/**
 * Q8: why a receiver said no is kept. A real worker (its HTTP server serves /console), real
 * Postgres and Redis, receivers on 127.0.0.1, the CLI as a process and the console in Chromium:
 * a 422's body is in `deliveries show --json` and on the delivery page, with the request headers
 * sent (the `${VAR}` template, never its value; the signature elided); a receiver that echoes the
 * resolved secret back (raw, base64, URL- and JSON-encoded) has it taken out; the secret is in no
 * Postgres row and no Redis key.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Redis } from 'ioredis';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/logger.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { listDeliveries } from '../../src/store/deliveriesRepo.ts';
import { startDeliveryWorker, type RunningDeliveryWorker } from '../../src/worker/startDeliveryWorker.ts';
import { waitFor } from '../integration/queue/harness.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { ROOT } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, listKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';

const BIN = path.join(ROOT, 'bin/hookrelay.mjs');
const CHROMIUM = '/usr/bin/chromium';
const TOKEN = `console-token-${randomBytes(12).toString('hex')}`;
/** `+`, `/` and `=` change under URL-encoding; base64 changes everything. */
const SECRET = `sk+live/${randomBytes(10).toString('hex')}=`;
const REFUSAL = '{"error":"unknown customer"}';

type Run = { code: number | null; stdout: string; stderr: string };

function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Every value under the queue's keys, whatever the type, as text. */
async function redisText(queue: string): Promise<string> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    const parts: string[] = [];
    for (const key of await listKeys(queueKeys(queue), redis)) {
      const type = await redis.type(key);
      if (type === 'string') parts.push((await redis.get(key)) ?? '');
      else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(key)));
      else if (type === 'list') parts.push(JSON.stringify(await redis.lrange(key, 0, -1)));
      else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(key)));
      else if (type === 'zset') parts.push(JSON.stringify(await redis.zrange(key, 0, -1)));
      else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')));
    }
    return parts.join('\n');
  } finally {
    redis.disconnect();
  }
}

type Attempt = { attempt: number; outcome: string; httpStatus: number | null; responseExcerpt: string | null; requestHeaders?: Record<string, string> };

describe('UX-2: a failed attempt keeps the receiver’s answer and the headers sent (Q8)', () => {
  let db: TestStore;
  let rx: Receiver;
  let producer: HookProducer;
  let worker: RunningDeliveryWorker;
  let browser: Browser | undefined;
  let base: string;
  let refusedId: string;
  let echoedId: string;
  const queueName = `ux2-${randomBytes(4).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: '',
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
    HOOKRELAY_CONSOLE_TOKEN: TOKEN,
    HOOKRELAY_SIGNING_SECRETS: `whsec_${Buffer.from(randomBytes(24)).toString('base64')}`,
    CUSTOMER_TOKEN: SECRET,
    HOOKRELAY_TEMPLATE_ENV: 'CUSTOMER_TOKEN',
  };

  beforeAll(async () => {
    db = await createTestStore('ux2');
    env.DATABASE_URL = db.url;
    rx = await startReceiver((req) => {
      if (req.path === '/refuse') return { status: 422, headers: { 'content-type': 'application/json' }, body: REFUSAL };
      // A receiver that echoes what it was sent, in every encoding it can think of.
      const auth = String(req.headers.authorization ?? '');
      const token = auth.replace(/^Bearer /, '');
      return {
        status: 400,
        body: JSON.stringify({ got: auth, b64: Buffer.from(token).toString('base64'), url: encodeURIComponent(token), json: JSON.stringify(token) }),
      };
    });
    worker = await startDeliveryWorker({ env, logger: silentLogger(), migrate: false });
    base = `http://127.0.0.1:${worker.httpPort}`;
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, env });
    const hook = (id: string, p: string) => ({
      id,
      type: 'onComplete' as const,
      webhook: { url: `${rx.url}${p}`, headers: { authorization: 'Bearer ${CUSTOMER_TOKEN}', 'x-tenant': 'acme' }, allowedEnvVars: ['CUSTOMER_TOKEN'] },
    });
    const a = await producer.enqueue({
      operationId: 'op-refuse',
      type: 'onComplete',
      event: { operationId: 'op-refuse', reason: 'done' },
      hooks: [hook('crm', '/refuse')],
    });
    const b = await producer.enqueue({
      operationId: 'op-echo',
      type: 'onComplete',
      event: { operationId: 'op-echo', reason: 'done' },
      hooks: [hook('echo', '/echo')],
    });
    refusedId = a.deliveryIds[0]!;
    echoedId = b.deliveryIds[0]!;
    await waitFor(async () => (await listDeliveries(db.store.db, { status: 'failed' })).length === 2, 30_000, 'two failed deliveries');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await producer?.close();
    await worker?.stop();
    await rx?.close();
    await deleteKeys(queueKeys(queueName));
    await db?.cleanup();
  });

  const cliEnv = () => ({ DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queueName });

  it('UX-2 a 422 body {"error":"unknown customer"} is in deliveries show --json with its status and the headers sent (template, not its value; signature elided)', async () => {
    const shown = await cli(['deliveries', 'show', refusedId, '--json'], cliEnv());
    expect(shown.stderr).toBe('');
    expect(shown.code).toBe(0);
    const d = JSON.parse(shown.stdout) as { status: string; failure: string; attempts: Attempt[] };
    expect(d.status).toBe('failed');
    expect(d.failure).toBe('http_error: HTTP 422 after 1 attempt');
    expect(d.attempts).toHaveLength(1);
    const [a] = d.attempts;
    expect(a).toMatchObject({ outcome: 'failed', httpStatus: 422, responseExcerpt: REFUSAL });
    expect(a!.requestHeaders).toMatchObject({
      authorization: 'Bearer ${CUSTOMER_TOKEN}',
      'x-tenant': 'acme',
      'content-type': 'application/json',
      'webhook-id': refusedId,
      'webhook-signature': '(elided)',
    });
    expect(a!.requestHeaders!['webhook-timestamp']).toMatch(/^\d+$/);
    expect(a!.requestHeaders!['user-agent']).toMatch(/^hookrelay/);
    // What the receiver really got: the resolved value and a real signature.
    const got = rx.requests.find((r) => r.path === '/refuse')!;
    expect(got.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(String(got.headers['webhook-signature'])).toMatch(/^v1,/);

    // The text form shows the whole excerpt and the headers.
    const text = await cli(['deliveries', 'show', refusedId], cliEnv());
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`response: ${JSON.stringify(REFUSAL)}`);
    expect(text.stdout).toContain('sent authorization: Bearer ${CUSTOMER_TOKEN}');
    expect(text.stdout).toContain('failed: http_error: HTTP 422 after 1 attempt');
    expect(text.stdout).not.toContain(SECRET);
  });

  it('UX-2 a receiver echoing the resolved secret (raw, base64, URL- and JSON-encoded) gets it redacted; the secret is in no Postgres row and no Redis key', async () => {
    const shown = JSON.parse((await cli(['deliveries', 'show', echoedId, '--json'], cliEnv())).stdout) as { attempts: Attempt[] };
    const excerpt = shown.attempts[0]!.responseExcerpt!;
    expect(excerpt).toContain('"got":"[redacted]"'); // the whole resolved header value
    expect(excerpt).toContain('"b64":"[redacted]"');
    expect(excerpt).toContain('"url":"[redacted]"');
    expect(excerpt).not.toContain(SECRET);
    const forms = [SECRET, Buffer.from(SECRET).toString('base64'), encodeURIComponent(SECRET)];
    // Every row of every table in this test's schema, as text.
    const { rows: tables } = await db.store.pool!.query<{ t: string }>(
      "select table_name as t from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'",
    );
    expect(tables.length).toBeGreaterThan(3);
    for (const { t } of tables) {
      const { rows } = await db.store.pool!.query<{ r: string }>(`select t::text as r from "${t}" as t`);
      for (const { r } of rows) for (const f of forms) expect(r.includes(f), `${t} holds the secret`).toBe(false);
    }
    const stored = await redisText(queueName);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored).toContain(`${rx.url}/echo`); // the queue's keys were read (the job names its URL)
    for (const f of forms) expect(stored.includes(f)).toBe(false);
  });

  it('UX-2 the console’s delivery page in Chromium shows the 422 body and the headers sent, never the secret', async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${base}/console/login`);
    await page.fill('input[name="token"]', TOKEN);
    await Promise.all([page.waitForURL(`${base}/console`), page.click('button[type="submit"]')]);
    await page.goto(`${base}/console/deliveries/${refusedId}`);
    expect(await page.textContent('[data-excerpt="1"]')).toBe(REFUSAL);
    await page.click('details.sent summary');
    const headers = (await page.textContent('[data-headers="1"]')) ?? '';
    expect(headers).toContain('authorization: Bearer ${CUSTOMER_TOKEN}');
    expect(headers).toContain('webhook-signature: (elided)');
    expect(await page.isVisible('[data-headers="1"]')).toBe(true);
    expect(await page.textContent('dl.summary')).toContain('http_error: HTTP 422 after 1 attempt');
    expect(await page.content()).not.toContain(SECRET);
  }, 60_000);
});
