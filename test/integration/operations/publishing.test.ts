/**
 * P1–P4: publish once into an empty placeholder, private approval claims, hook decisions
 * apart from tool-owned state. Real Postgres, real receivers.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalNotClaimedError, createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import { PlaceholderNotFoundError } from '../../../src/store/placeholdersRepo.ts';
import type { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import {
  ALLOW,
  body,
  control,
  ctx,
  deny,
  makeDispatcher,
  ofType,
  setEnvHooks,
  sql,
  startReceiver,
  toolResult,
  type Env,
  type Receiver,
  inMode,
  MODES,
  mode,
  settle,
  queuedDeliveries,
} from './helpers.ts';
import { blockedAfterResult } from '../../../src/decide/blockedResult.ts';
/** R5b: the denial of a tool result from `toolResult()` keeps its executionTime (12), as LobeHub does (issue 28). */
const deniedAfter = (reason: string) => blockedAfterResult(reason, { content: '', success: true, executionTime: 12 });

let t: TestStore;
let ops: OperationStore;
let rx: Receiver;
let envR: Receiver;
const dispatchers: HookDispatcher[] = [];
let n = 0;
const nextOp = (label: string) => `p-${label}-${++n}`;

/**
 * The queue-mode worker's environment: it sends environment hooks only from its own environment
 * (E3), so it is configured as the app's is (filled once the receiver listens; read at send time).
 */
const workerEnv: Env = {};

function dispatcher(env: Env = {}): HookDispatcher {
  const d = makeDispatcher(env);
  dispatchers.push(d);
  return d;
}

beforeAll(async () => {
  t = await createTestStore('ops_p');
  ops = createOperationStore({ store: t.store, templateEnv: 'K' }); // SEC-H2: templates are denied unless listed
  rx = await startReceiver(ALLOW);
  envR = await startReceiver({ status: 204 });
  setEnvHooks(workerEnv, `${envR.url}/env`, { events: 'afterHumanIntervention,onStopByHumanIntervention', mode: 'ignore' });
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
  rx.setHandler(ALLOW);
  envR.setHandler({ status: 204 });
});

