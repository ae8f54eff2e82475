import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, fetchHook, waitFor, type Stack } from './harness.ts';

describe('Q3 retries (worker)', () => {
  let stack: Stack;
  let rx: Receiver;
  const hits = new Map<string, number>();
  const at = new Map<string, number[]>();

  beforeAll(async () => {
    stack = await createStack('retry');
    rx = await startReceiver((req) => {
      const n = (hits.get(req.path) ?? 0) + 1;
      hits.set(req.path, n);
      at.set(req.path, [...(at.get(req.path) ?? []), Date.now()]);
      if (req.path === '/flaky') return { status: n <= 2 ? 503 : 200 };
      if (req.path === '/bad-request') return { status: 400 };
      if (req.path === '/gone') return { status: 410 };
      if (req.path === '/slow-down') return n === 1 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 };
      if (req.path === '/down') return { status: 500 };
      return { status: 200 };
    });
    await stack.startWorker();
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
  });

  const enqueue = async (path: string) => {
    const { deliveryIds } = await stack.producer.enqueue({
      operationId: `op${path}`,
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('h', `${rx.url}${path}`)],
    });
    return deliveryIds[0] as string;
  };
  const settled = (id: string) =>
    waitFor(async () => ['delivered', 'failed'].includes((await stack.producer.getDelivery(id))?.status ?? ''), 15_000, `delivery ${id} settled`);

  it('Q3: fails twice then succeeds → delivered after 3 attempts, every attempt recorded', async () => {
    const id = await enqueue('/flaky');
    await settled(id);
    const d = await stack.producer.getDelivery(id);
    expect(d).toMatchObject({ status: 'delivered', attemptCount: 3, lastErrorClass: null, lastHttpStatus: 200 });
    expect(d?.attempts.map((a) => [a.attempt, a.outcome, a.httpStatus, a.errorClass])).toEqual([
      [1, 'failed', 503, 'http_error'],
      [2, 'failed', 503, 'http_error'],
      [3, 'delivered', 200, null],
    ]);
    expect(hits.get('/flaky')).toBe(3);
  });

  it('Q3: 400 is permanent → failed after 1 attempt (410 too), replayable', async () => {
    const [a, b] = await Promise.all([enqueue('/bad-request'), enqueue('/gone')]);
    await settled(a);
    await settled(b);
    expect(await stack.producer.getDelivery(a)).toMatchObject({ status: 'failed', attemptCount: 1, lastErrorClass: 'http_error', lastHttpStatus: 400 });
    expect(await stack.producer.getDelivery(b)).toMatchObject({ status: 'failed', attemptCount: 1, lastHttpStatus: 410 });
    await new Promise((r) => setTimeout(r, 300));
    expect(hits.get('/bad-request')).toBe(1);
  });

  it('Q3: 429 with Retry-After: 2 → the next attempt is not before 2 s', async () => {
    const id = await enqueue('/slow-down');
    await settled(id);
    const times = at.get('/slow-down') ?? [];
    expect(times).toHaveLength(2);
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(2_000);
    const d = await stack.producer.getDelivery(id);
    expect(d).toMatchObject({ status: 'delivered', attemptCount: 2 });
    expect(d?.attempts[0]).toMatchObject({ httpStatus: 429, outcome: 'failed' });
  });

  it('Q3: attempts exhausted (schedule of 2 retries) → failed after 3 attempts, replayable from the ledger', async () => {
    const id = await enqueue('/down');
    await settled(id);
    const d = await stack.producer.getDelivery(id);
    expect(d).toMatchObject({ status: 'failed', attemptCount: 3, lastErrorClass: 'http_error', lastHttpStatus: 500, nextAttemptAt: null });
    expect(d?.attempts).toHaveLength(3);
    expect(hits.get('/down')).toBe(3);
    // Q11: the failed job left Redis; the row is the dead letter.
    // (The ledger row is written before BullMQ removes the job: wait for the removal.)
    await waitFor(async () => (await stack.worker().queue.getJob(id)) === undefined, 10_000, 'the failed job to leave Redis');
  });
});
