/**
 * Issue 28: the last seed-003 deviations, each through the run adapter (`createAgentHooks`) and
 * through the dispatcher tool seam (`HookDispatcher({ emitter, interceptionPoints })`):
 * an incomplete enforcement boundary is refused, sessions are unique per run (running an
 * operation twice and restarting store every record), `end()` after an error or abort, every
 * allowed pre_tool_call gets its post_tool_call, a deferred result is judged once, a tool call
 * after unregister opens no session, a denied result keeps executionTime.
 * Real Postgres (record sink, operation store), real decision webhooks on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher, type HookDispatcherOptions } from '../../../src/dispatch/hookDispatcher.ts';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import {
  AgentHooksInstallError,
  AgentRunStateError,
  createAgentHooks,
  InterceptionEmitter,
  Verdict,
  type AgentContext,
  type Interceptor,
  type InterceptionEmitterOptions,
} from '../../../src/intercept/index.ts';
import { createStoreRecordSink } from '../../../src/store/interceptionRecordSink.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import type { ToolCallHookContext } from '../../../src/contract/toolContext.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';

type Seen = { point: string; session: string; summary?: string; isError?: boolean; value?: unknown };

function recorder(decide: (c: AgentContext) => Verdict = () => Verdict.allow()) {
  const seen: Seen[] = [];
  const intercept: Interceptor = (c) => {
    const x = c as { summary?: { reason?: string }; tool_result?: { is_error: boolean; value: unknown } };
    seen.push({
      point: c.interception_point,
      session: c.session.id,
      ...(x.summary ? { summary: x.summary.reason } : {}),
      ...(x.tool_result ? { isError: x.tool_result.is_error, value: x.tool_result.value } : {}),
    });
    return decide(c);
  };
  return { seen, intercept, points: (session?: string) => seen.filter((s) => session === undefined || s.session === session).map((s) => s.point) };
}

const call = (operationId: string, toolCallId = 'call-1'): ToolCallHookContext => ({
  toolCallId,
  assistantMessageId: 'msg-1',
  identifier: 'search',
  apiName: 'web',
  args: { q: 'x' },
  callIndex: 0,
  stepIndex: 0,
  operationId,
  executor: 'server',
});
const JSON_HEADERS = { 'content-type': 'application/json' };

describe('interception lifecycle through the run adapter and the tool seam (issue 28)', () => {
  let t: TestStore;
  let ops: OperationStore;
  let rx: Receiver;
  const dispatchers: HookDispatcher[] = [];
  let n = 0;
  const nextOp = (label: string) => `s3-${label}-${++n}`;

  beforeAll(async () => {
    t = await createTestStore('icpt_lifecycle');
    ops = createOperationStore({ store: t.store });
    rx = await startReceiver((req) => ({
      status: 200,
      headers: JSON_HEADERS,
      body: req.path.startsWith('/deny') ? '{"decision":"deny","reason":"webhook says no"}' : '{"decision":"allow"}',
    }));
  });
  afterAll(async () => {
    await Promise.all(dispatchers.map((d) => d.close()));
    await ops.close();
    await rx.close();
    await t.cleanup();
  });

  const make = (extra: Partial<HookDispatcherOptions> = {}) => {
    const d = new HookDispatcher({ allowedCidrs: '127.0.0.1/32', env: {}, logger: silentLogger(), ...extra });
    dispatchers.push(d);
    return d;
  };
  const seam = (intercept: Interceptor, extra: Partial<InterceptionEmitterOptions> = {}) =>
    make({ emitter: new InterceptionEmitter({ interceptors: [intercept], ...extra }), interceptionPoints: 'tool-seam' });
  const storeSink = () => {
    const s = createStoreRecordSink(t.store.db);
    return { recordSink: s.sink, sequenceProvider: s.sequenceProvider };
  };
  const storeSinkNoProvider = () => ({ recordSink: createStoreRecordSink(t.store.db).sink });
  const rowsLike = async (prefix: string) =>
    (
      await t.store.pool!.query<{ session_id: string; sequence: number; point: string }>(
        "select session_id, sequence, point from interception_records where session_id like $1 || '/%' order by session_id, sequence",
        [prefix],
      )
    ).rows;
  const control = (id: string, path: string, type: 'beforeToolCall' | 'afterToolCall' = 'beforeToolCall') => ({
    id,
    type,
    webhook: { url: `${rx.url}${path}`, responseHandling: 'toolCall' as const },
  });

  describe('S3-install: an incomplete enforcement boundary is never configured by mistake', () => {
    it('S3-install (dispatcher): an emitter without the run adapter is refused, naming the missing points; interceptionPoints "tool-seam" acknowledges it', () => {
      const emitter = new InterceptionEmitter({ interceptors: [() => Verdict.allow()] });
      let error: unknown;
      try {
        new HookDispatcher({ emitter, env: {}, logger: silentLogger() });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(AgentHooksInstallError);
      expect((error as AgentHooksInstallError).missing).toEqual(['input', 'pre_model_call', 'post_model_call', 'output']);
      expect((error as Error).message).toMatch(/interceptionPoints: 'tool-seam'/);
      expect((error as Error).message).toMatch(/createAgentHooks/);
      expect(() => new HookDispatcher({ env: {}, interceptionPoints: 'all' as 'tool-seam' })).toThrow(/interceptionPoints/);
      expect(make({ emitter, interceptionPoints: 'tool-seam' }).intercepts).toBe(true);
    });

    it('S3-install (adapter): the run adapter installed on a plain dispatcher needs no acknowledgement (it emits all eight points)', async () => {
      const r = recorder();
      const d = make();
      const hooks = createAgentHooks({ interceptors: [r.intercept], dispatcher: d });
      const run = hooks.startRun({ input: 'hi', operationId: nextOp('adapter') });
      await run.output('bye');
      await run.end();
      expect(r.points()).toEqual(['agent_startup', 'input', 'output', 'agent_shutdown']);
    });
  });

  describe('S3-sessions: one session per run; the record store takes every run', () => {
    it('S3-sessions (dispatcher): the same operation run twice, and again by a restarted dispatcher, opens three sessions, each with one agent_startup; Postgres stores every record', async () => {
      const op = nextOp('twice');
      const runOnce = async (d: HookDispatcher) => {
        d.register(op, []);
        expect(await d.evaluateToolCall(op, call(op))).toEqual({ status: 'allow' });
        expect(await d.evaluateAfterToolCall(op, call(op), { content: 'r', success: true })).toEqual({ status: 'allow' });
        d.unregister(op);
      };
      const r = recorder();
      const first = new InterceptionEmitter({ interceptors: [r.intercept], ...storeSinkNoProvider() });
      const d1 = make({ emitter: first, interceptionPoints: 'tool-seam' });
      await runOnce(d1);
      await runOnce(d1); // the same operation again in the same process
      await d1.close();
      const restarted = new InterceptionEmitter({ interceptors: [r.intercept], ...storeSinkNoProvider() });
      const d2 = make({ emitter: restarted, interceptionPoints: 'tool-seam' });
      await runOnce(d2); // a restarted process (no sequence provider: each session starts at 0)
      await d2.close();
      expect(first.sinkFailures + restarted.sinkFailures).toBe(0);
      const rows = await rowsLike(op);
      const sessions = [...new Set(rows.map((x) => x.session_id))];
      expect(sessions).toHaveLength(3);
      for (const s of sessions) {
        expect(rows.filter((x) => x.session_id === s).map((x) => [x.sequence, x.point])).toEqual([
          [0, 'agent_startup'],
          [1, 'pre_tool_call'],
          [2, 'post_tool_call'],
          [3, 'agent_shutdown'],
        ]);
      }
      expect(rows).toHaveLength(12);
    });

    it('S3-sessions (adapter): startRun({ operationId }) twice without sessionId — two sessions, both runs stored in Postgres, no duplicate key', async () => {
      const r = recorder();
      const d = make();
      const hooks = createAgentHooks({ interceptors: [r.intercept], dispatcher: d, ...storeSinkNoProvider() });
      const op = nextOp('runs');
      const ids: string[] = [];
      for (const q of ['first', 'second']) {
        const run = hooks.startRun({ input: q, operationId: op });
        ids.push(run.sessionId);
        await run.modelCall([{ role: 'user', content: q }], () => ({ content: `answer ${q}` }));
        await run.toolCall({ id: `t-${q}`, name: 'search', args: { q } }, () => 'found');
        await run.output(`answer ${q}`);
        expect(await run.end()).toMatchObject({ outcome: 'completed' });
      }
      await d.close();
      expect(hooks.emitter.sinkFailures).toBe(0);
      expect(ids[0]).not.toBe(ids[1]);
      for (const id of ids) expect(id.startsWith(`${op}/`)).toBe(true);
      const rows = await rowsLike(op);
      expect(rows).toHaveLength(16);
      for (const id of ids) {
        expect(rows.filter((x) => x.session_id === id).map((x) => x.point)).toEqual([
          'agent_startup',
          'input',
          'pre_model_call',
          'post_model_call',
          'pre_tool_call',
          'post_tool_call',
          'output',
          'agent_shutdown',
        ]);
      }
    });

    it('S3-sessions (dispatcher, store sequences): a cold dispatcher with a sequence provider never writes a second agent_startup into the first session', async () => {
      const op = nextOp('cold');
      const r = recorder();
      const a = make({ emitter: new InterceptionEmitter({ interceptors: [r.intercept], ...storeSink() }), interceptionPoints: 'tool-seam' });
      a.register(op, []);
      await a.evaluateToolCall(op, call(op));
      const b = make({ emitter: new InterceptionEmitter({ interceptors: [r.intercept], ...storeSink() }), interceptionPoints: 'tool-seam' });
      await b.evaluateToolCall(op, call(op, 'call-2'));
      a.unregister(op);
      await a.close();
      await b.close();
      const rows = await rowsLike(op);
      for (const s of new Set(rows.map((x) => x.session_id))) {
        const points = rows.filter((x) => x.session_id === s).map((x) => x.point);
        expect(points.filter((p) => p === 'agent_startup')).toHaveLength(1);
        expect(points.at(-1)).toBe('agent_shutdown'); // no session left open
      }
    });
  });

  describe('S3-end: end() after an error or an abort', () => {
    it('S3-end (adapter): a model call that threw → error; an aborted run → cancelled; an explicit completed cannot hide either', async () => {
      const r = recorder();
      const hooks = createAgentHooks({ interceptors: [r.intercept] });
      const failing = hooks.startRun({ input: 'q' });
      await expect(
        failing.modelCall([{ role: 'user', content: 'q' }], () => {
          throw new Error('provider 500');
        }),
      ).rejects.toThrow('provider 500');
      expect(await failing.end()).toMatchObject({ outcome: 'error' });
      const controller = new AbortController();
      const aborted = hooks.startRun({ input: 'q', signal: controller.signal });
      await aborted.ready;
      controller.abort();
      await expect(aborted.modelCall([{ role: 'user', content: 'q' }], () => ({ content: 'late' }))).rejects.toThrow();
      expect(await aborted.end('completed')).toMatchObject({ outcome: 'cancelled' });
      const plain = hooks.startRun({ input: 'q' });
      await plain.output('fine');
      expect(await plain.end()).toMatchObject({ outcome: 'completed' });
      expect(r.seen.filter((s) => s.point === 'agent_shutdown').map((s) => s.summary)).toEqual(['error', 'cancelled', 'completed']);
    });

    it('S3-end (dispatcher): a dispatcher-owned session closes with the completion reason; a dispatcher closed mid-operation ends its session cancelled, never completed', async () => {
      const r = recorder();
      const d = seam(r.intercept);
      const failed = nextOp('failed');
      const stopped = nextOp('stopped');
      await ops.createOperation({ operationId: failed });
      d.register(failed, []);
      d.register(stopped, []);
      await ops.completeOperation({ operationId: failed, reason: 'error', dispatcher: d, error: new Error('model crashed') });
      await d.close(); // `stopped` never completed here
      const byOp = (op: string) => r.seen.filter((s) => s.session.startsWith(`${op}/`) && s.point === 'agent_shutdown').map((s) => s.summary);
      expect(byOp(failed)).toEqual(['error']);
      expect(byOp(stopped)).toEqual(['cancelled']);
    });
  });

  describe('S3-post: every allowed pre_tool_call gets its post_tool_call', () => {
    it('S3-post (dispatcher): a decision-webhook deny after an allowed pre_tool_call emits post_tool_call with the blocked result', async () => {
      const r = recorder();
      const d = seam(r.intercept);
      const op = nextOp('deny');
      d.register(op, [control('deny', '/deny')]);
      const outcome = await d.evaluateToolCall(op, call(op));
      expect(outcome).toMatchObject({ status: 'blocked', reason: 'webhook says no' });
      const session = d.interceptionSessionId(op)!;
      expect(r.points(session)).toEqual(['agent_startup', 'pre_tool_call', 'post_tool_call']);
      const post = r.seen.find((s) => s.point === 'post_tool_call' && s.session === session);
      expect(post).toMatchObject({ isError: true, value: { success: false, error: 'hook_denied', state: { type: 'blocked', reason: 'webhook says no' } } });
      // A pre_tool_call the interceptor itself denied gets none (it was not allowed).
      const r2 = recorder((c) => (c.interception_point === 'pre_tool_call' ? Verdict.deny({ reason: 'policy.no' }) : Verdict.allow()));
      const d2 = seam(r2.intercept);
      d2.register(op, []);
      await d2.evaluateToolCall(op, call(op));
      expect(r2.points()).toEqual(['agent_startup', 'pre_tool_call']);
    });

    it('S3-post (adapter): a run’s tool call blocked by a decision webhook is closed in the run’s session; a tool that misuses the run still gets post_tool_call', async () => {
      const r = recorder();
      const d = make();
      const hooks = createAgentHooks({ interceptors: [r.intercept], dispatcher: d });
      const op = nextOp('run-deny');
      const run = hooks.startRun({ input: 'q', operationId: op });
      await run.ready;
      d.register(op, [control('deny', '/deny')]);
      expect(await d.evaluateToolCall(op, call(op))).toMatchObject({ status: 'blocked' });
      await expect(
        run.toolCall({ id: 'nested', name: 'search', args: {} }, () => {
          throw new AgentRunStateError('misuse');
        }),
      ).rejects.toBeInstanceOf(AgentRunStateError);
      await run.end();
      const points = r.points(run.sessionId);
      expect(points).toEqual(['agent_startup', 'input', 'pre_tool_call', 'post_tool_call', 'pre_tool_call', 'post_tool_call', 'agent_shutdown']);
    });
  });

  describe('S3-deferred: a deferred result is judged once', () => {
    const publish = async (d: HookDispatcher, op: string, parent: string) => {
      await ops.createOperation({ operationId: parent, hooks: [control('p', '/allow-parent', 'afterToolCall')] });
      await ops.createOperation({ operationId: op, hooks: [control('c', '/allow-child', 'afterToolCall')] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'call-1' });
      return ops.publishDeferredResult({
        operationId: op,
        interventionOperationId: parent,
        toolCallId: 'call-1',
        dispatcher: d,
        result: { content: 'deferred output', success: true, executionTime: 7 },
        context: call(op),
      });
    };

    it('S3-deferred (dispatcher): two rounds (intervention operation, then its own) — both controls asked, one post_tool_call', async () => {
      const r = recorder();
      const d = seam(r.intercept);
      const op = nextOp('deferred');
      const out = await publish(d, op, `${op}-parent`);
      expect(out).toMatchObject({ applied: true, status: 'allow' });
      expect(rx.requests.filter((q) => JSON.parse(q.body).operationId === op).map((q) => q.path)).toEqual(['/allow-parent', '/allow-child']);
      expect(r.seen.filter((s) => s.point === 'post_tool_call')).toHaveLength(1);
    });

    it('S3-deferred (adapter): a run linked to the intervention operation judges the deferred result once, in its own session', async () => {
      const r = recorder();
      const d = make();
      const hooks = createAgentHooks({ interceptors: [r.intercept], dispatcher: d });
      const op = nextOp('deferred-run');
      const parent = `${op}-parent`;
      const run = hooks.startRun({ input: 'q', operationId: parent });
      await run.ready;
      expect(await publish(d, op, parent)).toMatchObject({ applied: true, status: 'allow' });
      await run.end();
      expect(r.seen.filter((s) => s.point === 'post_tool_call').map((s) => s.session)).toEqual([run.sessionId]);
    });
  });

  describe('S3-ended: a tool call after unregister opens no session', () => {
    it('S3-ended (dispatcher): evaluateToolCall after unregister is cancelled with no second agent_startup; a new registration starts a new session', async () => {
      const r = recorder();
      const d = seam(r.intercept);
      const op = nextOp('late');
      d.register(op, []);
      d.unregister(op);
      expect(await d.evaluateToolCall(op, call(op))).toEqual({ status: 'cancelled' });
      expect(await d.evaluateAfterToolCall(op, call(op), { content: 'x', success: true })).toEqual({ status: 'cancelled' });
      await d.close();
      expect(r.points()).toEqual(['agent_startup', 'agent_shutdown']);
      const again = seam(r.intercept);
      again.register(op, []);
      again.unregister(op);
      again.register(op, []); // the operation runs again: a fresh session
      expect(await again.evaluateToolCall(op, call(op))).toEqual({ status: 'allow' });
      await again.close();
      expect(new Set(r.seen.map((s) => s.session)).size).toBe(3);
    });

    it('S3-ended (adapter): after a linked run ended and the operation was unregistered, a late dispatcher tool call for it opens no session', async () => {
      const r = recorder();
      const d = make();
      const hooks = createAgentHooks({ interceptors: [r.intercept], dispatcher: d });
      const op = nextOp('late-run');
      const run = hooks.startRun({ input: 'q', operationId: op });
      d.register(op, []);
      await run.output('done');
      await run.end();
      d.unregister(op);
      expect(await d.evaluateToolCall(op, call(op))).toEqual({ status: 'cancelled' });
      await d.close();
      expect(r.points().filter((p) => p === 'agent_startup')).toHaveLength(1);
    });
  });

  describe('S3-execution-time: a denied result keeps executionTime', () => {
    it('S3-execution-time (dispatcher): an afterToolCall control deny and a post_tool_call deny both keep the tool’s executionTime', async () => {
      const d = make();
      const op = nextOp('exec');
      d.register(op, [control('deny-after', '/deny-after', 'afterToolCall')]);
      const denied = await d.evaluateAfterToolCall(op, call(op), { content: 'secret', success: true, executionTime: 42, deviceExecutionTime: 40 });
      expect(denied).toMatchObject({ status: 'blocked', result: { content: 'webhook says no', executionTime: 42, deviceExecutionTime: 40 } });
      expect(JSON.stringify(denied)).not.toContain('secret');
      const r = recorder((c) => (c.interception_point === 'post_tool_call' ? Verdict.deny({ reason: 'policy.withhold' }) : Verdict.allow()));
      const s = seam(r.intercept);
      s.register(op, []);
      expect(await s.evaluateAfterToolCall(op, call(op), { content: 'secret', success: true, executionTime: 42 })).toMatchObject({
        status: 'blocked',
        result: { content: 'policy.withhold', executionTime: 42 },
      });
    });

    it('S3-execution-time (adapter): a linked run’s post_tool_call deny at the dispatcher keeps executionTime too', async () => {
      const r = recorder((c) => (c.interception_point === 'post_tool_call' ? Verdict.deny({ reason: 'policy.withhold' }) : Verdict.allow()));
      const d = make();
      const hooks = createAgentHooks({ interceptors: [r.intercept], dispatcher: d, toolSeamHostError: 'continue' });
      const op = nextOp('exec-run');
      const run = hooks.startRun({ input: 'q', operationId: op });
      await run.ready;
      expect(await d.evaluateAfterToolCall(op, call(op), { content: 'secret', success: true, executionTime: 9 })).toMatchObject({
        status: 'blocked',
        result: { executionTime: 9, state: { phase: 'afterToolCall', type: 'blocked' } },
      });
      await run.end();
    });
  });
});
