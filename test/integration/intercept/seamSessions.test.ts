/**
 * I4: AGENT-HOOKS-0.1 sessions at the dispatcher tool seam (issue 11): a blocked agent_startup
 * closes the session to every later point; agent_shutdown carries the mapped completion reason;
 * a process that never registered an operation still opens its session with agent_startup; an
 * application may own one session across several runs. Real emitters, a real 127.0.0.1 remote
 * interceptor, real Postgres for the operation store and the record sink.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher, type HookDispatcherOptions } from '../../../src/dispatch/hookDispatcher.ts';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import { createRemoteInterceptor } from '../../../src/send/remoteInterceptor.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import {
  AgentContextBuilder,
  InterceptionEmitter,
  Verdict,
  type AgentContext,
  type Interceptor,
  type InterceptionRecord,
} from '../../../src/intercept/index.ts';
import { createStoreRecordSink } from '../../../src/store/interceptionRecordSink.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import type { ToolCallHookContext } from '../../../src/contract/toolContext.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';

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
const result = { content: 'out', success: true };

type Seen = { point: string; session: string; summary?: string };

/** A dispatcher-owned session id is `<operationId>/<uuid>`, minted per run (issue 28): the operation part. */
const MINTED = /\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const operationOf = (sessionId: string) => sessionId.replace(MINTED, '');

/**
 * An interceptor that notes every context it sees, answering `verdictAt[point]` (default allow).
 * `session` is the operation a minted session belongs to; `sessionIds` the raw ids, in order.
 */
function recorder(verdictAt: Partial<Record<string, () => Verdict | Promise<Verdict>>> = {}) {
  const seen: Seen[] = [];
  const sessionIds: string[] = [];
  const intercept: Interceptor = (c: AgentContext) => {
    const summary = (c as { summary?: { reason?: string } }).summary?.reason;
    const id = (c.session as { id: string }).id;
    sessionIds.push(id);
    seen.push({ point: c.interception_point, session: operationOf(id), ...(summary ? { summary } : {}) });
    return verdictAt[c.interception_point]?.() ?? Verdict.allow();
  };
  return { seen, sessionIds, intercept, points: () => seen.map((s) => s.point) };
}

