/**
 * SEC-H3 (issue 24): text Postgres cannot store (`\u0000`, unpaired UTF-16 surrogates) never
 * reaches a batch. Refused at every entry with a typed error naming the path; a batched write
 * that Postgres refuses anyway is retried row by row, so batch-mates are written exactly once and
 * no error or log line carries the statement's parameters (another tenant's payload).
 */
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventValidationError, HookConfigError, StorageError, OutcomeNotStoredError } from '../../../src/contract/errors.ts';
import { isStorableText } from '../../../src/contract/storableText.ts';
import { createOperationStore } from '../../../src/operations/operationStore.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createLedgerWriter, OUTCOME_UNWRITABLE } from '../../../src/worker/attempt/ledgerWriter.ts';
import { createReconciler, MAX_REQUEUES_WITHOUT_OUTCOME, REQUEUE_LIMIT_REASON } from '../../../src/worker/sweeps/reconciler.ts';
import { openDeliveryQueue } from '../../../src/queue/queueConnection.ts';
import { insertDeliveries, newDeliveryId, type AttemptOutcome } from '../../../src/store/deliveriesRepo.ts';
import { createStack, fetchHook, TEST_REDIS_URL, type Stack } from './harness.ts';

const rowsOf = <T>(r: unknown) => (r as { rows: T[] }).rows;

