/**
 * Queue mode records what it can (D5, D8): a hook the app's producer refuses (a header template
 * HOOKRELAY_TEMPLATE_ENV does not list, W2) is logged and skipped on its own, as local mode skips
 * it at send time; its siblings of the same dispatch are still recorded and delivered. Real Redis,
 * Postgres, BullMQ worker and HTTP receivers on 127.0.0.1.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import { CriticalHookDeliveryError, HookConfigError } from '../../../src/contract/errors.ts';
import type { AgentHook } from '../../../src/contract/hook.ts';
import type { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { body, inMode, makeDispatcher, MODES, mode, queuedDeliveries, settle, startReceiver, type Receiver } from './helpers.ts';

let t: TestStore;
let ops: OperationStore;
let rx: Receiver;
const dispatchers: HookDispatcher[] = [];
let n = 0;
const nextOp = (label: string) => `rec-${label}-${++n}`;

beforeAll(async () => {
  t = await createTestStore('ops_rec');
  // The operation store lists K (so the hook is stored); the dispatcher side does not (W2).
  ops = createOperationStore({ databaseUrl: t.url, templateEnv: 'K' });
  rx = await startReceiver({ status: 204 });
});

afterAll(async () => {
  await ops?.close();
  await Promise.all(dispatchers.map((d) => d.close()));
  await rx?.close();
  await t?.cleanup();
});

beforeEach(() => {
  rx.requests.length = 0;
});

const templated = (id: string, fallback?: 'none'): AgentHook => ({
  id,
  type: 'onComplete',
  webhook: { url: `${rx.url}/${id}`, headers: { 'x-k': '${K}' }, allowedEnvVars: ['K'], ...(fallback ? { fallback } : {}) },
});
const plain = (id: string): AgentHook => ({ id, type: 'onComplete', webhook: { url: `${rx.url}/${id}` } });

describe.each(MODES)('%s mode', (m) => {
  inMode(m); // neither the dispatcher, its producer nor the worker lists K
  afterEach(() => settle());

  it('LH-Q-refused D5/D8: a stored hook whose template is not listed is skipped alone; the siblings of the same dispatch are delivered', async () => {
    const op = nextOp('sibling');
    await ops.createOperation({ operationId: op, hooks: [plain('before'), templated('refused'), plain('after')] });
    const d = makeDispatcher({ K: 'secret-k' });
    dispatchers.push(d);
    await ops.completeOperation({ operationId: op, reason: 'done', dispatcher: d });
    await settle();
    expect(rx.requests.map((r) => r.path).sort()).toEqual(['/after', '/before']);
    expect(rx.requests.every((r) => body(r).hookType === 'onComplete')).toBe(true);
    if (mode() === 'queue')
      expect((await queuedDeliveries(op)).map((r) => [r.hookId, r.status])).toEqual([
        ['before', 'delivered'],
        ['after', 'delivered'],
      ]);
  });

  it('LH-Q-refused D6: a refused fallback:none hook is a critical failure naming it; its siblings are still delivered', async () => {
    const op = nextOp('critical');
    await ops.createOperation({ operationId: op, hooks: [plain('before'), templated('refused', 'none')] });
    const d = makeDispatcher({ K: 'secret-k' });
    dispatchers.push(d);
    const error = await ops.completeOperation({ operationId: op, reason: 'done', dispatcher: d }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect((error as CriticalHookDeliveryError).hookId).toBe('refused');
    if (mode() === 'queue') expect((error as CriticalHookDeliveryError).failures[0]?.cause).toBeInstanceOf(HookConfigError);
    await settle();
    expect(rx.requests.map((r) => r.path)).toEqual(['/before']);
  });
});