describe('I4: sessions at the dispatcher tool seam', () => {
  let t: TestStore;
  let ops: OperationStore;
  let controls: Receiver;
  let policy: Receiver;
  let transport: FetchTransport;
  const dispatchers: HookDispatcher[] = [];
  let n = 0;
  const nextOp = (label: string) => `op-${label}-${++n}`;

  beforeAll(async () => {
    t = await createTestStore('seam_sess');
    ops = createOperationStore({ store: t.store });
    controls = await startReceiver({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"decision":"allow"}' });
    policy = await startReceiver();
    transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
  });
  afterAll(async () => {
    await Promise.all(dispatchers.map((d) => d.close()));
    await ops.close();
    await transport.close();
    await controls.close();
    await policy.close();
    await t.cleanup();
  });

  const dispatcher = (emitter: InterceptionEmitter, extra: Partial<HookDispatcherOptions> = {}) => {
    const d = new HookDispatcher({ emitter, interceptionPoints: 'tool-seam', allowedCidrs: '127.0.0.1/32', env: {}, logger: silentLogger(), ...extra });
    dispatchers.push(d);
    return d;
  };
  const storeEmitter = (interceptor: Interceptor) => {
    const sink = createStoreRecordSink(t.store.db);
    return new InterceptionEmitter({ interceptors: [interceptor], recordSink: sink.sink, sequenceProvider: sink.sequenceProvider });
  };
  /** Records of one session, or of every session minted for an operation (`<op>/<uuid>`), in insertion order. */
  const storedRecords = async (sessionId: string) =>
    (
      await t.store.pool!.query<{ session_id: string; sequence: number; point: string; record: InterceptionRecord }>(
        "select session_id, sequence, point, record from interception_records where session_id = $1 or session_id like $1 || '/%' order by session_id, sequence",
        [sessionId],
      )
    ).rows;
  const controlHook = (type: 'beforeToolCall' | 'afterToolCall') => ({
    id: `c-${type}`,
    type,
    webhook: { url: `${controls.url}/${type}`, responseHandling: 'toolCall' as const },
  });
  const controlsAskedFor = (op: string) => controls.requests.filter((r) => JSON.parse(r.body).operationId === op).length;

  describe('a blocked agent_startup closes the session', () => {
    it('after a startup deny every tool point is blocked with terminate, no tool point is emitted, and agent_shutdown says error (vector 074)', async () => {
      const r = recorder({ agent_startup: () => Verdict.deny({ reason: 'policy.no_session' }) });
      const records: InterceptionRecord[] = [];
      const d = dispatcher(new InterceptionEmitter({ interceptors: [r.intercept], recordSink: (x) => void records.push(x) }));
      const op = nextOp('deny');
      d.register(op, [controlHook('beforeToolCall'), controlHook('afterToolCall')]); // stays synchronous
      const before = await d.evaluateToolCall(op, call(op)); // nothing awaited in between: it waits for the startup verdict
      expect(before).toEqual({
        status: 'blocked',
        reason: 'policy.no_session',
        terminate: true,
        result: {
          content: 'policy.no_session',
          success: false,
          error: 'hook_denied',
          state: { type: 'blocked', reason: 'policy.no_session' },
          executionTime: 0,
        },
      });
      expect(await d.evaluateAfterToolCall(op, call(op), result)).toMatchObject({ status: 'blocked', reason: 'policy.no_session', terminate: true });
      expect(controlsAskedFor(op)).toBe(0);
      d.unregister(op);
      await d.close();
      expect(r.seen).toEqual([
        { point: 'agent_startup', session: op },
        { point: 'agent_shutdown', session: op, summary: 'error' },
      ]);
      expect(records.map((x) => x.sequence)).toEqual([0, 1]);
    });

    it('a tool call started while the startup verdict is still pending waits for it and is blocked by a late deny', async () => {
      let release!: (v: Verdict) => void;
      const gate = new Promise<Verdict>((resolve) => (release = resolve));
      const r = recorder({ agent_startup: () => gate });
      const d = dispatcher(new InterceptionEmitter({ interceptors: [r.intercept] }));
      const op = nextOp('pending');
      d.register(op, []);
      const pending = d.evaluateToolCall(op, call(op));
      const alsoPending = d.evaluateAfterToolCall(op, call(op), result);
      release(Verdict.deny({ reason: 'policy.late_no' }));
      expect(await pending).toMatchObject({ status: 'blocked', reason: 'policy.late_no', terminate: true });
      expect(await alsoPending).toMatchObject({ status: 'blocked', reason: 'policy.late_no', terminate: true });
      expect(r.points()).toEqual(['agent_startup']);
    });

    it('a startup the interceptor allows lets the tool points through, in order', async () => {
      const r = recorder();
      const d = dispatcher(new InterceptionEmitter({ interceptors: [r.intercept] }));
      const op = nextOp('ok');
      d.register(op, []);
      expect(await d.evaluateToolCall(op, call(op))).toEqual({ status: 'allow' });
      expect(await d.evaluateAfterToolCall(op, call(op), result)).toEqual({ status: 'allow' });
      d.unregister(op);
      await d.close();
      expect(r.points()).toEqual(['agent_startup', 'pre_tool_call', 'post_tool_call', 'agent_shutdown']);
      expect(r.seen.at(-1)?.summary).toBe('completed');
    });

    it('a failed agent_startup (remote interceptor on 127.0.0.1 answering 500) is a host error: blocked with terminate even under posture continue', async () => {
      policy.setHandler((req) => {
        const point = (JSON.parse(req.body) as { interception_point: string }).interception_point;
        return point === 'agent_startup'
          ? { status: 500, body: 'down' }
          : { status: 200, headers: { 'content-type': 'application/json' }, body: '{"decision":"allow"}' };
      });
      const records: InterceptionRecord[] = [];
      const remote = createRemoteInterceptor({ url: `${policy.url}/verdict` }, { fetchTransport: transport, env: {} });
      const d = dispatcher(new InterceptionEmitter({ interceptors: [remote], recordSink: (x) => void records.push(x) }), { interceptionPosture: 'continue' });
      const op = nextOp('remote-fail');
      const asked = policy.requests.length;
      d.register(op, []);
      expect(await d.evaluateToolCall(op, call(op))).toMatchObject({ status: 'blocked', reason: 'host_error:interceptor_failed', terminate: true });
      d.unregister(op, { reason: 'done' });
      await d.close();
      const points = policy.requests.slice(asked).map((req) => JSON.parse(req.body) as { interception_point: string; summary?: { reason: string } });
      expect(points.map((p) => p.interception_point)).toEqual(['agent_startup', 'agent_shutdown']);
      expect(points[1]!.summary).toEqual({ reason: 'error' });
      expect(records.map((x) => [x.interception_point, x.verdict.reason])).toEqual([
        ['agent_startup', 'host_error:interceptor_failed'],
        ['agent_shutdown', undefined],
      ]);
    });

    it('in evaluate_only a startup deny is recorded and the session goes on', async () => {
      const r = recorder({ agent_startup: () => Verdict.deny({ reason: 'policy.would_stop' }) });
      const d = dispatcher(new InterceptionEmitter({ mode: 'evaluate_only', interceptors: [r.intercept] }));
      const op = nextOp('eval');
      d.register(op, []);
      expect(await d.evaluateToolCall(op, call(op))).toEqual({ status: 'allow' });
      expect(r.points()).toEqual(['agent_startup', 'pre_tool_call']);
    });
  });

  describe('I4: agent_shutdown says how the operation ended', () => {
    for (const [completion, summary] of [
      ['done', 'completed'],
      ['error', 'error'],
      ['interrupted', 'cancelled'],
      ['max_steps', 'cancelled'],
      ['cost_limit', 'cancelled'],
      ['something_new', 'error'],
    ] as const) {
      it(`I4: unregister(op, { reason: '${completion}' }) → summary.reason ${summary}`, async () => {
        const r = recorder();
        const d = dispatcher(new InterceptionEmitter({ interceptors: [r.intercept] }));
        const op = nextOp(`end-${completion}`);
        d.register(op, []);
        d.unregister(op, { reason: completion });
        await d.close();
        expect(r.seen).toEqual([
          { point: 'agent_startup', session: op },
          { point: 'agent_shutdown', session: op, summary },
        ]);
      });
    }

    it('I4: unregister(op) without a reason still says completed, and unregistering twice emits one agent_shutdown', async () => {
      const r = recorder();
      const d = dispatcher(new InterceptionEmitter({ interceptors: [r.intercept] }));
      const op = nextOp('plain');
      d.register(op, []);
      d.unregister(op);
      d.unregister(op);
      d.unregister('never-seen');
      await d.close();
      expect(r.seen).toEqual([
        { point: 'agent_startup', session: op },
        { point: 'agent_shutdown', session: op, summary: 'completed' },
      ]);
    });

    it('I4: completeOperation maps its reason (max_steps → cancelled, error → error) onto agent_shutdown; parked keeps the session open', async () => {
      const r = recorder();
      const d = dispatcher(storeEmitter(r.intercept));
      const [limited, failed, parked] = [nextOp('limit'), nextOp('fail'), nextOp('park')];
      for (const op of [limited, failed, parked]) {
        await ops.createOperation({ operationId: op });
        d.register(op, []);
        await d.evaluateToolCall(op, call(op));
      }
      await ops.completeOperation({ operationId: limited, reason: 'max_steps', dispatcher: d });
      await ops.completeOperation({ operationId: failed, reason: 'error', dispatcher: d });
      await ops.completeOperation({ operationId: parked, reason: 'parked', dispatcher: d });
      await d.close();
      const shutdowns = r.seen.filter((s) => s.point === 'agent_shutdown');
      // parked: completeOperation leaves it open; only closing the dispatcher ends this process's session.
      expect(shutdowns).toEqual([
        { point: 'agent_shutdown', session: limited, summary: 'cancelled' },
        { point: 'agent_shutdown', session: failed, summary: 'error' },
        { point: 'agent_shutdown', session: parked, summary: 'cancelled' },
      ]);
      expect((await storedRecords(limited)).map((x) => [x.sequence, x.point])).toEqual([
        [0, 'agent_startup'],
        [1, 'pre_tool_call'],
        [2, 'agent_shutdown'],
      ]);
    });
  });

  describe('I4: an operation first seen in a process that never registered it', () => {
    it('I4 / seed 003: a cold worker (opts.serializedHooks) opens its own session with agent_startup; the first process closed its one; no session has two startups and Postgres takes every record', async () => {
      const op = nextOp('cold');
      await ops.createOperation({ operationId: op, hooks: [controlHook('beforeToolCall')] });
      // The process that started the operation.
      const first = recorder();
      const a = dispatcher(storeEmitter(first.intercept));
      a.register(op, [controlHook('beforeToolCall')]);
      await a.close();
      // A cold worker: same store, never registered the operation.
      const cold = recorder();
      const b = dispatcher(storeEmitter(cold.intercept));
      const hooks = await ops.loadHooks(op);
      expect(await b.evaluateToolCall(op, call(op), { serializedHooks: hooks })).toEqual({ status: 'allow' });
      expect(controlsAskedFor(op)).toBe(1);
      expect(await b.evaluateAfterToolCall(op, call(op), result, { serializedHooks: hooks })).toEqual({ status: 'allow' });
      await ops.completeOperation({ operationId: op, reason: 'interrupted', dispatcher: b });
      await b.close();
      expect(cold.seen).toEqual([
        { point: 'agent_startup', session: op },
        { point: 'pre_tool_call', session: op },
        { point: 'post_tool_call', session: op },
        { point: 'agent_shutdown', session: op, summary: 'cancelled' },
      ]);
      // The first process's session ended with it (close → cancelled); the cold worker's is another one.
      expect(first.seen).toEqual([
        { point: 'agent_startup', session: op },
        { point: 'agent_shutdown', session: op, summary: 'cancelled' },
      ]);
      const [firstSession] = first.sessionIds;
      const [coldSession] = cold.sessionIds;
      expect(firstSession).not.toBe(coldSession);
      expect(new Set(cold.sessionIds)).toEqual(new Set([coldSession]));
      const stored = await storedRecords(op);
      const bySession = (id: string | undefined) => stored.filter((x) => x.session_id === id).map((x) => [x.sequence, x.point]);
      expect(bySession(firstSession)).toEqual([
        [0, 'agent_startup'],
        [1, 'agent_shutdown'],
      ]);
      expect(bySession(coldSession)).toEqual([
        [0, 'agent_startup'],
        [1, 'pre_tool_call'],
        [2, 'post_tool_call'],
        [3, 'agent_shutdown'],
      ]);
      expect(stored).toHaveLength(6);
    });

    it('in a cold worker a startup deny blocks the first tool call with terminate, and no tool point is emitted', async () => {
      const r = recorder({ agent_startup: () => Verdict.deny({ reason: 'policy.tenant_suspended' }) });
      const d = dispatcher(new InterceptionEmitter({ interceptors: [r.intercept] }));
      const op = nextOp('cold-deny');
      expect(await d.evaluateToolCall(op, call(op), { serializedHooks: [controlHook('beforeToolCall')] })).toMatchObject({
        status: 'blocked',
        reason: 'policy.tenant_suspended',
        terminate: true,
      });
      expect(controlsAskedFor(op)).toBe(0);
      expect(r.points()).toEqual(['agent_startup']);
    });
  });

  describe('I4: an application-owned session across several runs (seed 003)', () => {
    it('I4: the dispatcher joins the application session: one agent_startup and one agent_shutdown (the application’s), sequences strictly increasing across runs', async () => {
      const r = recorder();
      const emitter = storeEmitter(r.intercept);
      const session = new AgentContextBuilder({ agentId: 'support-agent', framework: 'hookrelay', sessionId: `conversation-${++n}` });
      await emitter.emit(session.agentStartup({ toolsRegistered: ['search/web'] }));
      const d = dispatcher(emitter, { interceptionSession: session });
      const [run1, run2] = [nextOp('run'), nextOp('run')];
      d.register(run1, []);
      expect(await d.evaluateToolCall(run1, call(run1))).toEqual({ status: 'allow' });
      d.unregister(run1);
      d.register(run2, []);
      expect(await d.evaluateToolCall(run2, call(run2, 'call-2'))).toEqual({ status: 'allow' });
      expect(await d.evaluateAfterToolCall(run2, call(run2, 'call-2'), result)).toEqual({ status: 'allow' });
      d.unregister(run2, { reason: 'error' });
      await d.close();
      await emitter.emit(session.agentShutdown({ reason: 'completed' }));
      expect(r.seen.map((s) => [s.point, s.session])).toEqual([
        ['agent_startup', session.sessionId],
        ['pre_tool_call', session.sessionId],
        ['pre_tool_call', session.sessionId],
        ['post_tool_call', session.sessionId],
        ['agent_shutdown', session.sessionId],
      ]);
      const stored = await storedRecords(session.sessionId);
      expect(stored.map((x) => x.sequence)).toEqual([0, 1, 2, 3, 4]);
      expect(await storedRecords(run1)).toEqual([]);
      expect(await storedRecords(run2)).toEqual([]);
    });

    it('I4: a function chooses the session per operation; undefined leaves that operation its own dispatcher-owned session', async () => {
      const r = recorder();
      const conversation = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'conversation-fn', startSequence: 10 });
      const d = dispatcher(new InterceptionEmitter({ interceptors: [r.intercept] }), {
        interceptionSession: (operationId) => (operationId.startsWith('conv-') ? conversation : undefined),
      });
      const joined = `conv-${++n}`;
      const solo = nextOp('solo');
      d.register(joined, []);
      d.register(solo, []);
      await d.evaluateToolCall(joined, call(joined));
      await d.evaluateToolCall(solo, call(solo));
      d.unregister(joined);
      d.unregister(solo);
      await d.close();
      expect(r.seen.filter((s) => s.session === 'conversation-fn').map((s) => s.point)).toEqual(['pre_tool_call']);
      expect(r.seen.filter((s) => s.session === solo).map((s) => s.point)).toEqual(['agent_startup', 'pre_tool_call', 'agent_shutdown']);
      expect(conversation.nextSequence).toBe(11);
    });

    it('I4: an interceptionSession that is no AgentContextBuilder is refused, naming the option', () => {
      const d = dispatcher(new InterceptionEmitter({ interceptors: [() => Verdict.allow()] }), {
        interceptionSession: (() => ({ sessionId: 'x' })) as unknown as HookDispatcherOptions['interceptionSession'],
      });
      const op = nextOp('bad');
      expect(() => d.register(op, [])).toThrow(/interceptionSession/);
      expect(d.getSerializedHooks(op)).toBeUndefined(); // nothing registered
    });
  });
});
