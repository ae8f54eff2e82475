/**
 * The operator console in a real browser: Debian's Chromium driven by playwright-core, against a
 * real worker (its HTTP server serves /console), real Postgres and Redis, and a real receiver on
 * 127.0.0.1. Failed deliveries exist → sign in with the token → filter to failed → open one and
 * see its attempts → replay the filtered set after the dry-run preview and a confirmation → the
 * receiver gets each with the same webhook-id → the page shows them delivered.
 *
 * CONSOLE_SCREENSHOTS=docs/console npx vitest run test/e2e/console.test.ts writes the screenshots of the README and docs/console.md.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/logger.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { listDeliveries } from '../../src/store/deliveriesRepo.ts';
import { listEndpointPolicies } from '../../src/store/endpointsRepo.ts';
import { startDeliveryWorker, type RunningDeliveryWorker } from '../../src/worker/startDeliveryWorker.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { TEST_REDIS_URL } from '../support/redisKeys.ts';
import { waitFor } from '../integration/queue/harness.ts';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = `console-token-${randomBytes(12).toString('hex')}`;
const SECRET = `resolved-secret-${randomBytes(8).toString('hex')}`;
const SHOTS = process.env.CONSOLE_SCREENSHOTS;

describe('console: the operator console in Chromium', () => {
  let db: TestStore;
  let rx: Receiver;
  let producer: HookProducer;
  let worker: RunningDeliveryWorker;
  let browser: Browser;
  let base: string;
  let ids: string[] = [];
  const queueName = `console-${randomBytes(4).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: '',
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_RETRY_SCHEDULE: '0.05,0.05',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '300',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
    HOOKRELAY_BREAKER_FAILURES: '100', // the failing phase must not open the breaker: replay is the subject here
    HOOKRELAY_CONSOLE_TOKEN: TOKEN,
    HOOK_SECRET: SECRET,
    HOOKRELAY_TEMPLATE_ENV: 'HOOK_SECRET', // SEC-H2: templates are denied unless listed
  };
  const shot = async (page: Page, name: string) => {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };
  const bearer = { authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run installs it)`);
    db = await createTestStore('console');
    env.DATABASE_URL = db.url;
    rx = await startReceiver({ status: 500, body: 'receiver down for maintenance' });
    worker = await startDeliveryWorker({ env, logger: silentLogger(), migrate: false });
    base = `http://127.0.0.1:${worker.httpPort}`;
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, env });
    const hook = {
      id: 'billing-audit',
      type: 'onComplete' as const,
      webhook: { url: `${rx.url}/agent-events`, headers: { authorization: 'Bearer ${HOOK_SECRET}' }, allowedEnvVars: ['HOOK_SECRET'] },
    };
    const enqueued = await producer.enqueueMany(
      [1, 2, 3].map((i) => ({ operationId: `op-${i}`, type: 'onComplete' as const, event: { operationId: `op-${i}`, reason: 'done' }, hooks: [hook] })),
    );
    ids = enqueued.deliveryIds;
    await waitFor(async () => (await listDeliveries(db.store.db, { status: 'failed' })).length === 3, 30_000, 'three failed deliveries');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await producer?.close();
    await worker?.stop();
    await rx?.close();
    await db?.cleanup();
  });

  it('console: no token → 401 on every page and API; a wrong token or a forged form changes nothing', async () => {
    for (const p of [
      '/console',
      '/console/deliveries',
      `/console/deliveries/${ids[0]}`,
      '/console/endpoints',
      '/console/replay?status=failed',
      '/console/api/counts',
    ]) {
      expect((await fetch(`${base}${p}`)).status, p).toBe(401);
      expect((await fetch(`${base}${p}`, { headers: { authorization: 'Bearer not-the-token-0000000000' } })).status, p).toBe(401);
    }
    const key = `${rx.url}/agent-events`;
    const form = (extra: Record<string, string>) => new URLSearchParams({ key, reason: 'forged', ...extra });
    const wrong = await fetch(`${base}/console/endpoints/disable`, {
      method: 'POST',
      headers: { authorization: 'Bearer not-the-token-0000000000' },
      body: form({}),
    });
    expect(wrong.status).toBe(401);
    const noAuth = await fetch(`${base}/console/replay`, { method: 'POST', body: new URLSearchParams({ confirm: 'yes', ids: ids.join(',') }) });
    expect(noAuth.status).toBe(401);
    // A wrong token at the sign-in form: 401, no cookie.
    const login = await fetch(`${base}/console/login`, {
      method: 'POST',
      headers: { origin: base },
      body: new URLSearchParams({ token: 'wrong-token-123456789' }),
      redirect: 'manual',
    });
    expect(login.status).toBe(401);
    expect(login.headers.get('set-cookie')).toBeNull();
    // A signed-in browser's cookie without the CSRF value (a cross-site form): 403, nothing changed.
    const ok = await fetch(`${base}/console/login`, {
      method: 'POST',
      headers: { origin: base },
      body: new URLSearchParams({ token: TOKEN }),
      redirect: 'manual',
    });
    expect(ok.status).toBe(303);
    const cookie = (ok.headers.get('set-cookie') ?? '').split(';')[0] as string;
    expect(cookie).toMatch(/^hookrelay_console=/);
    expect(ok.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
    expect(cookie).not.toContain(TOKEN);
    const forged = await fetch(`${base}/console/endpoints/disable`, { method: 'POST', headers: { cookie, origin: 'https://evil.example' }, body: form({}) });
    expect(forged.status).toBe(403);
    expect((await listEndpointPolicies(db.store.db)).filter((p) => p.disabledAt !== null)).toEqual([]);
    expect((await listDeliveries(db.store.db, { status: 'failed' })).length).toBe(3);
  });

  it('console: failed → sign in → filter failed → one delivery’s attempts → replay the filtered set with confirmation → delivered with the same webhook-id', async () => {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));

    const first = await page.goto(`${base}/console`);
    expect(first?.status()).toBe(401);
    await page.fill('input[name="token"]', TOKEN);
    await Promise.all([page.waitForURL(`${base}/console`), page.click('button[type="submit"]')]);
    expect(await page.textContent('h1')).toBe('Overview');
    expect(problems.filter((m) => !m.includes('401'))).toEqual([]); // the sign-in page itself loads cleanly (its 401 is the point)
    problems.length = 0;
    await page.waitForSelector('#chart-outcomes canvas'); // uPlot drew the chart (the script ran under the CSP)
    expect(await page.textContent('[data-count="failed"]')).toBe('3');
    await shot(page, 'overview');

    await page.click('nav a[href="/console/deliveries"]');
    await page.selectOption('select[name="status"]', 'failed');
    await Promise.all([page.waitForURL(/status=failed/), page.click('form#filters button[type="submit"]')]);
    const rows = page.locator('table.deliveries tbody tr[data-id]');
    expect(await rows.count()).toBe(3);
    expect(new Set(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-id'))))).toEqual(new Set(ids));
    await shot(page, 'deliveries');

    await Promise.all([page.waitForURL(/\/console\/deliveries\/.+/), rows.first().locator('a').click()]);
    const attempts = page.locator('table.attempts tbody tr');
    expect(await attempts.count()).toBe(3);
    expect(await attempts.first().textContent()).toContain('500');
    const detail = await page.content();
    expect(detail).toContain('${HOOK_SECRET}');
    expect(detail).not.toContain(SECRET);
    await shot(page, 'delivery');

    rx.setHandler({ status: 200 });
    const mark = rx.requests.length;
    await page.goBack();
    await Promise.all([page.waitForURL(/\/console\/replay\?/), page.click('a.button:has-text("Replay these")')]);
    expect(await page.textContent('[data-testid="replay-total"]')).toBe('3');
    await shot(page, 'replay');
    // Without the confirmation nothing is sent: the browser refuses the unticked required box.
    await page.click('form.confirm button[type="submit"]');
    expect(page.url()).toContain('/console/replay?');
    expect(rx.requests.length).toBe(mark);
    await page.check('input[name="confirm"]');
    await Promise.all([page.waitForURL(`${base}/console/replay`), page.click('form.confirm button[type="submit"]')]);
    // Polled from outside: the page's CSP forbids the eval a string waitForFunction would need.
    await expect.poll(() => page.locator('[data-status-of] .badge-delivered').count(), { timeout: 30_000, interval: 250 }).toBe(3);
    expect(await page.textContent('[role="status"]')).toContain('Replayed 3');
    await shot(page, 'replayed');

    const replayed = rx.requests.slice(mark);
    expect(replayed.map((r) => r.headers['webhook-id']).sort()).toEqual([...ids].sort()); // each once, same id
    for (const r of replayed) expect(r.headers.authorization).toBe(`Bearer ${SECRET}`); // resolved at send time only
    expect((await listDeliveries(db.store.db, { status: 'delivered' })).map((d) => d.id).sort()).toEqual([...ids].sort());

    // A delivered delivery offers no replay.
    await page.goto(`${base}/console/deliveries/${ids[0]}`);
    expect(await page.locator('form[action$="/replay"]').count()).toBe(0);
    expect(await page.textContent('main')).toContain('never re-sent');

    await page.click('nav a[href="/console/endpoints"]');
    const endpoint = page.locator(`tr[data-endpoint="${rx.url}/agent-events"]`);
    expect(await endpoint.count()).toBe(1);
    expect(await endpoint.textContent()).toContain('closed');
    await endpoint.locator('input[name="reason"]').fill('maintenance window');
    await Promise.all([page.waitForURL(/\/console\/endpoints\?done=/), endpoint.locator('button:has-text("Disable")').click()]);
    // The page answers once the worker applied it (the notice says so, from the fixed notice table).
    expect(await page.textContent('.flash')).toContain('Endpoint disabled: every live worker applied it.');
    expect(await page.locator(`tr[data-endpoint="${rx.url}/agent-events"]`).textContent()).toContain('disabled');
    await shot(page, 'endpoints');
    await Promise.all([
      page.waitForURL(/\/console\/endpoints\?done=/),
      page.locator(`tr[data-endpoint="${rx.url}/agent-events"] button:has-text("Enable")`).click(),
    ]);
    expect(await page.textContent('.flash')).toContain('Endpoint enabled');
    expect((await listEndpointPolicies(db.store.db)).filter((p) => p.disabledAt !== null)).toEqual([]);

    expect(problems).toEqual([]); // no CSP violation, no script error on any page
    await context.close();
  }, 90_000);

  it('SEC-H5 console: sign-out in Chromium revokes the session server-side — the copied cookie replayed afterwards gets 401', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/console/login`);
    await page.fill('input[name="token"]', TOKEN);
    await Promise.all([page.waitForURL(`${base}/console`), page.click('button[type="submit"]')]);
    const [cookie] = (await context.cookies(`${base}/console`)).filter((c) => c.name === 'hookrelay_console');
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Strict');
    expect(cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie?.value).not.toContain(TOKEN);
    const copied = `hookrelay_console=${cookie?.value}`;
    expect((await fetch(`${base}/console/deliveries`, { headers: { cookie: copied } })).status).toBe(200); // live before sign-out

    await Promise.all([page.waitForURL(`${base}/console/login`), page.click('form.logout button[type="submit"]')]);
    expect((await context.cookies(`${base}/console`)).filter((c) => c.name === 'hookrelay_console')).toEqual([]);
    // The copy still exists outside the browser; the server no longer knows it.
    for (const p of ['/console', '/console/deliveries', '/console/api/counts']) {
      expect((await fetch(`${base}${p}`, { headers: { cookie: copied } })).status, p).toBe(401);
    }
    // Put back into a fresh browser it is still no session: the sign-in page, 401.
    const replay = await browser.newContext();
    await replay.addCookies([{ name: 'hookrelay_console', value: cookie?.value ?? '', url: `${base}/console` }]);
    const again = await replay.newPage();
    expect((await again.goto(`${base}/console/deliveries`))?.status()).toBe(401);
    expect(await again.locator('input[name="token"]').count()).toBe(1);
    await replay.close();
    await context.close();
  }, 60_000);

  it('console: no page shows a resolved secret (templates only)', async () => {
    const pages = [
      '/console',
      '/console/deliveries',
      '/console/endpoints',
      '/console/api/overview',
      '/console/api/counts',
      ...ids.map((id) => `/console/deliveries/${id}`),
    ];
    for (const p of pages) {
      const res = await fetch(`${base}${p}`, { headers: bearer });
      expect(res.status, p).toBe(200);
      expect(res.headers.get('content-security-policy'), p).toMatch(/default-src 'none'; script-src 'self'/);
      const body = await res.text();
      expect(body, p).not.toContain(SECRET);
      expect(body, p).not.toContain(TOKEN);
    }
    const detail = await (await fetch(`${base}/console/deliveries/${ids[1]}`, { headers: bearer })).text();
    expect(detail).toContain('Bearer ${HOOK_SECRET}');
  });
});
