/**
 * Issue 30 (OD-*): ordered delivery per operation, against real Postgres, Redis and receivers on
 * 127.0.0.1. Workers are in-process delivery services (three of them on one queue, as three
 * worker processes would share it); the chaos suite runs the same with worker processes.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { replayDeliveries } from '../../../src/admin/replay.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import type { HookProducer } from '../../../src/queue/types.ts';
import { rowsOf } from '../../../src/store/db.ts';
import { startReceiver, type Receiver, type RecordedRequest } from '../../support/receiver.ts';
import { createStack, TEST_REDIS_URL, waitFor, type Stack } from './harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const BIN = path.join(ROOT, 'bin/hookrelay.mjs');
const OPERATIONS = 200;
const EVENTS = 20;

type Receipt = { id: string; operationId: string; sequence: number; header: string | undefined; status: number };

/** A receiver that answers after 1–50 ms and fails 10 % of first attempts (503), recording every receipt in order. */
async function flakyReceiver(receipts: Receipt[]): Promise<Receiver> {
  const seen = new Set<string>();
  return startReceiver((req: RecordedRequest) => {
    const id = String(req.headers['webhook-id'] ?? '');
    const body = JSON.parse(req.body) as { operationId: string; sequence: number };
    const first = !seen.has(id);
    seen.add(id);
    const status = first && Math.random() < 0.1 ? 503 : 200;
    const header = req.headers['hookrelay-sequence'];
    receipts.push({ id, operationId: body.operationId, sequence: body.sequence, header: typeof header === 'string' ? header : undefined, status });
    return { status, delayMs: 1 + Math.floor(Math.random() * 50) };
  });
}

/** Per operation, the sequences in the order their webhook-ids were first received. */
function firstReceiptOrder(receipts: readonly Receipt[]): Map<string, number[]> {
  const seen = new Set<string>();
  const byOperation = new Map<string, number[]>();
  for (const r of receipts) {
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    const list = byOperation.get(r.operationId) ?? [];
    list.push(r.sequence);
    byOperation.set(r.operationId, list);
  }
  return byOperation;
}

const countStatus = async (stack: Stack, status: string, ids: readonly string[]) => {
  const result = await stack.db.store.db.execute(
    sql`select count(*)::int as n from deliveries where status = ${status} and id = any(${sql.param([...ids])}::text[])`,
  );
  return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0);
};

