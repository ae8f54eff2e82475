import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { appendOperationHooks, insertOperation } from '../../src/store/operationsRepo.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { AgentContextBuilder, InterceptionEmitter, Verdict } from '../../src/intercept/index.ts';
import { createStoreRecordSink } from '../../src/store/interceptionRecordSink.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, listKeys, queueKeys } from '../support/redisKeys.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/hookrelay.mjs');
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECRET = 'cli-secret-4d7a19e2';

type Run = { code: number | null; stdout: string; stderr: string };

describe('Q10/Q12: the admin CLI against real Postgres, Redis and a receiver', () => {
  let t: TestStore;
  let receiver: Receiver;
  let producer: HookProducer;
  let worker: ChildProcess | undefined;
  const queueName = `cli-${randomBytes(4).toString('hex')}`;
  let receiverUp = false;
  const okById = new Map<string, number>();

  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    ...process.env,
    DATABASE_URL: t.url,
    REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32',
    HOOKRELAY_RETRY_SCHEDULE: '0.01',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '500',
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_CONCURRENCY: '32',
    CLI_TOKEN: SECRET,
    HOOKRELAY_TEMPLATE_ENV: 'CLI_TOKEN', // SEC-H2: templates are denied unless listed
    LOG_LEVEL: 'warn',
    ...extra,
  });

  const cli = (args: string[], extra: Record<string, string> = {}, opts: { killAfterMs?: number } = {}): Promise<Run> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(extra), stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d));
      child.stderr.on('data', (d: Buffer) => (stderr += d));
      if (opts.killAfterMs !== undefined) setTimeout(() => child.kill('SIGINT'), opts.killAfterMs);
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });

  const count = async (status: string) => {
    const r = await t.store.pool!.query<{ n: number }>('select count(*)::int as n from deliveries where status = $1', [status]);
    return r.rows[0]!.n;
  };
  const waitFor = async (what: () => Promise<boolean>, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await what()) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error('timed out waiting');
  };

  const hook = () => ({
    id: 'receiver',
    type: 'onComplete' as const,
    webhook: { url: `${receiver.url}/hook`, headers: { authorization: 'Bearer ${CLI_TOKEN}' }, allowedEnvVars: ['CLI_TOKEN'] },
  });

  beforeAll(async () => {
    t = await createTestStore('cli');
    receiver = await startReceiver((req) => {
      if (!receiverUp) return { status: 503 };
      const id = String(req.headers['webhook-id']);
      okById.set(id, (okById.get(id) ?? 0) + 1);
      return { status: 204 };
    });
    producer = createHookProducer({ store: t.store, redisUrl: REDIS_URL, queueName, env: { HOOKRELAY_TEMPLATE_ENV: 'CLI_TOKEN' } });
    worker = spawn(process.execPath, [BIN, 'worker'], { cwd: ROOT, env: env(), stdio: ['ignore', 'ignore', 'inherit'] });
  }, 60_000);

  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((r) => worker!.once('exit', r));
      worker.kill('SIGTERM');
      await exited;
    }
    await producer.close();
    await receiver.close();
    await deleteKeys(queueKeys(queueName));
    await t.cleanup();
  }, 60_000);

  it('Q10: 1,000 deliveries failed while the receiver was down; `replay --status failed --yes` delivers each exactly once', async () => {
    const items = Array.from({ length: 1_000 }, (_, i) => ({
      operationId: `op-${i}`,
      type: 'onComplete' as const,
      event: { operationId: `op-${i}`, reason: 'done' },
      hooks: [hook()],
    }));
    const { deliveryIds } = await producer.enqueueMany(items);
    expect(deliveryIds).toHaveLength(1_000);
    await waitFor(async () => (await count('failed')) === 1_000, 120_000);
    expect(okById.size).toBe(0);

    receiverUp = true;
    const run = await cli(['replay', '--status', 'failed', '--yes']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n').at(-1)).toBe('replayed 1000, skipped 0, failed 0');
    await waitFor(async () => (await count('delivered')) === 1_000, 120_000);
    expect(okById.size).toBe(1_000);
    expect([...okById.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(okById.keys())).toEqual(new Set(deliveryIds));
  }, 240_000);

  it('Q10: replaying an id that is already delivered is skipped with exit 0; an unknown id exits 2 with one line', async () => {
    const [id] = [...okById.keys()];
    const delivered = await cli(['replay', id!]);
    expect(delivered.code).toBe(0);
    expect(delivered.stdout).toContain(`${id}: skipped (already delivered)`);
    const unknown = await cli(['replay', 'dlv_01AAAAAAAAAAAAAAAAAAAAAAAA']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    const partial = await cli(['replay', id!, 'dlv_01AAAAAAAAAAAAAAAAAAAAAAAA']);
    expect(partial.code).toBe(1);
  }, 60_000);

  it('Q10: --dry-run changes nothing in the ledger or the queue', async () => {
    receiverUp = false;
    const { deliveryIds } = await producer.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({ operationId: `dry-${i}`, type: 'onComplete' as const, event: { operationId: `dry-${i}` }, hooks: [hook()] })),
    );
    await waitFor(async () => (await count('failed')) === 20);
    const before = await t.store.pool!.query('select id, status, generation, updated_at from deliveries order by id');
    const redis = new Redis(REDIS_URL);
    const keysBefore = (await listKeys(queueKeys(queueName), redis)).sort();
    const run = await cli(['replay', '--status', 'failed', '--dry-run']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('dry run: would replay 20');
    for (const id of deliveryIds) expect(run.stdout).toContain(id);
    const after = await t.store.pool!.query('select id, status, generation, updated_at from deliveries order by id');
    expect(after.rows).toEqual(before.rows);
    expect((await listKeys(queueKeys(queueName), redis)).sort()).toEqual(keysBefore);
    redis.disconnect();
  }, 60_000);

  it('Q10: an interrupted replay (SIGINT mid-way), run again, enqueues nothing twice', async () => {
    receiverUp = true;
    const interrupted = await cli(['replay', '--status', 'failed', '--yes', '--rate', '10'], {}, { killAfterMs: 1_200 });
    expect(interrupted.code).not.toBe(0);
    const again = await cli(['replay', '--status', 'failed', '--yes']);
    expect(again.code).toBe(0); // what is left, or nothing to replay: both are success
    await waitFor(async () => (await count('delivered')) === 1_020);
    // Each of the 20 was replayed exactly once (one generation bump) and received exactly once.
    const generations = await t.store.pool!.query<{ generation: number }>(`select generation from deliveries where operation_id like 'dry-%'`);
    expect(generations.rows).toHaveLength(20);
    expect(generations.rows.every((r) => r.generation === 1)).toBe(true);
    expect(okById.size).toBe(1_020);
    expect([...okById.values()].every((n) => n === 1)).toBe(true);
  }, 90_000);

  it('Q10: --json outputs parse as JSON; deliveries show never prints the resolved secret', async () => {
    const list = await cli(['deliveries', 'list', '--status', 'delivered', '--limit', '5', '--json']);
    expect(list.code).toBe(0);
    const rows = JSON.parse(list.stdout) as Array<{ id: string; status: string }>;
    expect(rows).toHaveLength(5);
    expect(rows.every((r) => r.status === 'delivered')).toBe(true);
    const show = await cli(['deliveries', 'show', rows[0]!.id, '--json']);
    const shown = JSON.parse(show.stdout) as { hook: unknown; attempts: unknown[]; attemptCount: number };
    expect(JSON.stringify(shown.hook)).toContain('Bearer ${CLI_TOKEN}');
    expect(shown.attempts.length).toBeGreaterThan(0);
    expect(shown.attemptCount).toBe(shown.attempts.length);
    const text = await cli(['deliveries', 'show', rows[0]!.id]);
    for (const out of [show.stdout, text.stdout, list.stdout]) expect(out).not.toContain(SECRET);
    const stats = await cli(['stats', '--json']);
    expect(JSON.parse(stats.stdout)).toMatchObject({ ledger: { delivered: 1_020 } });
  }, 60_000);

  it('I4: records list shows the payload-free interception records of a session', async () => {
    const sink = createStoreRecordSink(t.store.db);
    const emitter = new InterceptionEmitter({
      interceptors: [() => Verdict.deny({ reason: 'policy.cli_demo' })],
      recordSink: sink.sink,
      sequenceProvider: sink.sequenceProvider,
    });
    const builder = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-cli' });
    await emitter.emitUnchecked(builder.preToolCall({ id: 'c1', name: 'shell/exec', args: { cmd: 'records-needle' } }));
    const run = await cli(['records', 'list', '--session', 'sess-cli', '--json']);
    expect(run.code).toBe(0);
    const records = JSON.parse(run.stdout) as Array<{ session_id: string; interception_point: string; verdict: { reason: string } }>;
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ session_id: 'sess-cli', interception_point: 'pre_tool_call', verdict: { reason: 'policy.cli_demo' } });
    expect(run.stdout).not.toContain('records-needle');
    const table = await cli(['records', 'list', '--session', 'sess-cli']);
    expect(table.stdout).toMatch(/sess-cli\s+0\s+pre_tool_call\s+deny\s+policy\.cli_demo/);
  }, 60_000);

  it('enqueue: sends an event to the persisted hooks of an operation', async () => {
    await insertOperation(t.store.db, { id: 'op-enqueue' });
    await appendOperationHooks(t.store.db, 'op-enqueue', [hook()]);
    const file = path.join(ROOT, 'test/e2e/fixtures/event.json');
    const run = await cli(['enqueue', '--operation', 'op-enqueue', '--type', 'onComplete', '--file', file, '--json']);
    expect(run.code).toBe(0);
    const { deliveryIds } = JSON.parse(run.stdout) as { deliveryIds: string[] };
    expect(deliveryIds).toHaveLength(1);
    await waitFor(async () => okById.has(deliveryIds[0]!));
  }, 60_000);
});
