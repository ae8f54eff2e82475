/**
 * `hookrelay endpoints disable --hold` returns once every live worker applied it, with workers
 * as processes (the bin, compiled dist): what is dispatched after it returns is never sent; a
 * worker that does not confirm in time is named and the command exits 1; `stats` counts held
 * deliveries. Real Redis, Postgres and an HTTP receiver on 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { TEST_REDIS_URL, waitFor } from '../integration/queue/harness.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { ROOT, spawnWorker, type HookrelayProcess } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

const BIN = path.join(ROOT, 'bin/hookrelay.mjs');

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

describe('UX-4: endpoints disable --hold waits for every live worker', () => {
  let db: TestStore;
  let producer: HookProducer | undefined;
  let queue = '';
  let receiver: Receiver;
  const workers: HookrelayProcess[] = [];

  const env = (): Record<string, string> => ({ DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queue });
  const workerEnv = (): Record<string, string> => ({
    ...env(),
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
  });
  const events = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => ({
      operationId: `op-${tag}-${i}`,
      type: 'onComplete' as const,
      event: { i },
      hooks: [{ id: 'held', type: 'onComplete' as const, webhook: { url: `${receiver.url}/hook` } }],
    }));
  const countByStatus = async (): Promise<Record<string, number>> => {
    const { rows } = await db.store.pool!.query<{ status: string; n: number }>('select status, count(*)::int as n from deliveries group by status');
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  };

  beforeAll(async () => {
    db = await createTestStore('e2e_hold');
    receiver = await startReceiver({ status: 200 });
  });
  afterEach(async () => {
    for (const w of workers) w.kill('SIGCONT');
    await Promise.all(workers.splice(0).map((w) => w.stop('SIGKILL')));
    await producer?.close();
    producer = undefined;
    if (queue) await deleteKeys(queueKeys(queue));
    await db.store.pool!.query('delete from deliveries; delete from endpoints');
    receiver.requests.length = 0;
  });
  afterAll(async () => {
    await receiver.close();
    await db.cleanup();
  });

  const newQueue = () => {
    queue = `e2e-hold-${randomBytes(4).toString('hex')}`;
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName: queue, env: {} });
    return producer;
  };

  it('UX-4 disable --hold then dispatch → 0 sent: with two live workers the command returns after both applied it, the 150 events dispatched right after are all held and none reaches the receiver; stats counts them', async () => {
    const p = newQueue();
    const two = [spawnWorker(workerEnv()), spawnWorker(workerEnv())];
    workers.push(...two);
    await Promise.all(two.map((w) => w.ready()));
    // The endpoint is live first: 10 deliveries go out.
    await p.enqueueMany(events(10, 'before'));
    await waitFor(async () => (await countByStatus()).delivered === 10, 30_000, '10 delivered before the disable');
    expect(receiver.requests.length).toBe(10);

    const disabled = await cli(['endpoints', 'disable', `${receiver.url}/hook`, '--hold', '--json'], env());
    expect(disabled.stderr).toBe('');
    expect(disabled.code).toBe(0);
    expect(JSON.parse(disabled.stdout)).toMatchObject({ disabled: true, changed: true, hold: true, workers: { applied: 2, pending: [] } });

    // Dispatched right after the command returned: every one is held, none is sent.
    await p.enqueueMany(events(150, 'after'));
    await waitFor(async () => (await countByStatus()).held === 150, 60_000, '150 held');
    expect(await countByStatus()).toEqual({ delivered: 10, held: 150 });
    expect(receiver.requests.length).toBe(10);

    // stats counts the held deliveries: the oldest undelivered is not "none".
    const stats = await cli(['stats'], env());
    expect(stats.code).toBe(0);
    expect(stats.stdout).toMatch(/^held\s+150$/m);
    expect(stats.stdout).not.toContain('oldest undelivered: none');
    expect(stats.stdout).toMatch(/oldest undelivered: \d+ s ago/);
    expect(stats.stdout).toContain('held: 150 deliveries wait for a disabled endpoint');
    const json = JSON.parse((await cli(['stats', '--json'], env())).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ held: 150, ledger: { held: 150, delivered: 10 } });
    expect(typeof json.oldestUndeliveredAgeSeconds).toBe('number');
    expect(typeof json.oldestHeldAgeSeconds).toBe('number');
  }, 150_000);

  it('UX-4 a live worker that does not confirm within --wait is named on stderr and the command exits 1 (the change is stored)', async () => {
    newQueue();
    const running = spawnWorker(workerEnv());
    const frozen = spawnWorker(workerEnv());
    workers.push(running, frozen);
    await Promise.all([running.ready(), frozen.ready()]);
    // A frozen process: its last confirmation is recent (live) but it reads nothing any more.
    frozen.kill('SIGSTOP');
    const result = await cli(['endpoints', 'disable', `${receiver.url}/hook`, '--hold', '--wait', '3'], env());
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('not confirmed within 3 s by 1 of 2 live workers');
    expect(result.stderr).toContain(`:${frozen.child.pid}:`);
    expect(result.stderr).not.toContain(`:${running.child.pid}:`);
    const { rows } = await db.store.pool!.query<{ hold: boolean; disabled_at: Date | null }>('select hold, disabled_at from endpoints');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ hold: true });
    expect(rows[0]!.disabled_at).not.toBeNull();

    const json = await cli(['endpoints', 'disable', `${receiver.url}/hook`, '--hold', '--wait', '2', '--json'], env());
    expect(json.code).toBe(1);
    const body = JSON.parse(json.stdout) as { workers: { applied: number; pending: string[] } };
    expect(body.workers.applied).toBe(1);
    expect(body.workers.pending).toHaveLength(1);
    expect(body.workers.pending[0]).toContain(`:${frozen.child.pid}:`);
  }, 120_000);
});
