/**
 * APR-1..5 (A1–A3) end to end, every part a process of its own: the agent (test/e2e/fixtures/
 * approvalAgent.ts) escalates a tool call and exits "approval pending"; the worker is stopped and a
 * new one started; `hookrelay approvals approve` decides; a new agent process resumes and the tool
 * runs exactly once. `approval.requested` / `approval.resolved` reach the approver URL through the
 * ledger, signed (verified with the standardwebhooks library); the answer endpoint takes a signed
 * single-use token.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, type TestStore } from '../support/db.ts';
import { spawnWorker, type HookrelayProcess } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver, type RecordedRequest } from '../support/receiver.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/hookrelay.mjs');
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SIGNING_SECRET = `whsec_${Buffer.from(randomBytes(24)).toString('base64')}`;
const APPROVAL_SECRET = randomBytes(32).toString('hex');
const run = promisify(execFile);

let t: TestStore;
let receiver: Receiver;
const queueName = `apr-${randomBytes(4).toString('hex')}`;
const workDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-apr-'));

const workerEnv = (): Record<string, string> => ({
  DATABASE_URL: t.url,
  REDIS_URL,
  HOOKRELAY_QUEUE: queueName,
  HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32',
  HOOKRELAY_HTTP_PORT: '0',
  HOOKRELAY_APPROVER_URL: `${receiver.url}/approvals`,
  HOOKRELAY_SIGNING_SECRETS: SIGNING_SECRET,
  HOOKRELAY_APPROVAL_SECRETS: APPROVAL_SECRET,
  HOOKRELAY_APPROVAL_SWEEP_MS: '200',
  HOOKRELAY_RECONCILE_INTERVAL_MS: '500',
  HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '2000',
});

async function agent(operationId: string, countFile: string): Promise<{ outcome: string; approvalId?: string; reason?: string; end?: string }> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'test/e2e/fixtures/approvalAgent.ts', operationId, countFile, '/tmp/report.txt'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: t.url },
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
}

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'warn' } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

function ran(countFile: string): number {
  return existsSync(countFile) ? readFileSync(countFile, 'utf8').split('\n').filter(Boolean).length : 0;
}

function eventsFor(approvalId: string, type: string): RecordedRequest[] {
  return receiver.requests.filter((r) => {
    const body = JSON.parse(r.body) as { approvalId?: string; hookType?: string };
    return body.approvalId === approvalId && body.hookType === type;
  });
}

async function waitFor(what: () => boolean, label: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!what()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function verified(req: RecordedRequest): Record<string, unknown> {
  const header = (name: string) => String(req.headers[name] ?? '');
  return new Webhook(SIGNING_SECRET).verify(req.body, {
    'webhook-id': header('webhook-id'),
    'webhook-timestamp': header('webhook-timestamp'),
    'webhook-signature': header('webhook-signature'),
  }) as Record<string, unknown>;
}

function httpPortOf(worker: HookrelayProcess): number {
  const m = /"httpPort":(\d+)/.exec(worker.output());
  if (!m) throw new Error(`no httpPort in the worker's ready line:\n${worker.output()}`);
  return Number(m[1]);
}

beforeAll(async () => {
  t = await createTestStore('aprx');
  receiver = await startReceiver({ status: 204 });
});

afterAll(async () => {
  await receiver?.close();
  await t?.cleanup();
  await deleteKeys(queueKeys(queueName));
});

describe('APR (A1–A3): approvals across restarts, through the CLI, the events and the answer endpoint', () => {
  it('APR-1/APR-2 (A1, A2): worker and agent restarted between request and decision; `hookrelay approvals approve` → the resumed call runs exactly once; events delivered and signed', async () => {
    const operationId = `op-${randomUUID()}`;
    const countFile = path.join(workDir, `${operationId}.log`);
    const first = spawnWorker(workerEnv());
    let second: HookrelayProcess | undefined;
    try {
      await first.ready();
      const pending = await agent(operationId, countFile);
      expect(pending).toMatchObject({ outcome: 'pending' });
      const id = pending.approvalId as string;
      expect(ran(countFile)).toBe(0);

      // The worker announces the request (the agent had no producer): signed, through the ledger.
      await waitFor(() => eventsFor(id, 'approval.requested').length > 0, 'approval.requested');
      const requested = verified(eventsFor(id, 'approval.requested')[0]!);
      expect(requested).toMatchObject({
        approvalId: id,
        operationId,
        tenant: 'default',
        status: 'pending',
        toolCall: { id: 'call-1', name: 'delete_file' },
        escalation: { reason: 'needs_approval' },
      });
      expect(String((requested.answer as { approve?: string }).approve)).toMatch(/^hra1\./);

      // Both processes go away before anyone decides.
      expect(await first.stop()).toBe(0);
      const approve = await cli(['approvals', 'approve', id, '--reason', 'checked the path', '--by', 'alice']);
      expect(approve.code, approve.stderr).toBe(0);

      second = spawnWorker(workerEnv());
      await second.ready();
      await waitFor(() => eventsFor(id, 'approval.resolved').length > 0, 'approval.resolved');
      expect(verified(eventsFor(id, 'approval.resolved')[0]!)).toMatchObject({
        approvalId: id,
        status: 'approved',
        decidedBy: 'alice',
        reason: 'checked the path',
      });

      // A new agent process presents the identical call: it runs, once.
      expect(await agent(operationId, countFile)).toMatchObject({ outcome: 'ran', end: 'completed' });
      expect(ran(countFile)).toBe(1);
      // Presented again: a new request, never the spent decision.
      const again = await agent(operationId, countFile);
      expect(again).toMatchObject({ outcome: 'pending' });
      expect(again.approvalId).not.toBe(id);
      expect(ran(countFile)).toBe(1);
      // Each event once per approver (idempotent announcements from two workers and the resolver).
      await new Promise((r) => setTimeout(r, 600));
      expect(eventsFor(id, 'approval.requested')).toHaveLength(1);
      expect(eventsFor(id, 'approval.resolved')).toHaveLength(1);
      const show = await cli(['approvals', 'show', id, '--json']);
      expect(JSON.parse(show.stdout)).toMatchObject({ status: 'approved', outcome: 'applied' });
    } finally {
      first.kill();
      second?.kill();
    }
  }, 180_000);

  it('APR-5 (A3): the answer endpoint takes the signed token once; the other button and a replay are refused; a forged token changes nothing', async () => {
    const operationId = `op-${randomUUID()}`;
    const countFile = path.join(workDir, `${operationId}.log`);
    const worker = spawnWorker(workerEnv());
    try {
      await worker.ready();
      const port = httpPortOf(worker);
      const pending = await agent(operationId, countFile);
      const id = pending.approvalId as string;
      await waitFor(() => eventsFor(id, 'approval.requested').length > 0, 'approval.requested');
      const answer = verified(eventsFor(id, 'approval.requested')[0]!).answer as { approve: string; reject: string };
      const post = (body: unknown, type = 'application/json') =>
        fetch(`http://127.0.0.1:${port}/approvals/answer`, {
          method: 'POST',
          headers: { 'content-type': type },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        });

      const forged = `${answer.approve.slice(0, -4)}AAAA`;
      expect((await post({ token: forged })).status).toBe(403);
      expect((await post('x'.repeat(5_000))).status).toBe(413);

      const ok = await post(new URLSearchParams({ token: answer.approve, by: 'chat:dana' }).toString(), 'application/x-www-form-urlencoded');
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ approvalId: id, status: 'approved', decidedBy: 'token:chat:dana' });
      expect((await post({ token: answer.approve })).status).toBe(409);
      expect((await post({ token: answer.reject })).status).toBe(409);

      expect(await agent(operationId, countFile)).toMatchObject({ outcome: 'ran' });
      expect(ran(countFile)).toBe(1);
    } finally {
      worker.kill();
    }
  }, 120_000);
});