describe('SEC-H3 text Postgres cannot store', () => {
  let stack: Stack;
  const url = 'https://hooks.example.com/x';

  beforeAll(async () => {
    stack = await createStack('sech3');
  });
  afterAll(async () => {
    await stack.cleanup();
  });

  const count = async (where = sql`true`) =>
    rowsOf<{ n: number }>(await stack.db.store.db.execute(sql`select count(*)::int as n from deliveries where ${where}`))[0]?.n ?? -1;

  it("SEC-H3 tenant A/B race: A clean and B with \\u0000 enqueued at the same moment → A stored, B EventValidationError without A's payload", async () => {
    const secretA = `tenant-a-private-${Date.now()}`;
    const [a, b] = await Promise.allSettled([
      stack.producer.enqueue({ operationId: 'op-tenant-a', type: 'onComplete', event: { note: secretA }, hooks: [fetchHook('a', url)] }),
      stack.producer.enqueue({ operationId: 'op-tenant-b', type: 'onComplete', event: { note: 'b\u0000' }, hooks: [fetchHook('b', url)] }),
    ]);
    expect(a.status).toBe('fulfilled');
    const ids = a.status === 'fulfilled' ? a.value.deliveryIds : [];
    expect(ids).toHaveLength(1);
    expect(await count(sql`operation_id = 'op-tenant-a'`)).toBe(1);
    expect(await count(sql`operation_id = 'op-tenant-b'`)).toBe(0);
    expect(b.status).toBe('rejected');
    const error = b.status === 'rejected' ? (b.reason as Error) : undefined;
    expect(error).toBeInstanceOf(EventValidationError);
    expect(error?.message).toContain('event.note');
    expect(error?.message).not.toContain(secretA);
    expect(error?.message).not.toMatch(/Failed query|params/);
  });

  it('SEC-H3 NUL and lone surrogates in keys or values at any depth are refused at enqueue, dispatch, register and createOperation; nothing stored', async () => {
    const before = await count();
    const refuse = async (run: () => unknown | Promise<unknown>) => {
      try {
        await run();
      } catch (error) {
        return error as Error;
      }
      throw new Error('expected a refusal');
    };
    // enqueue: event value deep in an array, a key, a lone surrogate; ids; a hook body and header.
    const e1 = await refuse(() =>
      stack.producer.enqueue({ operationId: 'op-x', type: 'onComplete', event: { deep: { list: ['ok', { v: 'x\u0000' }] } }, hooks: [fetchHook('h', url)] }),
    );
    expect(e1).toBeInstanceOf(EventValidationError);
    expect(e1.message).toContain('event.deep.list[1].v');
    const e2 = await refuse(() =>
      stack.producer.enqueue({ operationId: 'op-x', type: 'onComplete', event: { meta: { ['k\ud800']: 1 } }, hooks: [fetchHook('h', url)] }),
    );
    expect(e2).toBeInstanceOf(EventValidationError);
    expect(e2.message).toContain('event.meta["k\\ud800"]');
    const e3 = await refuse(() => stack.producer.enqueue({ operationId: 'op\u0000', type: 'onComplete', event: {}, hooks: [fetchHook('h', url)] }));
    expect(e3).toBeInstanceOf(EventValidationError);
    expect(e3.message).toContain('operationId');
    const e4 = await refuse(() =>
      stack.producer.enqueue({
        operationId: 'op-x',
        type: 'onComplete',
        event: {},
        hooks: [fetchHook('h', url, { body: { nested: [{ s: 'lone \udc00' }] } })],
      }),
    );
    expect(e4).toBeInstanceOf(HookConfigError);
    expect((e4 as HookConfigError).issues[0]?.path).toBe('webhook.body.nested[0].s');
    const e5 = await refuse(() =>
      stack.producer.enqueue({ operationId: 'op-x', type: 'onComplete', event: {}, idempotencyKey: 'k\u0000', hooks: [fetchHook('h', url)] }),
    );
    expect(e5).toBeInstanceOf(EventValidationError);

    // dispatch (queue mode, through the same producer) and register.
    const dispatcher = new HookDispatcher({ mode: 'queue', producer: stack.producer, logger: silentLogger(), env: {} });
    const e6 = await refuse(() => dispatcher.dispatch('op-d', 'onComplete', { operationId: 'op-d', reason: 'done\u0000' }, [fetchHook('h', url)]));
    expect(e6).toBeInstanceOf(EventValidationError);
    expect(e6.message).toContain('event.reason');
    const e7 = await refuse(() => dispatcher.register('op-r', [fetchHook('h', url, { headers: { 'x-note': 'a\u0000b' } })]));
    expect(e7).toBeInstanceOf(HookConfigError);
    expect((e7 as HookConfigError).issues[0]?.path).toMatch(/^webhook\.headers/);
    const e7b = await refuse(() => dispatcher.register('op-r', [fetchHook('h', url, { body: { ['k\u0000']: { deeper: [1, 'x'] } } })]));
    expect(e7b).toBeInstanceOf(HookConfigError);
    expect((e7b as HookConfigError).issues[0]?.path).toBe('webhook.body["k\\u0000"]');

    // createOperation: a hook and an id.
    const operations = createOperationStore({ store: stack.db.store });
    const e8 = await refuse(() => operations.createOperation({ operationId: 'op-c', hooks: [fetchHook('h', `${url}?q=\ud800`)] }));
    expect(e8).toBeInstanceOf(HookConfigError);
    expect((e8 as HookConfigError).issues[0]?.path).toBe('webhook.url');
    const e9 = await refuse(() => operations.createOperation({ operationId: 'op-c', userId: 'u\u0000', hooks: [fetchHook('h', url)] }));
    expect(e9).toBeInstanceOf(EventValidationError);
    expect(e9.message).toContain('userId');
    // No message repeats the bad text.
    for (const e of [e1, e2, e3, e4, e5, e6, e7, e8, e9]) expect(isStorableText(e.message)).toBe(true);

    expect(await count()).toBe(before);
    expect(rowsOf<{ n: number }>(await stack.db.store.db.execute(sql`select count(*)::int as n from operations`))[0]?.n).toBe(0);
  });

  it('SEC-H3 deferred results, approvals and completions with \u0000 or a lone surrogate are refused with EventValidationError naming the path; the placeholder stays empty', async () => {
    const operations = createOperationStore({ store: stack.db.store });
    const dispatcher = new HookDispatcher({ mode: 'queue', producer: stack.producer, logger: silentLogger(), env: {} });
    await operations.createOperation({ operationId: 'op-p', hooks: [] });
    await operations.createPlaceholder({ operationId: 'op-p', toolCallId: 'call-1' });
    const refuse = async (f: () => Promise<unknown>) => {
      const e = await f().then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(EventValidationError);
      expect(isStorableText((e as Error).message)).toBe(true);
      return (e as Error).message;
    };
    expect(await refuse(() => operations.createPlaceholder({ operationId: 'op-p', toolCallId: 'call\u0000' }))).toContain('toolCallId');
    expect(
      await refuse(() =>
        operations.publishDeferredResult({ operationId: 'op-p', toolCallId: 'call-1', result: { content: 'out\u0000put' } as never, dispatcher }),
      ),
    ).toContain('result.content');
    expect(
      await refuse(() => operations.claimApproval({ operationId: 'op-p', toolCallId: 'call-1', decision: { action: 'reject', reason: 'no\udc00' } as never })),
    ).toContain('decision.reason');
    expect(await refuse(() => operations.completeOperation({ operationId: 'op-p', reason: 'done', event: { note: '\u0000' }, dispatcher } as never))).toContain(
      'event.note',
    );
    const placeholder = await operations.getPlaceholder({ operationId: 'op-p', toolCallId: 'call-1' });
    expect(placeholder?.result ?? null).toBeNull();
    expect(placeholder?.approval ?? null).toBeNull();
    expect((await operations.getOperation('op-p'))?.status).not.toBe('completed');
  });

  it('SEC-H3 a batched outcome UPDATE with one row Postgres refuses: batch-mates written exactly once, only the bad row gets an error naming no parameter', async () => {
    const secret = `batchmate-secret-${Date.now()}`;
    const { deliveryIds } = await stack.producer.enqueueMany(
      [0, 1, 2, 3].map((i) => ({ operationId: `op-batch-${i}`, type: 'onComplete' as const, event: { i }, hooks: [fetchHook(`h${i}`, url)] })),
    );
    expect(deliveryIds).toHaveLength(4);
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, new Writable({ write: (chunk, _e, done) => (lines.push(String(chunk)), done()) }));
    const ledger = createLedgerWriter(stack.db.store.db, { logger });
    const outcome = (id: string, excerpt: string): AttemptOutcome => ({
      id,
      status: 'delivered',
      attempt: {
        attempt: 1,
        at: new Date().toISOString(),
        transport: 'fetch',
        outcome: 'delivered',
        errorClass: null,
        httpStatus: 200,
        durationMs: 1,
        responseExcerpt: excerpt,
        generation: 0,
      },
      lastErrorClass: null,
      lastHttpStatus: 200,
      nextAttemptAt: null,
    });
    // Straight to the ledger writer (past the front-door checks and the excerpt sanitiser): one
    // statement carries the four outcomes (submitted in the same tick), the third has a NUL.
    const results = await Promise.allSettled(deliveryIds.map((id, i) => ledger.record(outcome(id, i === 2 ? 'ok\u0000' : `${secret}-${i}`))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const bad = results[2] as PromiseRejectedResult;
    expect(bad.reason).toBeInstanceOf(OutcomeNotStoredError);
    expect((bad.reason as OutcomeNotStoredError).sqlState).toMatch(/^22/);
    expect(String(bad.reason.message)).not.toMatch(/Failed query|params|batchmate-secret/);

    const rows = rowsOf<{ id: string; status: string; attempt_count: number; n: number; last_error_class: string | null }>(
      await stack.db.store.db.execute(
        sql`select id, status, attempt_count, jsonb_array_length(attempts) as n, last_error_class from deliveries where id = ANY(${sql.param(deliveryIds)}::text[]) order by id`,
      ),
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const i of [0, 1, 3]) expect(byId.get(deliveryIds[i] as string)).toMatchObject({ status: 'delivered', attempt_count: 1, n: 1 });
    // The bad row alone: failed with a reason (never left queued for the reconciler to re-send).
    expect(byId.get(deliveryIds[2] as string)).toMatchObject({ status: 'failed', attempt_count: 1, last_error_class: OUTCOME_UNWRITABLE });
    const log = lines.join('');
    expect(log).toContain('outcome_unwritable');
    expect(log).not.toMatch(/Failed query|params:|batchmate-secret/);
    await ledger.drain();
  });

  it("SEC-H3 the repo's batched INSERT refused for one row → StorageError with the SQLSTATE, never the other rows' payloads", async () => {
    const secret = `insert-mate-secret-${Date.now()}`;
    const row = (payload: unknown) => ({
      id: newDeliveryId(),
      operationId: 'op-repo',
      eventType: 'onComplete' as const,
      hookId: 'h',
      hook: fetchHook('h', url),
      transport: 'fetch' as const,
      payload,
      occurredAt: new Date(),
    });
    const error = await insertDeliveries(stack.db.store.db, [row({ s: secret }), row({ s: 'bad\u0000' })]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageError);
    expect((error as StorageError).sqlState).toMatch(/^22/);
    expect((error as Error).message).not.toMatch(/Failed query|params|insert-mate-secret/);
    expect(await count(sql`operation_id = 'op-repo'`)).toBe(0);
  });

  it('SEC-H3 a row whose jobs keep ending without an outcome is failed after a bounded number of re-enqueues, never re-sent forever', async () => {
    const { deliveryIds } = await stack.producer.enqueue({ operationId: 'op-loop', type: 'onComplete', event: {}, hooks: [fetchHook('loop', url)] });
    const id = deliveryIds[0] as string;
    const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    const deliveryQueue = openDeliveryQueue({ name: stack.queueName, prefix: stack.prefix, redis: connection });
    const { queue } = deliveryQueue;
    const reconciler = createReconciler({ db: stack.db.store.db, queue: deliveryQueue, intervalMs: 60_000, graceMs: 0, logger: silentLogger() });
    try {
      let requeued = 0;
      // Each round: the job vanishes without writing anything (as a job whose outcome cannot be written).
      for (let round = 0; round <= MAX_REQUEUES_WITHOUT_OUTCOME + 1; round += 1) {
        await queue.remove(id);
        requeued += await reconciler.runOnce();
      }
      expect(requeued).toBe(MAX_REQUEUES_WITHOUT_OUTCOME);
      const row = rowsOf<{ status: string; last_error_class: string }>(
        await stack.db.store.db.execute(sql`select status, last_error_class from deliveries where id = ${id}`),
      )[0];
      expect(row).toEqual({ status: 'failed', last_error_class: REQUEUE_LIMIT_REASON });
    } finally {
      await reconciler.stop();
      await queue.close();
      connection.disconnect();
    }
  });
});
