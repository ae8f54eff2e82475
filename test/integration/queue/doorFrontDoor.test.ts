/**
 * DOOR-1 (F1, D5, Q1, Q2; Postgres unreachable at enqueue): an event `dispatch` / `enqueue`
 * returned from is in the ledger, or in the producer's local spool that drains into it in order
 * with the same delivery ids, or the caller was told. Reproduction 1 of issue 48: a wrong
 * DATABASE_URL dropped the event with one log line. Real Postgres (a schema created only later,
 * or a TCP proxy cut), real Redis, a real worker and receiver; the spool in a temp folder.
 */
import { randomBytes } from 'node:crypto';
import { chown, copyFile, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import { EventNotAcceptedError } from '../../../src/contract/errors.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import type { HookProducer, HookProducerOptions } from '../../../src/queue/types.ts';
import { openStore, type Store } from '../../../src/store/db.ts';
import { migrateStore } from '../../../src/store/migrate.ts';
import { TEST_DATABASE_URL } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcpProxy.ts';
import { createStack, fetchHook, TEST_REDIS_URL, waitFor, type Stack } from './harness.ts';

/** A connection string to a schema that does not exist yet: the ledger's table is missing (a wrong DATABASE_URL). */
function laterSchema(): { schema: string; url: string } {
  const schema = `door1_${randomBytes(5).toString('hex')}`;
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { schema, url: url.toString() };
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** "The store returns": the schema is created and migrated. */
async function createLedger(target: { schema: string; url: string }): Promise<Store> {
  await admin(`CREATE SCHEMA "${target.schema}"`);
  const store = await openStore({ databaseUrl: target.url });
  await migrateStore(store, { migrationsSchema: target.schema });
  return store;
}

describe('DOOR-1 (F1): accepted into the ledger or the spool, or the caller is told', () => {
  let stack: Stack;
  let receiver: Receiver;
  let pgProxy: TcpProxy;
  const cleanups: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    stack = await createStack('door1');
    receiver = await startReceiver({ status: 204 });
    pgProxy = await startTcpProxy(Number(new URL(stack.db.url).port || 5432));
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });
  afterAll(async () => {
    await pgProxy.close();
    await stack.cleanup();
    await receiver.close();
  });

  async function spoolDir(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'hookrelay-door1-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }
  function producerOn(databaseUrl: string, extra: Partial<HookProducerOptions> = {}): HookProducer {
    const p = createHookProducer({ databaseUrl, redisUrl: TEST_REDIS_URL, queueName: stack.queueName, queuePrefix: stack.prefix, env: {}, ...extra });
    cleanups.push(() => p.close());
    return p;
  }
  function dispatcherOn(producer: HookProducer, extra: { onNotAccepted?: 'report' | 'throw' } = {}): HookDispatcher {
    const d = new HookDispatcher({ mode: 'queue', producer, env: {}, logger: silentLogger(), ...extra });
    cleanups.push(() => d.close());
    return d;
  }
  const sentTo = (p: string) => receiver.requests.filter((r) => r.path === p);

  it('DOOR-1 (F1): a wrong DATABASE_URL (the ledger not there) → dispatch reports nothing lost, and the event is delivered once the store returns, with its id', async () => {
    const target = laterSchema();
    cleanups.push(() => admin(`DROP SCHEMA IF EXISTS "${target.schema}" CASCADE`));
    const producer = producerOn(target.url, { spool: { dir: await spoolDir() } });
    const d = dispatcherOn(producer);
    d.register('op-door1-wrong', [fetchHook('late', `${receiver.url}/wrong-url`)]);
    const report = await d.dispatch('op-door1-wrong', 'onComplete', { operationId: 'op-door1-wrong', reason: 'done' });
    // The store returns: created and migrated; a worker runs on it.
    const store = await createLedger(target);
    cleanups.push(() => store.close());
    // This worker's ledger is this test's schema: stopped with it, so it never takes a later test's jobs (their rows are not in its ledger).
    const worker = await stack.startWorker({}, { store });
    cleanups.push(() => worker.stop());
    await waitFor(() => sentTo('/wrong-url').length === 1, 20_000, 'the spooled event to be delivered');
    const rows = await store.pool!.query<{ id: string; status: string }>('select id, status from deliveries where operation_id = $1', ['op-door1-wrong']);
    expect(rows.rows).toHaveLength(1);
    expect(sentTo('/wrong-url')[0]!.headers['webhook-id']).toBe(rows.rows[0]!.id);
    expect(report.notAccepted).toEqual([]);
    await waitFor(() => producer.spoolStatus()?.events === 0, 5_000, 'the spool to be empty');
  }, 40_000);

  it('DOOR-1 (F1, Q2): Postgres cut (TCP proxy) → enqueue answers spooled with ids; once it answers they are stored in order with those ids and delivered', async () => {
    await stack.startWorker();
    const producer = producerOn(pgProxy.url(stack.db.url), { spool: { dir: await spoolDir() } });
    const hook = fetchHook('ordered', `${receiver.url}/cut`, { ordering: 'operation' });
    await producer.enqueue({ operationId: 'op-door1-cut', type: 'onComplete', event: { i: 0 }, hooks: [hook] }); // connected once
    await pgProxy.cut();
    const spooled: string[] = [];
    try {
      for (let i = 1; i <= 5; i++) {
        const r = await producer.enqueue({ operationId: 'op-door1-cut', type: 'onComplete', event: { i }, hooks: [hook] });
        expect(r).toMatchObject({ queued: false, spooled: true });
        spooled.push(r.deliveryIds[0]!);
      }
      expect(producer.spoolStatus()?.events).toBe(5);
    } finally {
      await pgProxy.restore();
    }
    await waitFor(() => sentTo('/cut').length === 6, 20_000, 'every event delivered');
    const rows = await stack.db.store.pool!.query<{ id: string; sequence: number; payload: { i: number } }>(
      'select id, sequence, payload from deliveries where operation_id = $1 order by sequence',
      ['op-door1-cut'],
    );
    // The same ids, numbered in the order they were accepted (SEC-H7), each sent once.
    expect(rows.rows.map((r) => r.payload.i)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(rows.rows.slice(1).map((r) => r.id)).toEqual(spooled);
    expect(sentTo('/cut').map((r) => r.headers['webhook-id'])).toEqual(rows.rows.map((r) => r.id));
  }, 40_000);

  it('DOOR-1 (F1): when no spool can be written, enqueue throws EventNotAcceptedError and dispatch reports the hook (or throws, opted in)', async () => {
    const target = laterSchema(); // never created: Postgres cannot take anything
    const blocker = path.join(await spoolDir(), 'a-file');
    await writeFile(blocker, 'not a folder');
    const producer = producerOn(target.url, { spool: { dir: path.join(blocker, 'spool') } });
    const hook = fetchHook('told', `${receiver.url}/told`);
    const error = await producer.enqueue({ operationId: 'op-door1-told', type: 'onComplete', event: {}, hooks: [hook] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventNotAcceptedError);
    expect((error as EventNotAcceptedError).reason).toBe('spool_unwritable');
    expect((error as EventNotAcceptedError).hookIds).toEqual(['told']);
    const d = dispatcherOn(producer);
    d.register('op-door1-told', [hook]);
    const report = await d.dispatch('op-door1-told', 'onComplete', { operationId: 'op-door1-told' });
    expect(report.notAccepted.map((n) => [n.hookId, (n.error as EventNotAcceptedError).reason])).toEqual([['told', 'spool_unwritable']]);
    const strict = dispatcherOn(producer, { onNotAccepted: 'throw' });
    strict.register('op-door1-told', [hook]);
    const thrown = await strict.dispatch('op-door1-told', 'onComplete', { operationId: 'op-door1-told' }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(EventNotAcceptedError);
    expect((thrown as EventNotAcceptedError).hookIds).toEqual(['told']);
  });

  it('DOOR-1 (F1): a full spool, and a keyed event (its key needs the ledger), are refused with their reason; nothing written', async () => {
    const target = laterSchema();
    const dir = await spoolDir();
    const producer = producerOn(target.url, { spool: { dir, maxBytes: 1_200 } });
    const hook = fetchHook('full', `${receiver.url}/full`);
    const keyed = await producer
      .enqueue({ operationId: 'op-door1-full', type: 'onComplete', event: {}, hooks: [hook], idempotencyKey: 'k1' })
      .catch((e: unknown) => e);
    expect((keyed as EventNotAcceptedError).reason).toBe('idempotency_key');
    const first = await producer.enqueue({ operationId: 'op-door1-full', type: 'onComplete', event: { pad: 'x'.repeat(300) }, hooks: [hook] });
    expect(first.spooled).toBe(true);
    const bytes = producer.spoolStatus()!.bytes;
    const second = await producer
      .enqueue({ operationId: 'op-door1-full', type: 'onComplete', event: { pad: 'y'.repeat(900) }, hooks: [hook] })
      .catch((e: unknown) => e);
    expect(second).toBeInstanceOf(EventNotAcceptedError);
    expect((second as EventNotAcceptedError).reason).toBe('spool_full');
    expect(producer.spoolStatus()).toMatchObject({ events: 1, bytes });
  });

  it('DOOR-1 (F1): a producer that closed with events spooled hands them over; the next producer on the data dir drains them; a drain repeated after a crash stores and sends nothing twice', async () => {
    await stack.startWorker();
    const dir = await spoolDir();
    const hook = fetchHook('handover', `${receiver.url}/handover`);
    const first = producerOn(pgProxy.url(stack.db.url), { spool: { dir } });
    await first.enqueue({ operationId: 'op-door1-handover', type: 'onComplete', event: { i: 0 }, hooks: [hook] });
    await pgProxy.cut();
    const ids: string[] = [];
    for (let i = 1; i <= 3; i++)
      ids.push(...(await first.enqueue({ operationId: 'op-door1-handover', type: 'onComplete', event: { i }, hooks: [hook] })).deliveryIds);
    const [segment] = (await readdir(dir)).filter((f) => f.endsWith('.spool'));
    const copy = path.join(dir, '..', `${path.basename(dir)}-copy`);
    await copyFile(path.join(dir, segment!), copy);
    cleanups.push(() => rm(copy, { force: true }));
    await first.close(); // Postgres still away: the segment is handed over, not lost
    await pgProxy.restore();
    const second = producerOn(stack.db.url, { spool: { dir } });
    await waitFor(() => sentTo('/handover').length === 4, 20_000, 'the handed-over events delivered by the next producer');
    expect(second.spoolStatus()?.events).toBe(0);
    // A crash after the rows were stored, before the segment was removed: the same segment again.
    await copyFile(copy, path.join(dir, segment!));
    await utimes(path.join(dir, segment!), 0, 0);
    const third = producerOn(stack.db.url, { spool: { dir } });
    await waitFor(async () => (await readdir(dir)).filter((f) => f.endsWith('.spool')).length === 0, 20_000, 'the repeated segment drained');
    await new Promise((r) => setTimeout(r, 1_000));
    const rows = await stack.db.store.pool!.query<{ id: string }>('select id from deliveries where operation_id = $1', ['op-door1-handover']);
    expect(rows.rows).toHaveLength(4);
    for (const id of ids) expect(sentTo('/handover').filter((r) => r.headers['webhook-id'] === id)).toHaveLength(1);
    expect(third.spoolStatus()?.events).toBe(0);
  }, 60_000);

  it('DOOR-1 (F1, W7): a spool segment another user owns (planted) is not drained; once it is ours again it is', async () => {
    await stack.startWorker();
    const dir = await spoolDir();
    const hook = fetchHook('planted', `${receiver.url}/planted`);
    const first = producerOn(pgProxy.url(stack.db.url), { spool: { dir } });
    await pgProxy.cut();
    await first.enqueue({ operationId: 'op-door1-planted', type: 'onComplete', event: { i: 1 }, hooks: [hook] });
    await first.close(); // handed over: claimable at once
    await pgProxy.restore();
    const [segment] = (await readdir(dir)).filter((f) => f.endsWith('.spool'));
    const file = path.join(dir, segment!);
    await chown(file, 65534, 65534); // as if user nobody wrote it
    producerOn(stack.db.url, { spool: { dir } });
    await new Promise((r) => setTimeout(r, 3_000));
    expect(sentTo('/planted')).toHaveLength(0);
    expect((await readdir(dir)).filter((f) => f.endsWith('.spool'))).toEqual([segment]);
    await chown(file, process.getuid!(), process.getgid!());
    await utimes(file, 0, 0);
    producerOn(stack.db.url, { spool: { dir } });
    await waitFor(() => sentTo('/planted').length === 1, 20_000, 'the segment, ours again, drained and delivered');
  }, 60_000);

  it("DOOR-1 (F1): what the spool holds is visible in `hookrelay stats`, the worker's /readyz and its hookrelay_spool_events gauge", async () => {
    const dataDir = await spoolDir();
    const target = laterSchema(); // the ledger is not there: both events are spooled under the data dir
    const producer = producerOn(target.url, { env: { HOOKRELAY_DATA_DIR: dataDir } });
    for (let i = 0; i < 2; i++) {
      const r = await producer.enqueue({ operationId: 'op-door1-seen', type: 'onComplete', event: { i }, hooks: [fetchHook('seen', `${receiver.url}/seen`)] });
      expect(r.spooled).toBe(true);
    }
    expect(producer.spoolStatus()?.dir.startsWith(path.join(dataDir, 'spool'))).toBe(true);
    const worker = await stack.startWorker({ HOOKRELAY_DATA_DIR: dataDir });
    const ready = (await (await fetch(`http://127.0.0.1:${worker.httpPort}/readyz`)).json()) as { spool: { events: number; oldestAgeSeconds: number | null } };
    expect(ready.spool.events).toBe(2);
    expect(ready.spool.oldestAgeSeconds).not.toBeNull();
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^hookrelay_spool_events 2$/m);
    vi.stubEnv('HOOKRELAY_DATA_DIR', dataDir);
    vi.stubEnv('DATABASE_URL', stack.db.url);
    vi.stubEnv('REDIS_URL', TEST_REDIS_URL);
    const out: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    try {
      expect(await main(['node', 'hookrelay', 'stats', '--json'])).toBe(0);
    } finally {
      write.mockRestore();
      vi.unstubAllEnvs();
      process.exitCode = undefined;
    }
    expect((JSON.parse(out.join('')) as { spool: { events: number } }).spool.events).toBe(2);
  });
});
