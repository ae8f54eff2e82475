/**
 * Terminal lifecycle through `completeOperation` (D2, D6; LobeHub's terminal hooks):
 * persist first, then onComplete (and onError only for reason 'error'), rethrow critical, then
 * unregister — except for 'parked'. Real Postgres, real receivers.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import { CriticalHookDeliveryError } from '../../../src/contract/errors.ts';
import type { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import type { AgentHook } from '../../../src/contract/hook.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import {
  body,
  CLOSED_URL,
  criticalFlag,
  makeDispatcher,
  ofType,
  queuedDeliveries,
  setEnvHooks,
  sql,
  startReceiver,
  type Env,
  type Receiver,
  inMode,
  MODES,
  mode,
  settle,
} from './helpers.ts';

let t: TestStore;
let ops: OperationStore;
let rx: Receiver;
let envR: Receiver;
const dispatchers: HookDispatcher[] = [];
let n = 0;
const nextOp = (label: string) => `d-${label}-${++n}`;

function dispatcher(env: Env = {}): HookDispatcher {
  const d = makeDispatcher(env);
  dispatchers.push(d);
  return d;
}

const terminalHooks = (): AgentHook[] => [
  { id: 'complete', type: 'onComplete', webhook: { url: `${rx.url}/complete` } },
  { id: 'error', type: 'onError', webhook: { url: `${rx.url}/error` } },
];

/** A running operation: record + persisted hooks, and registered in the runtime's dispatcher. */
async function running(label: string, hooks: AgentHook[] = terminalHooks(), env: Env = {}) {
  const op = nextOp(label);
  await ops.createOperation({ operationId: op, userId: 'user-7', hooks });
  const d = dispatcher(env);
  d.register(op, hooks);
  return { op, d };
}

/**
 * The queue-mode worker's environment: it sends environment hooks only from its own environment
 * (E3), so it is configured as the app's is (filled once the receiver listens; read at send time).
 */
const workerEnv: Env = {};

async function operationRow(op: string) {
  const [row] = await sql<{ status: string; completion_reason: string | null; completed_at: Date | null }>(
    t.url,
    'SELECT status, completion_reason, completed_at FROM operations WHERE id = $1',
    [op],
  );
  return row;
}

beforeAll(async () => {
  t = await createTestStore('ops_d');
  ops = createOperationStore({ databaseUrl: t.url });
  rx = await startReceiver({ status: 204 });
  envR = await startReceiver({ status: 204 });
  setEnvHooks(workerEnv, `${envR.url}/env`, { events: 'onComplete', mode: 'ignore' });
});

afterAll(async () => {
  await ops?.close();
  await Promise.all(dispatchers.map((d) => d.close()));
  await rx?.close();
  await envR?.close();
  await t?.cleanup();
});

beforeEach(() => {
  rx.requests.length = 0;
  envR.requests.length = 0;
  rx.setHandler({ status: 204 });
});