describe('issue 30: ordered delivery per operation (OD)', () => {
  let stack: Stack;
  let ordered: HookProducer;

  beforeAll(async () => {
    stack = await createStack('ordering');
    // A producer whose default is ordered (hooks that say nothing are ordered).
    ordered = createHookProducer({
      store: stack.db.store,
      redisUrl: TEST_REDIS_URL,
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      env: {},
      ordering: 'operation',
    });
    // Three workers on one queue; retries short, the deadline long enough for 20 events in a row.
    for (let i = 0; i < 3; i++) await stack.startWorker({ HOOKRELAY_RETRY_SCHEDULE: '0.05,0.1,0.2,0.5,1', HOOKRELAY_CONCURRENCY: '16' });
  });

  afterAll(async () => {
    await ordered?.close();
    await stack?.cleanup();
  });

  it('OD-1 ordering: 200 operations × 20 events, 3 workers, slow receivers failing 10 % of first attempts: each operation arrives in sequence order, 0 lost', async () => {
    const receipts: Receipt[] = [];
    const receivers = [await flakyReceiver(receipts), await flakyReceiver(receipts)];
    try {
      // One afterStep hook per operation, 20 events: one sequence per (operation, hook) (SEC-H7: an order never spans hooks).
      const hooksFor = (op: number) => {
        const url = `${receivers[op % 2]!.url}/events`;
        return [{ id: 'steps', type: 'afterStep' as const, webhook: { url, timeout: 5 } }];
      };
      const ids: string[] = [];
      for (let k = 1; k <= EVENTS; k++) {
        const results = await Promise.all(
          Array.from({ length: OPERATIONS }, (_, op) =>
            ordered.enqueue({
              operationId: `od1-${op}`,
              type: 'afterStep',
              event: { stepIndex: k - 1 },
              hooks: hooksFor(op),
            }),
          ),
        );
        for (const r of results) ids.push(...r.deliveryIds);
      }
      expect(ids).toHaveLength(OPERATIONS * EVENTS);
      await waitFor(async () => (await countStatus(stack, 'delivered', ids)) === ids.length, 240_000, 'every ordered delivery delivered');

      const order = firstReceiptOrder(receipts);
      expect(order.size).toBe(OPERATIONS);
      const expected = Array.from({ length: EVENTS }, (_, i) => i + 1);
      for (const [op, sequences] of order) expect({ op, sequences }).toEqual({ op, sequences: expected });
      // 0 lost: every webhook-id was received with a 2xx; the header matches the payload on every receipt.
      const delivered = new Set(receipts.filter((r) => r.status === 200).map((r) => r.id));
      expect(ids.filter((id) => !delivered.has(id))).toEqual([]);
      expect(receipts.filter((r) => r.header !== String(r.sequence))).toEqual([]);
      // Some first attempts did fail (the receivers really retried some).
      expect(receipts.some((r) => r.status === 503)).toBe(true);
    } finally {
      for (const r of receivers) await r.close();
    }
  }, 300_000);

  it('OD-2 ordering: sequences are contiguous 1..N per (operation, hook) across two producers, and an idempotent repeat takes no number', async () => {
    const second = createHookProducer({ store: stack.db.store, redisUrl: TEST_REDIS_URL, queueName: stack.queueName, queuePrefix: stack.prefix, env: {} });
    const receiver = await startReceiver({ status: 200 });
    try {
      const hooks = [{ id: 'n', type: 'onComplete' as const, webhook: { url: `${receiver.url}/n`, ordering: 'operation' as const } }];
      const enqueue = (p: HookProducer, i: number, key?: string) =>
        p.enqueue({ operationId: 'od2', type: 'onComplete', event: { i }, hooks, ...(key ? { idempotencyKey: key } : {}) });
      await Promise.all(Array.from({ length: 30 }, (_, i) => enqueue(i % 2 === 0 ? ordered : second, i)));
      const first = await enqueue(ordered, 100, 'od2-key');
      const repeat = await enqueue(second, 100, 'od2-key');
      expect(repeat.deliveryIds).toEqual(first.deliveryIds);
      await enqueue(second, 101);
      const result = await stack.db.store.db.execute(sql`select sequence from deliveries where operation_id = 'od2' order by sequence`);
      expect(rowsOf<{ sequence: number }>(result).map((r) => Number(r.sequence))).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    } finally {
      await second.close();
      await receiver.close();
    }
  });

  it('OD-3 ordering: onFailure continue — a permanently failing event fails and the next one goes', async () => {
    const receipts: Receipt[] = [];
    const receiver = await startReceiver((req) => {
      const body = JSON.parse(req.body) as { operationId: string; sequence: number; i: number };
      receipts.push({ id: String(req.headers['webhook-id']), operationId: body.operationId, sequence: body.sequence, header: undefined, status: 0 });
      return { status: body.i === 2 ? 410 : 200 }; // 410: permanent, no retry
    });
    try {
      const hooks = [
        { id: 'c', type: 'onComplete' as const, webhook: { url: `${receiver.url}/c`, ordering: 'operation' as const, onFailure: 'continue' as const } },
      ];
      const ids: string[] = [];
      for (let i = 1; i <= 4; i++) ids.push(...(await ordered.enqueue({ operationId: 'od3', type: 'onComplete', event: { i }, hooks })).deliveryIds);
      await waitFor(async () => (await countStatus(stack, 'delivered', ids)) === 3 && (await countStatus(stack, 'failed', ids)) === 1, 30_000, 'continue');
      expect(receipts.map((r) => r.sequence)).toEqual([1, 2, 3, 4]);
    } finally {
      await receiver.close();
    }
  });

  it('OD-4 ordering: onFailure block — later events wait until `hookrelay deliveries skip` releases them', async () => {
    const receipts: Receipt[] = [];
    const receiver = await startReceiver((req) => {
      const body = JSON.parse(req.body) as { operationId: string; sequence: number; i: number };
      receipts.push({ id: String(req.headers['webhook-id']), operationId: body.operationId, sequence: body.sequence, header: undefined, status: 0 });
      return { status: body.i === 2 ? 410 : 200 };
    });
    try {
      const hooks = [
        { id: 'b', type: 'onComplete' as const, webhook: { url: `${receiver.url}/b`, ordering: 'operation' as const, onFailure: 'block' as const } },
      ];
      const ids: string[] = [];
      for (let i = 1; i <= 4; i++) ids.push(...(await ordered.enqueue({ operationId: 'od4', type: 'onComplete', event: { i }, hooks })).deliveryIds);
      await waitFor(async () => (await countStatus(stack, 'failed', ids)) === 1, 30_000, 'event 2 failed');
      // Blocked: give the workers time to (wrongly) send 3 and 4; bounded, then check nothing went.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(receipts.map((r) => r.sequence)).toEqual([1, 2]);
      expect(await countStatus(stack, 'queued', ids)).toBe(2);

      const run = await cli(['deliveries', 'skip', ids[1]!], stack);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`${ids[1]}  skipped`);
      await waitFor(async () => (await countStatus(stack, 'delivered', ids)) === 3, 30_000, 'released after skip');
      expect(await countStatus(stack, 'skipped', ids)).toBe(1);
      expect(receipts.map((r) => r.sequence)).toEqual([1, 2, 3, 4]);
      // A delivered delivery cannot be skipped (exit 1, nothing changed).
      const refused = await cli(['deliveries', 'skip', ids[0]!], stack);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toContain('not skipped: status delivered');
    } finally {
      await receiver.close();
    }
  });

  it('OD-5 ordering: replaying one operation’s failed set sends it in sequence order', async () => {
    let up = false;
    const receipts: Receipt[] = [];
    const receiver = await startReceiver((req) => {
      const body = JSON.parse(req.body) as { operationId: string; sequence: number };
      receipts.push({ id: String(req.headers['webhook-id']), operationId: body.operationId, sequence: body.sequence, header: undefined, status: 0 });
      return { status: up ? 200 : 410, delayMs: 1 + Math.floor(Math.random() * 20) };
    });
    try {
      const hooks = [{ id: 'r', type: 'onComplete' as const, webhook: { url: `${receiver.url}/r`, ordering: 'operation' as const } }];
      const ids: string[] = [];
      // Four: fewer failures than open the endpoint's breaker (5), so each fails on its own attempt.
      for (let i = 1; i <= 4; i++) ids.push(...(await ordered.enqueue({ operationId: 'od5', type: 'onComplete', event: { i }, hooks })).deliveryIds);
      await waitFor(async () => (await countStatus(stack, 'failed', ids)) === 4, 30_000, 'all failed');
      up = true;
      receipts.length = 0;
      // Newest first, as `replay --status failed` selects them: the replay loop puts them in sequence order.
      const results = await replayDeliveries(stack.db.store.db, stack.worker().queue, [...ids].reverse(), { includeAccepted: false });
      expect(
        results
          .filter((r) => r.result === 'replayed')
          .map((r) => r.id)
          .sort(),
      ).toEqual([...ids].sort());
      await waitFor(async () => (await countStatus(stack, 'delivered', ids)) === 4, 30_000, 'replayed');
      expect(firstReceiptOrder(receipts).get('od5')).toEqual([1, 2, 3, 4]);
    } finally {
      await receiver.close();
    }
  });

  it('OD-6 ordering: unordered deliveries are unchanged — no hookrelay-sequence header, no sequence field, no sequence in the ledger', async () => {
    const requests: RecordedRequest[] = [];
    const receiver = await startReceiver((req) => {
      requests.push(req);
      return { status: 200 };
    });
    try {
      const hooks = [
        { id: 'plain', type: 'onComplete' as const, webhook: { url: `${receiver.url}/plain` } },
        { id: 'optout', type: 'onComplete' as const, webhook: { url: `${receiver.url}/optout`, ordering: 'none' as const } },
      ];
      const a = await stack.producer.enqueue({ operationId: 'od6', type: 'onComplete', event: {}, hooks: hooks.slice(0, 1) });
      const b = await ordered.enqueue({ operationId: 'od6', type: 'onComplete', event: {}, hooks: hooks.slice(1) });
      const ids = [...a.deliveryIds, ...b.deliveryIds];
      await waitFor(async () => (await countStatus(stack, 'delivered', ids)) === 2, 30_000, 'unordered delivered');
      expect(requests).toHaveLength(2);
      for (const r of requests) {
        expect(r.headers['hookrelay-sequence']).toBeUndefined();
        expect(JSON.parse(r.body)).not.toHaveProperty('sequence');
      }
      const delivery = await stack.producer.getDelivery(ids[0]!);
      expect(delivery?.sequence).toBeNull();
    } finally {
      await receiver.close();
    }
  });

  it('OD-7 ordering: a hook may not forge the sequence header, and ordering needs fetch delivery (W1b)', () => {
    const forged = WebhookConfigSchema.safeParse({ url: 'https://example.com/h', headers: { 'Hookrelay-Sequence': '1' } });
    expect(forged.success).toBe(false);
    const qstash = WebhookConfigSchema.safeParse({ url: 'https://example.com/h', delivery: 'qstash', ordering: 'operation' });
    expect(qstash.success).toBe(false);
    expect(WebhookConfigSchema.safeParse({ url: 'https://example.com/h', ordering: 'operation', onFailure: 'block' }).success).toBe(true);
    expect(WebhookConfigSchema.safeParse({ url: 'https://example.com/h', ordering: 'sometimes' }).success).toBe(false);
  });
});

