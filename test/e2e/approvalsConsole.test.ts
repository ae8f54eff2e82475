/**
 * APR-6 (A3): approve from the console in Chromium (Debian's /usr/bin/chromium via playwright-core),
 * against a real worker (its HTTP server serves /console), Postgres and Redis. A pending request
 * made by a real emitter → sign in → Approvals → open it (the call as the redactor left it) →
 * approve with a reason → the resumed call proceeds once; a forged or CSRF-less form changes nothing.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalQueue, type ApprovalQueue } from '../../src/approvals/approvalQueue.ts';
import { AgentContextBuilder, ALLOW, ApprovalPendingError, InterceptionEmitter, Verdict } from '../../src/intercept/index.ts';
import { silentLogger } from '../../src/observability/logger.ts';
import { startDeliveryWorker, type RunningDeliveryWorker } from '../../src/worker/startDeliveryWorker.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = `console-token-${randomBytes(12).toString('hex')}`;

describe('APR-6 (A3): approvals in the console', () => {
  let db: TestStore;
  let worker: RunningDeliveryWorker;
  let browser: Browser;
  let base: string;
  let queue: ApprovalQueue;
  const queueName = `aprcon-${randomBytes(4).toString('hex')}`;

  const escalate = (operationId: string, args: Record<string, string>) => {
    const emitter = new InterceptionEmitter({
      interceptors: [(ctx) => (ctx.interception_point === 'pre_tool_call' ? Verdict.escalate('needs_approval', 'money leaves the company') : ALLOW)],
      resolver: queue.resolver,
    });
    const builder = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: `${operationId}/${randomUUID()}` });
    return emitter.emit(builder.preToolCall({ id: 'call-1', name: 'wire_money', args }));
  };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run installs it)`);
    db = await createTestStore('aprcon');
    worker = await startDeliveryWorker({
      env: {
        DATABASE_URL: db.url,
        REDIS_URL: TEST_REDIS_URL,
        HOOKRELAY_QUEUE: queueName,
        HOOKRELAY_HTTP_PORT: '0',
        HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
        HOOKRELAY_CONSOLE_TOKEN: TOKEN,
      },
      logger: silentLogger(),
      migrate: false,
    });
    base = `http://127.0.0.1:${worker.httpPort}`;
    queue = createApprovalQueue({
      store: db.store,
      tenant: 'acme',
      waitMs: 0,
      approvalRedactor: (ctx) => ({
        tool: (ctx.tool_call as { name: string }).name,
        amount: (ctx.tool_call as { args: { amount: string } }).args.amount,
        iban: '••••',
      }),
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await queue?.close();
    await worker?.stop();
    await db?.cleanup();
    await deleteKeys(queueKeys(queueName));
  });

  it('APR-6 (A3): pending list → the call (redacted) → approve with a reason → the resumed call runs once', async () => {
    const operationId = `op-${randomUUID()}`;
    const args = { amount: '1200', iban: 'DE89370400440532013000' };
    const pending = (await escalate(operationId, args).catch((e: unknown) => e)) as ApprovalPendingError;
    expect(pending).toBeInstanceOf(ApprovalPendingError);
    const id = pending.approval.id;

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/console/login`);
    await page.fill('input[name="token"]', TOKEN);
    await Promise.all([page.waitForURL(`${base}/console`), page.click('button[type="submit"]')]);
    await Promise.all([page.waitForURL(`${base}/console/approvals`), page.click('nav a[href="/console/approvals"]')]);
    const row = page.locator(`tr[data-approval="${id}"]`);
    expect(await row.textContent()).toContain('wire_money');
    expect(await row.textContent()).toContain('acme');
    await Promise.all([page.waitForURL(`${base}/console/approvals/${id}`), row.locator('a').click()]);
    const shown = JSON.parse((await page.locator(`pre[data-context="${id}"]`).textContent()) ?? 'null');
    expect(shown).toEqual({ tool: 'wire_money', amount: '1200', iban: '••••' });
    expect(await page.content()).not.toContain('DE89370400440532013000');

    await page.fill('input[name="reason"]', 'invoice 2026-117');
    await Promise.all([page.waitForURL(/\?done=approved/), page.click('button[value="approve"]')]);
    expect(await page.locator('.flash').textContent()).toContain('Approved');
    expect(await page.locator('h1 .badge').textContent()).toBe('approved');
    expect(await queue.get(id)).toMatchObject({ status: 'approved', decidedBy: 'console', reason: 'invoice 2026-117' });
    await context.close();

    await expect(escalate(operationId, args)).resolves.toEqual(args);
    expect(await queue.get(id)).toMatchObject({ outcome: 'applied' });
  }, 60_000);

  it('APR-6 (A3): a form without the session’s CSRF value, from another origin, or without credentials changes nothing', async () => {
    const operationId = `op-${randomUUID()}`;
    const pending = (await escalate(operationId, { amount: '5', iban: 'X' }).catch((e: unknown) => e)) as ApprovalPendingError;
    const id = pending.approval.id;
    const decide = (headers: Record<string, string>, extra: Record<string, string> = {}) =>
      fetch(`${base}/console/approvals/${id}/decide`, {
        method: 'POST',
        headers,
        body: new URLSearchParams({ answer: 'approve', ...extra }),
        redirect: 'manual',
      });
    expect((await decide({})).status).toBe(401);
    const login = await fetch(`${base}/console/login`, {
      method: 'POST',
      headers: { origin: base },
      body: new URLSearchParams({ token: TOKEN }),
      redirect: 'manual',
    });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    expect((await decide({ cookie, origin: base })).status).toBe(403);
    expect((await decide({ cookie, origin: 'https://evil.example' }, { _csrf: 'guess' })).status).toBe(403);
    expect(await queue.get(id)).toMatchObject({ status: 'pending' });
    // The bearer token (an operator's script) may decide; a second decision is refused (409).
    expect((await decide({ authorization: `Bearer ${TOKEN}` }, { answer: 'reject', reason: 'no' })).status).toBe(303);
    expect((await decide({ authorization: `Bearer ${TOKEN}` })).status).toBe(409);
    expect(await queue.get(id)).toMatchObject({ status: 'rejected', reason: 'no' });
  });
});
