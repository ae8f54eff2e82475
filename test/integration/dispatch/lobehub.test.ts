/**
 * Issue 28: a LobeHub agent runtime switching to hookrelay — the behaviours its own tests rely on
 * (`LH-` prefix): an empty batch does nothing, `hasHooks`, tool-call events without
 * `operationId`, and readable `onError` messages through dispatch and `completeOperation`.
 * Real HTTP receivers on 127.0.0.1, real Postgres for the operation store; nothing mocked.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher, OperationIdMismatchError } from '../../../src/entry/index.ts';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { quietLogger, rejection, toolContext } from '../../unit/dispatch/helpers.ts';

const ALLOW = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"decision":"allow"}' };

describe('LH: LobeHub dispatcher behaviours', () => {
  let rx: Receiver;
  let t: TestStore;
  let ops: OperationStore;
  const dispatchers: HookDispatcher[] = [];
  let n = 0;
  const nextOp = (label: string) => `lh-${label}-${++n}`;
  const make = (extra: ConstructorParameters<typeof HookDispatcher>[0] = {}) => {
    const d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32', logger: quietLogger(), ...extra });
    dispatchers.push(d);
    return d;
  };
  const at = (path: string) => `${rx.url}${path}`;
  const bodiesAt = (path: string) => rx.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body) as Record<string, unknown>);

  beforeAll(async () => {
    rx = await startReceiver((req) => (req.path.startsWith('/control') ? ALLOW : { status: 204 }));
    t = await createTestStore('lh28');
    ops = createOperationStore({ store: t.store });
  });
  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  });
  afterAll(async () => {
    await ops.close();
    await t.cleanup();
    await rx.close();
  });

  it('LH-empty-batch: register(op, []) registers nothing, so the restored hooks passed to a local dispatch are sent (D9)', async () => {
    const d = make();
    const op = nextOp('empty');
    d.register(op, []);
    expect(d.getSerializedHooks(op)).toBeUndefined();
    expect(d.hasHooks(op)).toBe(false);
    const restored = [{ id: 'restored', type: 'onComplete', webhook: { url: at('/empty') } }];
    await d.dispatch(op, 'onComplete', { operationId: op, reason: 'done' }, restored);
    expect(bodiesAt('/empty')).toEqual([expect.objectContaining({ operationId: op, hookId: 'restored', hookType: 'onComplete' })]);
    // An empty batch after a real one appends nothing and keeps the registration.
    d.register(op, [{ id: 'h', type: 'onComplete', handler: () => undefined }]);
    d.register(op, []);
    expect(d.hasHooks(op)).toBe(true);
    // Still validated: something that is not an array is refused.
    expect(() => d.register(op, 'nope' as unknown as [])).toThrow();
  });

  it('LH-hasHooks: false for an unknown or empty operation, true once a hook is registered, false after unregister', () => {
    const d = make();
    const op = nextOp('has');
    expect(d.hasHooks(op)).toBe(false);
    d.register(op, [{ id: 'w', type: 'afterStep', webhook: { url: at('/has') } }]);
    expect(d.hasHooks(op)).toBe(true);
    expect(d.hasHooks(nextOp('other'))).toBe(false);
    d.unregister(op);
    expect(d.hasHooks(op)).toBe(false);
  });

  it('LH-event-without-operationId: dispatchBeforeToolCall fills it from the first argument (mocks work); a different one is OperationIdMismatchError', async () => {
    const d = make();
    const op = nextOp('mock');
    const seen: unknown[] = [];
    d.register(op, [
      {
        id: 'mocker',
        type: 'beforeToolCall',
        handler: (e) => {
          seen.push(e.operationId);
          (e.mock as (result: { content: string; success: boolean }) => boolean)({ content: 'mocked', success: true });
        },
      },
    ]);
    const { operationId: _drop, ...withoutOp } = toolContext({ operationId: op });
    expect(await d.dispatchBeforeToolCall(op, withoutOp)).toEqual({ isMocked: true, result: { content: 'mocked', success: true } });
    expect(seen).toEqual([op]);
    expect(withoutOp).not.toHaveProperty('operationId'); // the caller's event is not mutated
    const mismatch = await rejection(d.dispatchBeforeToolCall(op, { ...withoutOp, operationId: 'someone-else' }));
    expect(mismatch).toBeInstanceOf(OperationIdMismatchError);
    expect(mismatch).toBeInstanceOf(TypeError);
    expect((mismatch as OperationIdMismatchError).code).toBe('HOOKRELAY_OPERATION_ID_MISMATCH');
    expect(seen).toEqual([op]); // no handler ran for the mismatched event
  });

  it('LH-event-without-operationId: evaluateToolCall / evaluateAfterToolCall take the operation id from the first argument; the decision webhook sees it; a mismatch (evaluateToolCall) sends nothing', async () => {
    const d = make();
    const op = nextOp('eval');
    d.register(op, [
      { id: 'pre', type: 'beforeToolCall', webhook: { url: at('/control-pre'), responseHandling: 'toolCall' } },
      { id: 'post', type: 'afterToolCall', webhook: { url: at('/control-post'), responseHandling: 'toolCall' } },
    ]);
    const { operationId: _drop, ...withoutOp } = toolContext({ operationId: op });
    expect(await d.evaluateToolCall(op, withoutOp)).toEqual({ status: 'allow' });
    expect(await d.evaluateAfterToolCall(op, withoutOp, { content: 'r', success: true })).toEqual({ status: 'allow' });
    expect(bodiesAt('/control-pre').map((b) => b.operationId)).toEqual([op]);
    expect(bodiesAt('/control-post').map((b) => b.operationId)).toEqual([op]);
    const before = rx.requests.length;
    expect(await rejection(d.evaluateToolCall(op, { ...withoutOp, operationId: `${op}-x` }))).toBeInstanceOf(OperationIdMismatchError);
    // evaluateAfterToolCall may review another operation's call (P4/L3 deferred rounds), never a non-string id.
    expect(
      await rejection(d.evaluateAfterToolCall(op, { ...withoutOp, operationId: 42 as unknown as string }, { content: 'r', success: true })),
    ).toBeInstanceOf(OperationIdMismatchError);
    expect(await rejection(d.evaluateToolCall('', withoutOp))).toBeInstanceOf(TypeError);
    expect(rx.requests.length).toBe(before);
  });

  it('LH-onError-dispatch: dispatch(op, "onError") derives a readable errorMessage from a provider error; errorDetail is its own field that eventFields can leave out', async () => {
    const d = make();
    const op = nextOp('onerror');
    d.register(op, [
      { id: 'all', type: 'onError', webhook: { url: at('/err-all') } },
      { id: 'msg', type: 'onError', webhook: { url: at('/err-msg'), eventFields: ['operationId', 'errorMessage'] } },
    ]);
    const providerError = { errorType: 'InvalidProviderAPIKey', body: { error: { message: 'Incorrect API key provided', code: 'invalid_api_key' } } };
    await d.dispatch(op, 'onError', { operationId: op, error: providerError });
    const [all] = bodiesAt('/err-all');
    expect(all).toMatchObject({ operationId: op, errorMessage: 'Incorrect API key provided', errorType: 'InvalidProviderAPIKey', errorDetail: providerError });
    expect(all).not.toHaveProperty('error');
    expect(JSON.stringify(all)).not.toContain('[object Object]');
    const [projected] = bodiesAt('/err-msg');
    expect(projected).toMatchObject({ operationId: op, errorMessage: 'Incorrect API key provided', hookId: 'msg', hookType: 'onError' });
    expect(projected).not.toHaveProperty('errorDetail');
    expect(projected).not.toHaveProperty('errorType');
  });

  it('LH-onError-complete: completeOperation({ reason: "error", error }) sends onComplete and onError with a readable errorMessage (an Error wrapping a provider body)', async () => {
    const d = make();
    const op = nextOp('complete');
    const hooks = [
      { id: 'done', type: 'onComplete' as const, webhook: { url: at('/complete') } },
      { id: 'err', type: 'onError' as const, webhook: { url: at('/complete-err') } },
    ];
    await ops.createOperation({ operationId: op, hooks });
    d.register(op, hooks);
    const error = Object.assign(new Error('402 status code'), { status: 402, body: { error: { message: 'Insufficient budget: top up to continue' } } });
    await ops.completeOperation({ operationId: op, reason: 'error', dispatcher: d, error });
    const [onError] = bodiesAt('/complete-err');
    expect(onError).toMatchObject({
      operationId: op,
      errorMessage: 'Insufficient budget: top up to continue',
      errorDetail: { name: 'Error', message: '402 status code', status: 402, body: { error: { message: 'Insufficient budget: top up to continue' } } },
    });
    const [onComplete] = bodiesAt('/complete');
    expect(onComplete).toMatchObject({ reason: 'error', errorMessage: 'Insufficient budget: top up to continue' });
    // A successful completion carries no error fields.
    const ok = nextOp('complete-ok');
    await ops.createOperation({ operationId: ok, hooks });
    d.register(ok, hooks);
    await ops.completeOperation({ operationId: ok, reason: 'done', dispatcher: d });
    const okBody = bodiesAt('/complete').find((b) => b.operationId === ok);
    expect(okBody).toBeDefined();
    expect(okBody).not.toHaveProperty('errorMessage');
  });
});
