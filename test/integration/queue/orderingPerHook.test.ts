/**
 * SEC-T3 (SEC-H7): ordering is scoped to its hook. A caller hook pointed at the environment
 * hook's endpoint (by label, or by its very URL), ordered with `onFailure: 'block'` and failing
 * for good, holds back only its own later deliveries — never the environment (audit) hook's;
 * those blocked rows say so (reason ordering_blocked, `deliveries list`, a metric). The payload's
 * `sequence` is hookrelay's alone: a hook's `body` or the event can never set it.
 * Real Redis, Postgres, worker and 127.0.0.1 receivers; queue-mode dispatch with environment hooks.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import type { HookProducer } from '../../../src/queue/types.ts';
import { rowsOf } from '../../../src/store/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, TEST_REDIS_URL, waitFor, type Stack } from './harness.ts';

const ENV_TOKEN = 'audit-token-5f0c';
const ROOT = path.resolve(import.meta.dirname, '../../..');
const BIN = path.join(ROOT, 'bin/hookrelay.mjs');

let stack: Stack;
let audit: Receiver;
let caller: Receiver;
let ordered: HookProducer;
const env = { AGENT_HOOK_WEBHOOK_URL: '', AGENT_HOOK_WEBHOOK_TOKEN: ENV_TOKEN, AGENT_HOOK_WEBHOOK_EVENTS: 'afterStep,onComplete' };

type Row = { hook_id: string; sequence: number | null; status: string; failure_reason: string | null };
const rowsOfOperation = async (operationId: string): Promise<Row[]> =>
  rowsOf<Row>(
    await stack.db.store.db.execute(
      sql`select hook_id, sequence, status, failure_reason from deliveries where operation_id = ${operationId} order by hook_id, sequence`,
    ),
  );

beforeAll(async () => {
  stack = await createStack('sect3');
  // The audit receiver answers 410 to anything without the operator's token (as a real one would refuse a stranger).
  audit = await startReceiver((req) => (req.headers.authorization === `Bearer ${ENV_TOKEN}` ? { status: 200 } : { status: 410 }));
  caller = await startReceiver({ status: 410 });
  env.AGENT_HOOK_WEBHOOK_URL = `${audit.url}/audit`;
  ordered = createHookProducer({
    store: stack.db.store,
    redisUrl: TEST_REDIS_URL,
    queueName: stack.queueName,
    queuePrefix: stack.prefix,
    env: {},
    ordering: 'operation',
  });
  await stack.startWorker({}, { env });
});

afterAll(async () => {
  await ordered?.close();
  await stack?.cleanup();
  await audit?.close();
  await caller?.close();
});

/** Four afterSteps then onComplete through a queue-mode dispatcher: the environment hooks run on each, the caller hook on the afterSteps. */
async function runOperation(operationId: string, callerWebhook: Record<string, unknown>): Promise<void> {
  const d = new HookDispatcher({ mode: 'queue', producer: ordered, env, logger: silentLogger() });
  try {
    d.register(operationId, [{ id: 'caller', type: 'afterStep', webhook: { ordering: 'operation', onFailure: 'block', ...callerWebhook } as never }]);
    for (let stepIndex = 0; stepIndex < 4; stepIndex += 1) await d.dispatch(operationId, 'afterStep', { operationId, stepIndex });
    await d.dispatch(operationId, 'onComplete', { operationId, reason: 'done' });
  } finally {
    await d.close();
  }
}