// Every test in both dispatcher modes (D8, D9): queue mode through a real in-process worker.
describe.each(MODES)('%s mode', (m) => {
  inMode(m, { env: workerEnv });
  afterEach(() => settle()); // queue mode: nothing still on its way into the next test's receivers

  describe('D2/D6 completeOperation', () => {
    it("D2: persists first, then dispatches onComplete (not onError) for 'done', then unregisters", async () => {
      const { op, d } = await running('done');
      let statusSeenByHook: string | undefined;
      rx.setHandler(async () => {
        statusSeenByHook = (await operationRow(op))?.status;
        return { status: 204 };
      });
      await ops.completeOperation({ operationId: op, reason: 'done', dispatcher: d, event: { lastAssistantContent: 'bye' } });
      await settle(); // queue mode: the worker has sent it
      expect(statusSeenByHook).toBe('completed'); // the record was written before the hook ran
      expect(await operationRow(op)).toMatchObject({ status: 'completed', completion_reason: 'done' });
      expect(rx.requests.map((r) => r.path)).toEqual(['/complete']);
      expect(body(rx.requests[0]!)).toMatchObject({ operationId: op, reason: 'done', userId: 'user-7', hookType: 'onComplete', lastAssistantContent: 'bye' });
      expect(d.getSerializedHooks(op)).toBeUndefined();
    });

    it("D2: reason 'error' dispatches onComplete then onError", async () => {
      const { op, d } = await running('error');
      await ops.completeOperation({ operationId: op, reason: 'error', dispatcher: d, event: { errorMessage: 'model failed' } });
      await settle();
      if (mode() === 'local') expect(rx.requests.map((r) => body(r).hookType)).toEqual(['onComplete', 'onError']);
      else {
        // Queue mode: recorded in that order, delivered unordered (Q1) — each exactly once.
        expect((await queuedDeliveries(op)).map((r) => [r.hookId, r.status])).toEqual([
          ['complete', 'delivered'],
          ['error', 'delivered'],
        ]);
        expect(rx.requests.map((r) => body(r).hookType).sort()).toEqual(['onComplete', 'onError']);
      }
      expect(body(ofType(rx, 'onError')[0]!)).toMatchObject({ operationId: op, errorMessage: 'model failed' });
      expect(await operationRow(op)).toMatchObject({ status: 'error', completion_reason: 'error' });
      expect(d.getSerializedHooks(op)).toBeUndefined();
    });

    it("D6: a fallback 'none' webhook that fails is rethrown as CriticalHookDeliveryError after its siblings ran (queue mode, D8: recorded, so no throw — the worker flags the operation); the record is persisted and the registration removed", async () => {
      const hooks: AgentHook[] = [{ id: 'critical', type: 'onComplete', webhook: { url: CLOSED_URL, fallback: 'none' } }, ...terminalHooks()];
      const { op, d } = await running('critical', hooks);
      const error = await ops.completeOperation({ operationId: op, reason: 'error', dispatcher: d }).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (mode() === 'local') {
        expect(error).toBeInstanceOf(CriticalHookDeliveryError);
        expect((error as CriticalHookDeliveryError).hookId).toBe('critical');
      } else {
        // D8: queue-mode dispatch throws only when a delivery could not be recorded; every one was.
        expect(error).toBeUndefined();
        await settle();
        const rows = await queuedDeliveries(op);
        expect(rows.map((r) => [r.hookId, r.status])).toEqual([
          ['critical', 'failed'],
          ['complete', 'delivered'],
          ['error', 'delivered'],
        ]);
        expect(rows[0]!.lastErrorClass).not.toBeNull();
        expect(await criticalFlag(op)).toBe(true); // the failure flags the operation instead (D8, Q4)
      }
      expect(await operationRow(op)).toMatchObject({ status: 'error', completion_reason: 'error' }); // persisted even though the hook threw
      expect(rx.requests.map((r) => body(r).hookType).sort()).toEqual(['onComplete', 'onError']); // siblings and onError still ran
      if (mode() === 'local') expect(rx.requests.map((r) => body(r).hookType)).toEqual(['onComplete', 'onError']);
      expect(d.getSerializedHooks(op)).toBeUndefined();
    });

    it("D2: reason 'parked' persists the state, dispatches nothing and keeps the registration; the later completion fires", async () => {
      const { op, d } = await running('parked');
      await ops.completeOperation({ operationId: op, reason: 'parked', dispatcher: d });
      await new Promise((r) => setTimeout(r, 100));
      expect(rx.requests).toHaveLength(0);
      if (mode() === 'queue') expect(await queuedDeliveries(op)).toEqual([]); // nothing recorded for the worker either
      expect(await operationRow(op)).toMatchObject({ status: 'parked', completion_reason: 'parked' });
      expect(d.getSerializedHooks(op)?.map((h) => h.id)).toEqual(['complete', 'error']);

      await ops.completeOperation({ operationId: op, reason: 'done', dispatcher: d });
      await settle();
      expect(rx.requests.map((r) => r.path)).toEqual(['/complete']);
      expect(d.getSerializedHooks(op)).toBeUndefined();
    });

    it('L2/L1: after a restart the persisted terminal hooks fire; the current environment hooks run once, last', async () => {
      const op = nextOp('restart');
      await ops.createOperation({ operationId: op, hooks: terminalHooks() });
      const env: Env = {};
      setEnvHooks(env, `${envR.url}/env`, { events: 'onComplete', mode: 'ignore' });
      const order: string[] = [];
      rx.setHandler((req) => (order.push(req.path), { status: 204 }));
      envR.setHandler((req) => (order.push(`env${req.path}`), { status: 204 }));
      const fresh = createOperationStore({ databaseUrl: t.url });
      try {
        await fresh.completeOperation({ operationId: op, reason: 'max_steps', dispatcher: dispatcher(env) });
      } finally {
        await fresh.close();
      }
      await settle();
      if (mode() === 'local') expect(order).toEqual(['/complete', 'env/env']);
      else {
        // Queue mode: recorded last (E4), delivered unordered (Q1) by the worker from its own environment (E3) — each once.
        expect((await queuedDeliveries(op)).map((r) => [r.hookId, r.status])).toEqual([
          ['complete', 'delivered'],
          ['server-env-webhook:onComplete', 'delivered'],
        ]);
        expect([...order].sort()).toEqual(['/complete', 'env/env']);
      }
      expect(ofType(envR, 'onComplete')[0]?.headers.authorization).toBe('Bearer env-token');
      expect(body(ofType(envR, 'onComplete')[0]!)).toMatchObject({ hookId: 'server-env-webhook:onComplete', reason: 'max_steps' });
      expect(await operationRow(op)).toMatchObject({ status: 'completed', completion_reason: 'max_steps' });
    });

    it('D2: completing an operation that was never created still records it (created if missing) and runs the environment hooks', async () => {
      const op = nextOp('uncreated');
      const env: Env = {};
      setEnvHooks(env, `${envR.url}/env`, { events: 'onComplete', mode: 'ignore' });
      await ops.completeOperation({ operationId: op, reason: 'interrupted', dispatcher: dispatcher(env) });
      await settle();
      expect(await operationRow(op)).toMatchObject({ status: 'interrupted', completion_reason: 'interrupted' });
      expect(envR.requests).toHaveLength(1);
      expect(body(envR.requests[0]!)).toMatchObject({ hookId: 'server-env-webhook:onComplete', operationId: op, reason: 'interrupted' });
    });
  });
});
