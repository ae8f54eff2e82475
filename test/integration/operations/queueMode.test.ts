/**
 * The operation store on a queue-mode dispatcher, through a real in-process worker (D8, D9, D9a,
 * P5): an operation with nothing stored runs its in-memory hooks — onComplete / onError,
 * afterHumanIntervention and result controls — and a stored list wins over memory (D9).
 * Real Redis, Postgres, BullMQ worker and HTTP receivers on 127.0.0.1.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import type { AgentHook } from '../../../src/contract/hook.ts';
import { createStack, waitFor, type Stack } from '../queue/harness.ts';
import { body, CLOSED_URL, control, ctx, deny, ofType, silentLogger, sql, startReceiver, toolResult, type Receiver } from './helpers.ts';

let stack: Stack;
let ops: OperationStore;
let rx: Receiver;
let controlRx: Receiver;
const dispatchers: HookDispatcher[] = [];
let n = 0;
const nextOp = (label: string) => `lhq-${label}-${++n}`;

function queueDispatcher(): HookDispatcher {
  const d = new HookDispatcher({ mode: 'queue', producer: stack.producer, env: {}, allowedCidrs: '127.0.0.1/32', logger: silentLogger });
  dispatchers.push(d);
  return d;
}

async function ledgerHookIds(op: string): Promise<string[]> {
  const rows = await sql<{ hook_id: string }>(stack.db.url, 'SELECT hook_id FROM deliveries WHERE operation_id = $1 ORDER BY hook_id', [op]);
  return rows.map((r) => r.hook_id);
}

beforeAll(async () => {
  stack = await createStack('lhq');
  await stack.startWorker();
  ops = createOperationStore({ databaseUrl: stack.db.url });
  rx = await startReceiver({ status: 204 });
  controlRx = await startReceiver(deny('secret output'));
});

afterAll(async () => {
  await ops?.close();
  await Promise.all(dispatchers.map((d) => d.close()));
  await rx?.close();
  await controlRx?.close();
  await stack?.cleanup();
});

beforeEach(() => {
  rx.requests.length = 0;
  controlRx.requests.length = 0;
});

describe('LH-Q queue mode: an operation with nothing stored never hides its in-memory hooks (D9, D9a)', () => {
  it('LH-Q1 D9a: completeOperation delivers the in-memory onComplete (and onError) webhooks of an operation with nothing stored, through the worker', async () => {
    const op = nextOp('complete');
    await ops.createOperation({ operationId: op, userId: 'u-1' }); // a record, no stored hooks
    expect(await ops.loadHooks(op)).toBeUndefined();
    const d = queueDispatcher();
    const hooks: AgentHook[] = [
      { id: 'complete', type: 'onComplete', webhook: { url: `${rx.url}/complete` } },
      { id: 'error', type: 'onError', webhook: { url: `${rx.url}/error` } },
    ];
    d.register(op, hooks);
    await ops.completeOperation({ operationId: op, reason: 'error', dispatcher: d, event: { errorMessage: 'model failed' } });
    // D8: queue-mode dispatch resolves once each delivery is recorded: the rows are there now.
    expect(await ledgerHookIds(op)).toEqual(['complete', 'error']);
    await waitFor(() => rx.requests.length === 2, 10_000, 'both terminal webhooks delivered by the worker');
    expect(body(ofType(rx, 'onComplete')[0]!)).toMatchObject({ operationId: op, reason: 'error', userId: 'u-1' });
    expect(body(ofType(rx, 'onError')[0]!)).toMatchObject({ operationId: op, errorMessage: 'model failed' });
    expect(d.getSerializedHooks(op)).toBeUndefined(); // unregistered after
  });

  it('LH-Q1 D9: a stored list wins over the in-memory registration in queue mode', async () => {
    const op = nextOp('stored-wins');
    await ops.createOperation({ operationId: op, hooks: [{ id: 'stored', type: 'onComplete', webhook: { url: `${rx.url}/stored` } }] });
    const d = queueDispatcher();
    d.register(op, [{ id: 'memory', type: 'onComplete', webhook: { url: `${rx.url}/memory` } }]);
    await ops.completeOperation({ operationId: op, reason: 'done', dispatcher: d });
    expect(await ledgerHookIds(op)).toEqual(['stored']);
    await waitFor(() => rx.requests.length === 1, 10_000, 'the stored onComplete delivered');
    expect(rx.requests[0]!.path).toBe('/stored');
  });

  it('LH-Q1 D9a: publishApproval keeps the in-memory afterHumanIntervention and onStopByHumanIntervention webhooks of an operation with nothing stored', async () => {
    const op = nextOp('approval');
    const d = queueDispatcher();
    d.register(op, [
      { id: 'human', type: 'afterHumanIntervention', webhook: { url: `${rx.url}/human` } },
      { id: 'stopped', type: 'onStopByHumanIntervention', webhook: { url: `${rx.url}/stopped` } },
    ]);
    await ops.createPlaceholder({ operationId: op, toolCallId: 'call-1' });
    await ops.claimApproval({ operationId: op, toolCallId: 'call-1', decision: { action: 'stop', rejectionReason: 'not now' } });
    const out = await ops.publishApproval({ operationId: op, toolCallId: 'call-1', dispatcher: d });
    expect(out).toMatchObject({ receiptApplied: true, alreadyPublished: false });
    expect(await ledgerHookIds(op)).toEqual(['human', 'stopped']);
    await waitFor(() => rx.requests.length === 2, 10_000, 'both approval webhooks delivered by the worker');
    expect(body(ofType(rx, 'afterHumanIntervention')[0]!)).toMatchObject({ operationId: op, action: 'stop', toolCallId: 'call-1', rejectionReason: 'not now' });
  });

  it('LH-Q1 P5/R5: publishDeferredResult asks the in-memory result control (nothing stored) and applies its deny', async () => {
    const op = nextOp('deny');
    const d = queueDispatcher();
    d.register(op, [control('review', `${controlRx.url}/review`)]);
    await ops.createPlaceholder({ operationId: op, toolCallId: 'call-1' });
    const out = await ops.publishDeferredResult({
      operationId: op,
      toolCallId: 'call-1',
      result: toolResult('raw output'),
      context: ctx(op, 'call-1'),
      dispatcher: d,
    });
    expect(controlRx.requests).toHaveLength(1); // the counted control was asked
    expect(out).toMatchObject({ applied: true, status: 'blocked', result: { success: false, error: 'hook_denied', content: 'secret output' } });
    const stored = await ops.getPlaceholder({ operationId: op, toolCallId: 'call-1' });
    expect(JSON.stringify(stored?.result)).not.toContain('raw output');
  });

  it("LH-Q1 P5/R5: an in-memory result control with a dead URL and onError 'block' blocks the deferred result (never stored as allowed)", async () => {
    const op = nextOp('dead');
    const d = queueDispatcher();
    d.register(op, [control('review', CLOSED_URL, { onError: 'block' })]);
    await ops.createPlaceholder({ operationId: op, toolCallId: 'call-1' });
    const out = await ops.publishDeferredResult({
      operationId: op,
      toolCallId: 'call-1',
      result: toolResult('raw output'),
      context: ctx(op, 'call-1'),
      dispatcher: d,
    });
    expect(out).toMatchObject({ applied: true, status: 'blocked', result: { success: false, error: 'hook_denied', content: 'hook_control_error' } });
    const stored = await ops.getPlaceholder({ operationId: op, toolCallId: 'call-1' });
    expect(stored?.result).toMatchObject({ success: false, state: { type: 'blocked' } });
  });

  it('LH-Q1 D9: a stored hook list (no control) wins over an in-memory control in queue mode — the control is neither counted nor asked', async () => {
    const op = nextOp('stored-no-control');
    await ops.createOperation({ operationId: op, hooks: [{ id: 'note', type: 'onComplete', webhook: { url: `${rx.url}/note` } }] });
    const d = queueDispatcher();
    d.register(op, [control('review', `${controlRx.url}/review`)]);
    await ops.createPlaceholder({ operationId: op, toolCallId: 'call-1' });
    const out = await ops.publishDeferredResult({
      operationId: op,
      toolCallId: 'call-1',
      result: toolResult('raw output'),
      context: ctx(op, 'call-1'),
      dispatcher: d,
    });
    expect(out).toMatchObject({ applied: true, status: 'allow', result: { content: 'raw output' } });
    expect(controlRx.requests).toHaveLength(0);
  });

  it('LH-Q1 P5: a dispatcher port that cannot say which hooks it runs gets the result blocked, not allowed', async () => {
    const op = nextOp('no-port');
    const d = queueDispatcher();
    await ops.createPlaceholder({ operationId: op, toolCallId: 'call-1' });
    const port = { ...portOf(d), resolveCallerHooks: undefined } as unknown as HookDispatcher;
    const out = await ops.publishDeferredResult({
      operationId: op,
      toolCallId: 'call-1',
      result: toolResult('raw output'),
      context: ctx(op, 'call-1'),
      dispatcher: port,
    });
    expect(out).toMatchObject({ applied: true, status: 'blocked', result: { success: false, content: 'hook_control_error' } });
  });
});

/** The operation-store port of a dispatcher as a plain object (a JavaScript caller's own port). */
function portOf(d: HookDispatcher) {
  return {
    intercepts: d.intercepts,
    environmentHooks: () => d.environmentHooks(),
    getSerializedHooks: (op: string) => d.getSerializedHooks(op),
    evaluateAfterToolCall: d.evaluateAfterToolCall.bind(d),
    dispatch: d.dispatch.bind(d),
    unregister: d.unregister.bind(d),
  };
}