async function expectAuditUnheld(operationId: string): Promise<void> {
  await waitFor(
    async () => (await rowsOfOperation(operationId)).filter((r) => r.hook_id.startsWith('server-env-webhook:') && r.status === 'delivered').length === 5,
    30_000,
    "the environment hook's 5 deliveries",
  );
  const rows = await rowsOfOperation(operationId);
  // Each hook has its own order: the environment hooks' numbers never interleave with the caller's.
  expect(rows.filter((r) => r.hook_id === 'server-env-webhook:afterStep').map((r) => r.sequence)).toEqual([1, 2, 3, 4]);
  expect(rows.filter((r) => r.hook_id === 'server-env-webhook:onComplete').map((r) => r.sequence)).toEqual([1]);
  expect(rows.filter((r) => r.hook_id === 'caller').map((r) => r.sequence)).toEqual([1, 2, 3, 4]);
  // The caller blocked only itself: its first failed for good, the rest wait, visibly blocked.
  await waitFor(
    async () => (await rowsOfOperation(operationId)).filter((r) => r.hook_id === 'caller' && r.failure_reason === 'ordering_blocked').length === 3,
    30_000,
    "the caller's successors marked blocked",
  );
  const callerRows = (await rowsOfOperation(operationId)).filter((r) => r.hook_id === 'caller');
  expect(callerRows[0]).toMatchObject({ status: 'failed' });
  for (const r of callerRows.slice(1)) expect(r).toMatchObject({ status: 'queued', failure_reason: 'ordering_blocked' });
}

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: stack.db.url,
        REDIS_URL: TEST_REDIS_URL,
        HOOKRELAY_QUEUE: stack.queueName,
        HOOKRELAY_QUEUE_PREFIX: stack.prefix,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('SEC-T3 ordering is scoped to its hook (SEC-H7)', () => {
  it("SEC-T3: a failing caller hook labelled with the environment hook's URL (block, 410) never holds the audit hook's deliveries", async () => {
    const before = audit.requests.filter((r) => r.headers.authorization === `Bearer ${ENV_TOKEN}`).length;
    await runOperation('sect3-label', { url: `${caller.url}/gone`, endpoint: `${audit.url}/audit` });
    await expectAuditUnheld('sect3-label');
    expect(audit.requests.filter((r) => r.headers.authorization === `Bearer ${ENV_TOKEN}`).length - before).toBe(5);
    expect(caller.requests.length).toBe(1); // only sequence 1 of the caller was ever sent
  });

  it("SEC-T3: a caller hook on the audit receiver's very URL, refused there (410), blocks only itself", async () => {
    await runOperation('sect3-same-url', { url: `${audit.url}/audit` });
    await expectAuditUnheld('sect3-same-url');
    const strangers = audit.requests.filter((r) => r.headers.authorization !== `Bearer ${ENV_TOKEN}`);
    expect(strangers).toHaveLength(1);
  });

  it('SEC-T3: blocked is visible: `deliveries list` shows it, and hookrelay_ordering_blocked_total counts each blocked delivery once', async () => {
    const counted = await stack.worker().metrics.orderingBlocked.get();
    expect(counted.values.reduce((n, v) => n + v.value, 0)).toBe(6); // 3 per operation above
    const cli = await runCli(['deliveries', 'list', '--operation', 'sect3-label', '--hook', 'caller']);
    expect(cli.code).toBe(0);
    expect(cli.stdout.match(/queued \(blocked\)/g)).toHaveLength(3);
  });

  it('SEC-T3: a body or event `sequence` never reaches the payload; an ordered one carries only its own number', async () => {
    const rx = await startReceiver({ status: 200 });
    try {
      await stack.producer.enqueue({
        operationId: 'sect3-body',
        type: 'onComplete',
        event: { sequence: 7 },
        hooks: [{ id: 'unordered', type: 'onComplete', webhook: { url: `${rx.url}/u`, body: { sequence: 2, kept: true } } }],
      });
      await ordered.enqueue({
        operationId: 'sect3-body',
        type: 'onComplete',
        event: { sequence: 7 },
        hooks: [{ id: 'ordered', type: 'onComplete', webhook: { url: `${rx.url}/o`, body: { sequence: 99 } } }],
      });
      await waitFor(() => rx.requests.length === 2, 15_000, 'both deliveries');
      const unordered = rx.requests.find((r) => r.path === '/u')!;
      expect(unordered.headers['hookrelay-sequence']).toBeUndefined();
      expect(JSON.parse(unordered.body)).not.toHaveProperty('sequence');
      expect(JSON.parse(unordered.body)).toMatchObject({ kept: true });
      const own = rx.requests.find((r) => r.path === '/o')!;
      expect(own.headers['hookrelay-sequence']).toBe('1');
      expect(JSON.parse(own.body)).toMatchObject({ sequence: 1 });
    } finally {
      await rx.close();
    }
  });
});