// Every test in both dispatcher modes (D8, D9): queue mode through a real in-process worker.
describe.each(MODES)('%s mode', (m) => {
  inMode(m, { env: workerEnv });
  afterEach(() => settle()); // queue mode: nothing still on its way into the next test's receivers

  describe('P1/P2 one final write', () => {
    it('P2: 50 concurrent publishes with different results on one placeholder → exactly one applied; all see the same stored result', async () => {
      const op = nextOp('race');
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${rx.url}/p`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const d = dispatcher();
      const outs = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult(`result ${i}`), context: ctx(op, 'c'), dispatcher: d }),
        ),
      );
      expect(outs.filter((o) => o.applied)).toHaveLength(1);
      const winner = outs.find((o) => o.applied)!.result;
      expect(winner.content).toMatch(/^result \d+$/);
      for (const o of outs) expect(o).toEqual(o.applied ? { applied: true, status: 'allow', result: winner } : { applied: false, result: winner });
      const rows = await sql<{ result: unknown; published_at: Date | null }>(
        t.url,
        'SELECT result, published_at FROM deferred_placeholders WHERE operation_id = $1',
        [op],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]!.result).toEqual(winner);
      expect(rows[0]!.published_at).not.toBeNull();
    });

    it('P2: a denial is final — a later allow-path publish gets { applied: false, result: <the denial> }', async () => {
      const op = nextOp('deny-final');
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${rx.url}/p`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const d = dispatcher();
      rx.setHandler(deny('first callback denied'));
      const first = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('raw A'), context: ctx(op, 'c'), dispatcher: d });
      expect(first).toEqual({ applied: true, status: 'blocked', result: deniedAfter('first callback denied') });
      rx.setHandler(ALLOW);
      const later = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('raw B'), context: ctx(op, 'c'), dispatcher: d });
      expect(later).toEqual({ applied: false, result: deniedAfter('first callback denied') });
      expect((await ops.getPlaceholder({ operationId: op, toolCallId: 'c' }))?.result).toEqual(deniedAfter('first callback denied'));
    });

    it('P2: publishing into a placeholder that does not exist fails and creates nothing', async () => {
      const op = nextOp('missing');
      await expect(
        ops.publishDeferredResult({ operationId: op, toolCallId: 'nope', result: toolResult('x'), dispatcher: dispatcher() }),
      ).rejects.toBeInstanceOf(PlaceholderNotFoundError);
      expect(await ops.getPlaceholder({ operationId: op, toolCallId: 'nope' })).toBeUndefined();
    });
  });

  describe('P3 human approval is claimed privately; the runtime publishes', () => {
    async function approvalOperation(label: string): Promise<{ op: string; d: HookDispatcher }> {
      const op = nextOp(label);
      const env: Env = {};
      setEnvHooks(env, `${envR.url}/env`, { events: 'afterHumanIntervention,onStopByHumanIntervention', mode: 'ignore' });
      await ops.createOperation({
        operationId: op,
        hooks: [
          { id: 'human', type: 'afterHumanIntervention', webhook: { url: `${rx.url}/human` } },
          { id: 'stopped', type: 'onStopByHumanIntervention', webhook: { url: `${rx.url}/stopped` } },
          control('policy', `${rx.url}/policy`),
        ],
      });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      return { op, d: dispatcher(env) };
    }

    it('P3: claimApproval records privately — no result, no webhook — and a second claim does not overwrite', async () => {
      const { op } = await approvalOperation('claim');
      const first = await ops.claimApproval({ operationId: op, toolCallId: 'c', decision: { action: 'approve' } });
      expect(first).toEqual({ applied: true, decision: { action: 'approve' } });
      const second = await ops.claimApproval({ operationId: op, toolCallId: 'c', decision: { action: 'reject', rejectionReason: 'changed my mind' } });
      expect(second).toEqual({ applied: false, decision: { action: 'approve' } });
      const stored = await ops.getPlaceholder({ operationId: op, toolCallId: 'c' });
      expect(stored).toEqual({ operationId: op, toolCallId: 'c', result: null, approval: { action: 'approve' }, publishedAt: null });
      await new Promise((r) => setTimeout(r, 100)); // nothing in flight either
      if (mode() === 'queue') expect(await queuedDeliveries(op)).toEqual([]); // …nor recorded for the worker
      expect(rx.requests).toHaveLength(0);
      expect(envR.requests).toHaveLength(0);
    });

    it('P3: publishApproval dispatches afterHumanIntervention; an approval publishes no tool output — the result goes through control after', async () => {
      const { op, d } = await approvalOperation('approve');
      await ops.claimApproval({ operationId: op, toolCallId: 'c', decision: { action: 'approve' } });
      const pub = await ops.publishApproval({ operationId: op, toolCallId: 'c', dispatcher: d });
      expect(pub).toEqual({ decision: { action: 'approve' }, receiptApplied: false, alreadyPublished: false });
      await settle(); // queue mode: the worker has sent it
      const human = ofType(rx, 'afterHumanIntervention');
      expect(human).toHaveLength(1);
      // Publishing the same decision again sends nothing twice.
      expect(await ops.publishApproval({ operationId: op, toolCallId: 'c', dispatcher: d })).toMatchObject({ alreadyPublished: true });
      await settle();
      expect(ofType(rx, 'afterHumanIntervention')).toHaveLength(1);
      if (mode() === 'queue') expect((await queuedDeliveries(op)).map((r) => r.hookId)).toEqual(['human', 'server-env-webhook:afterHumanIntervention']);
      expect(body(human[0]!)).toMatchObject({ operationId: op, action: 'approve', toolCallId: 'c', hookId: 'human' });
      expect(ofType(envR, 'afterHumanIntervention')).toHaveLength(1); // current env hooks too
      expect(ofType(rx, 'onStopByHumanIntervention')).toHaveLength(0);
      expect((await ops.getPlaceholder({ operationId: op, toolCallId: 'c' }))?.result).toBeNull();

      rx.setHandler((req) => (req.path === '/policy' ? deny('approved but withheld') : { status: 204 }));
      const out = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('tool ran'), context: ctx(op, 'c'), dispatcher: d });
      expect(out).toEqual({ applied: true, status: 'blocked', result: deniedAfter('approved but withheld') });
    });

    it('P3: tool output arriving after a claimed reject is never published: the receipt is', async () => {
      const { op, d } = await approvalOperation('reject-late');
      await ops.claimApproval({ operationId: op, toolCallId: 'c', decision: { action: 'reject', rejectionReason: 'not now' } });
      const out = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('raw tool output'),
        context: ctx(op, 'c'),
        dispatcher: d,
      });
      expect(out).toMatchObject({ applied: true, status: 'blocked' });
      expect(out.result).toMatchObject({ content: 'not now', success: false, error: 'user_rejected' });
      expect(JSON.stringify((await ops.getPlaceholder({ operationId: op, toolCallId: 'c' }))?.result)).not.toContain('raw tool output');
    });

    it('P3: publishApproval without a claim throws and dispatches nothing', async () => {
      const { op, d } = await approvalOperation('unclaimed');
      await expect(ops.publishApproval({ operationId: op, toolCallId: 'c', dispatcher: d })).rejects.toBeInstanceOf(ApprovalNotClaimedError);
      expect(rx.requests).toHaveLength(0);
    });

    it('P3: a reject writes a receipt without tool output; a late tool result cannot replace it', async () => {
      const { op, d } = await approvalOperation('reject');
      await ops.claimApproval({ operationId: op, toolCallId: 'c', decision: { action: 'reject', rejectionReason: 'too risky' } });
      expect((await ops.getPlaceholder({ operationId: op, toolCallId: 'c' }))?.result).toBeNull(); // still private
      const pub = await ops.publishApproval({ operationId: op, toolCallId: 'c', dispatcher: d });
      expect(pub.receiptApplied).toBe(true);
      await settle(); // queue mode: the worker has sent the notifications
      const receipt = (await ops.getPlaceholder({ operationId: op, toolCallId: 'c' }))?.result as Record<string, unknown>;
      expect(receipt).toMatchObject({ content: 'too risky', success: false });
      expect(body(ofType(rx, 'afterHumanIntervention')[0]!)).toMatchObject({ action: 'reject', rejectionReason: 'too risky' });

      const late = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('SECRET TOOL OUTPUT'),
        context: ctx(op, 'c'),
        dispatcher: d,
      });
      expect(late.applied).toBe(false);
      expect(late.result).toEqual(receipt);
      const [row] = await sql<{ text: string }>(t.url, 'SELECT p::text AS text FROM deferred_placeholders p WHERE operation_id = $1', [op]);
      expect(row!.text).not.toContain('SECRET TOOL OUTPUT');
    });

    it('P3: a stop writes a receipt and also dispatches onStopByHumanIntervention', async () => {
      const { op, d } = await approvalOperation('stop');
      await ops.claimApproval({ operationId: op, toolCallId: 'c', decision: { action: 'stop' } });
      const pub = await ops.publishApproval({ operationId: op, toolCallId: 'c', dispatcher: d });
      expect(pub.receiptApplied).toBe(true);
      await settle(); // queue mode: the worker has sent the notifications
      expect(ofType(rx, 'afterHumanIntervention')).toHaveLength(1);
      expect(body(ofType(rx, 'onStopByHumanIntervention')[0]!)).toMatchObject({ operationId: op, toolCallId: 'c', hookId: 'stopped' });
      expect(ofType(envR, 'onStopByHumanIntervention')).toHaveLength(1);
      expect((await ops.getPlaceholder({ operationId: op, toolCallId: 'c' }))?.result).toMatchObject({ success: false });
    });
  });

  describe('P4 hook decisions apart from tool-owned state; hooks through the intervention operation', () => {
    it("P4: a tool's own state.type 'blocked' is stored as given and the call reports 'allow' (not a hook denial)", async () => {
      const op = nextOp('tool-blocked');
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${rx.url}/p`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const own = { content: 'quota exceeded', success: false, error: 'quota', state: { type: 'blocked', reason: 'quota' } };
      const out = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: own, context: ctx(op, 'c'), dispatcher: dispatcher() });
      expect(out).toEqual({ applied: true, status: 'allow', result: own });
      expect(rx.requests).toHaveLength(1); // the control allowed it; the tool's state is not its verdict
      const stored = await ops.getPlaceholder({ operationId: op, toolCallId: 'c' });
      expect(stored).toMatchObject({ result: own });
    });

    it('P4: the caller hooks of the intervention operation govern a deferred result of another operation', async () => {
      const intervention = nextOp('intervention');
      const callback = nextOp('callback'); // the deferred callback's operation: no record, no hooks of its own
      await ops.createOperation({ operationId: intervention, hooks: [control('origin-policy', `${rx.url}/origin`)] });
      await ops.createPlaceholder({ operationId: callback, toolCallId: 'c1' });
      await ops.createPlaceholder({ operationId: callback, toolCallId: 'c2' });
      rx.setHandler(deny('origin says no'));
      const d = dispatcher();
      const governed = await ops.publishDeferredResult({
        operationId: callback,
        toolCallId: 'c1',
        result: toolResult('raw'),
        context: ctx(callback, 'c1'),
        interventionOperationId: intervention,
        dispatcher: d,
      });
      expect(governed).toEqual({ applied: true, status: 'blocked', result: deniedAfter('origin says no') });
      expect(body(rx.requests[0]!)).toMatchObject({ hookId: 'origin-policy', toolCallId: 'c1' });
      // Without the intervention id nothing governs the callback's operation.
      const ungoverned = await ops.publishDeferredResult({ operationId: callback, toolCallId: 'c2', result: toolResult('raw'), dispatcher: d });
      expect(ungoverned).toEqual({ applied: true, status: 'allow', result: toolResult('raw') });
      expect(rx.requests).toHaveLength(1);
    });
  });

  describe('T3 the rebuilt call carries the runtime account', () => {
    it("T3/P4: a callback without userId gets the operation owner's userId in the control payload; a given one is kept", async () => {
      const owner = nextOp('owner');
      await ops.createOperation({ operationId: owner, userId: 'owner-1', hooks: [control('policy', `${rx.url}/p`)] });
      await ops.createPlaceholder({ operationId: owner, toolCallId: 'c1' });
      await ops.createPlaceholder({ operationId: owner, toolCallId: 'c2' });
      const d = dispatcher();
      await ops.publishDeferredResult({ operationId: owner, toolCallId: 'c1', result: toolResult('r'), context: ctx(owner, 'c1'), dispatcher: d });
      await ops.publishDeferredResult({
        operationId: owner,
        toolCallId: 'c2',
        result: toolResult('r'),
        context: ctx(owner, 'c2', { userId: 'runtime-user' }),
        dispatcher: d,
      });
      expect(rx.requests.map((r) => [body(r).toolCallId, body(r).userId])).toEqual([
        ['c1', 'owner-1'],
        ['c2', 'runtime-user'],
      ]);
    });
  });

  describe('L2/D9 operation records', () => {
    it('L2: createOperation persists webhook hooks in order, templates unresolved; handlers are not persisted (D3)', async () => {
      const op = nextOp('record');
      await ops.createOperation({
        operationId: op,
        parentOperationId: 'parent-1',
        userId: 'user-1',
        hooks: [
          { id: 'h1', type: 'onComplete', handler: () => undefined },
          { id: 'w1', type: 'onComplete', handler: () => undefined, webhook: { url: `${rx.url}/w1`, headers: { 'x-k': '${K}' }, allowedEnvVars: ['K'] } },
          control('c1', `${rx.url}/c1`, { matcher: '^search/' }),
        ],
      });
      const record = await ops.getOperation(op);
      expect(record).toMatchObject({ id: op, parentOperationId: 'parent-1', userId: 'user-1', status: 'running' });
      const hooks = await ops.loadHooks(op);
      expect(hooks?.map((h) => h.id)).toEqual(['w1', 'c1']);
      expect(hooks?.[0]?.webhook.headers).toEqual({ 'x-k': '${K}' });
      expect(hooks?.[1]?.matcher).toBe('^search/');
    });

    it('L2: a retried createOperation is harmless — hooks are not stored (and run) twice', async () => {
      const op = nextOp('retry-create');
      const hooks = [control('once', `${rx.url}/once`)];
      await ops.createOperation({ operationId: op, hooks });
      await ops.createOperation({ operationId: op, hooks });
      await Promise.all([ops.createOperation({ operationId: op, hooks }), ops.createOperation({ operationId: op, hooks })]);
      expect((await ops.loadHooks(op))?.map((h) => h.id)).toEqual(['once']);
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('r'), context: ctx(op, 'c'), dispatcher: dispatcher() });
      expect(rx.requests).toHaveLength(1);
    });

    it('D9: a later createOperation for the same id with a different hook under an existing id is rejected, nothing changes', async () => {
      const op = nextOp('conflict');
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${rx.url}/v1`)] });
      await expect(ops.createOperation({ operationId: op, hooks: [control('policy', `${rx.url}/v2`)] })).rejects.toThrow(/policy/);
      const stored = await ops.loadHooks(op);
      expect(stored?.map((h) => h.webhook.url)).toEqual([`${rx.url}/v1`]);
    });
  });
});