/** The shipped CLI (dist/, built by the suite's global setup) against this stack. */
function cli(args: string[], stack: Stack): Promise<{ code: number | null; stdout: string; stderr: string }> {
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
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('issue 30: an ordered successor waits in memory behind its predecessor running in the same worker', () => {
  let stack: Stack;
  let ordered: HookProducer;
  let admin: Redis;

  beforeAll(async () => {
    stack = await createStack('ordering_mem');
    ordered = createHookProducer({
      store: stack.db.store,
      redisUrl: TEST_REDIS_URL,
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      env: {},
      ordering: 'operation',
    });
    admin = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    // One worker: the predecessor runs here, so its successors may wait for it in memory.
    await stack.startWorker({ HOOKRELAY_CONCURRENCY: '4' });
  });

  afterAll(async () => {
    admin?.disconnect();
    await ordered?.close();
    await stack?.cleanup();
  });

  /** Job ids BullMQ moved to delayed (parked or deferred), from the queue's events stream. */
  const delayedJobIds = async (): Promise<Set<string>> => {
    const entries = await admin.xrange(`${stack.prefix}:${stack.queueName}:events`, '-', '+');
    const ids = new Set<string>();
    for (const [, fields] of entries) {
      const at = (name: string) => fields[fields.indexOf(name) + 1];
      if (at('event') === 'delayed') ids.add(String(at('jobId')));
    }
    return ids;
  };

  it('OD-10 ordering: sequences 2 and 3 wait in memory (active, never moved to delayed) while 1 is in flight here, and start after it settles, in order', async () => {
    const receipts: Receipt[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const receiver = await startReceiver(async (req: RecordedRequest) => {
      const body = JSON.parse(req.body) as { operationId: string; sequence: number };
      receipts.push({ id: String(req.headers['webhook-id'] ?? ''), operationId: body.operationId, sequence: body.sequence, header: undefined, status: 200 });
      // Sequence 1 stays in flight until the test has seen its successors waiting.
      if (body.sequence === 1) await held;
      return { status: 200 };
    });
    try {
      const hooks = [{ id: 'mem', type: 'afterStep' as const, webhook: { url: `${receiver.url}/mem`, timeout: 30 } }];
      // Not awaited in between: numbered in call order, 1..3.
      const results = await Promise.all([0, 1, 2].map((stepIndex) => ordered.enqueue({ operationId: 'od10', type: 'afterStep', event: { stepIndex }, hooks })));
      const ids = results.flatMap((r) => r.deliveryIds);
      expect(ids).toHaveLength(3);
      const rows = rowsOf<{ id: string; sequence: number }>(
        await stack.db.store.db.execute(sql`select id, sequence from deliveries where id = any(${sql.param(ids)}::text[]) order by sequence`),
      );
      expect(rows.map((r) => Number(r.sequence))).toEqual([1, 2, 3]);
      const [first, second, third] = rows.map((r) => r.id) as [string, string, string];
      const active = async () => new Set(await admin.lrange(`${stack.prefix}:${stack.queueName}:active`, 0, -1));

      // 1 is at the receiver; 2 and 3 are running jobs (active, locked) in this worker, not parked.
      await waitFor(
        async () => {
          const now = await active();
          return receipts.length === 1 && now.has(second) && now.has(third);
        },
        20_000,
        'sequence 1 in flight and 2, 3 waiting in memory',
      );
      expect(await delayedJobIds()).not.toContain(second);
      expect(await countStatus(stack, 'queued', [second, third])).toBe(2);
      expect(receipts.map((r) => r.sequence)).toEqual([1]);

      release();
      await waitFor(async () => (await countStatus(stack, 'delivered', ids)) === 3, 20_000, 'all three delivered');
      expect(receipts.map((r) => r.sequence)).toEqual([1, 2, 3]);
      expect(receipts.map((r) => r.id)).toEqual([first, second, third]);
      // Never parked: no moveToDelayed for the successors, so no wake, promote or re-fetch either.
      const delayed = await delayedJobIds();
      expect([second, third].filter((id) => delayed.has(id))).toEqual([]);
    } finally {
      release();
      await receiver.close();
    }
  }, 60_000);
});
