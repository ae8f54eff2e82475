import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { InterceptionEmitter, Verdict, type Interceptor } from '../../../src/intercept/index.ts';
import { createStoreRecordSink } from '../../../src/store/interceptionRecordSink.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import type { ToolCallHookContext } from '../../../src/contract/toolContext.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';

const ctx = (operationId: string, toolCallId = 'call-1'): ToolCallHookContext => ({
  toolCallId,
  assistantMessageId: 'msg-1',
  identifier: 'search',
  apiName: 'web',
  args: { q: 'tool-arg-needle-71f3' },
  callIndex: 0,
  stepIndex: 0,
  operationId,
  executor: 'server',
});

describe('I4: interception at the dispatcher tool seam', () => {
  let receiver: Receiver;
  let t: TestStore;
  beforeAll(async () => {
    receiver = await startReceiver({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"decision":"allow"}' });
    t = await createTestStore('seam');
  });
  afterAll(async () => {
    await receiver.close();
    await t.cleanup();
  });

  const control = (id: string, type: 'beforeToolCall' | 'afterToolCall' = 'beforeToolCall') => ({
    id,
    type,
    webhook: { url: `${receiver.url}/decide`, responseHandling: 'toolCall' as const },
  });
  const dispatcherWith = (interceptor: Interceptor, extra: ConstructorParameters<typeof InterceptionEmitter>[0] = {}) => {
    const emitter = new InterceptionEmitter({ interceptors: [interceptor], ...extra });
    return { emitter, d: new HookDispatcher({ emitter, interceptionPoints: 'tool-seam', allowedCidrs: '127.0.0.1/32', env: {}, logger: silentLogger() }) };
  };

  it('I4: a pre_tool_call transform rewrites the args the decision webhook sees and the args the caller gets back', async () => {
    const { d } = dispatcherWith((c) => (c.interception_point === 'pre_tool_call' ? Verdict.transform('$target.q', 'rewritten') : Verdict.allow()));
    try {
      d.register('op-transform', [control('decide')]);
      const before = receiver.requests.length;
      const outcome = await d.evaluateToolCall('op-transform', ctx('op-transform'));
      expect(outcome).toEqual({ status: 'allow', args: { q: 'rewritten' } });
      const sent = receiver.requests.slice(before);
      expect(sent).toHaveLength(1);
      expect(JSON.parse(sent[0]!.body).args).toEqual({ q: 'rewritten' });
    } finally {
      await d.close();
    }
  });

  it('I4: post_tool_call runs first and the afterToolCall control reviews the transformed result', async () => {
    const { d } = dispatcherWith((c) => (c.interception_point === 'post_tool_call' ? Verdict.transform('$target.content', 'redacted') : Verdict.allow()));
    try {
      d.register('op-after', [control('review', 'afterToolCall')]);
      const before = receiver.requests.length;
      const outcome = await d.evaluateAfterToolCall('op-after', ctx('op-after'), { content: 'raw output', success: true });
      expect(outcome).toEqual({ status: 'allow', result: { content: 'redacted', success: true } });
      expect(JSON.parse(receiver.requests.slice(before)[0]!.body).result).toEqual({ content: 'redacted', success: true });
    } finally {
      await d.close();
    }
  });

  it('I4: a policy deny blocks with hook_denied and the verdict reason, without terminate; no decision webhook is asked', async () => {
    const { d } = dispatcherWith((c) => (c.interception_point === 'pre_tool_call' ? Verdict.deny({ reason: 'policy.no_search' }) : Verdict.allow()));
    try {
      d.register('op-deny', [control('decide')]);
      const before = receiver.requests.length;
      const outcome = await d.evaluateToolCall('op-deny', ctx('op-deny'));
      expect(outcome).toEqual({
        status: 'blocked',
        reason: 'policy.no_search',
        result: { content: 'policy.no_search', success: false, error: 'hook_denied', state: { type: 'blocked', reason: 'policy.no_search' }, executionTime: 0 },
      });
      expect(receiver.requests.length).toBe(before);
    } finally {
      await d.close();
    }
  });

  it('I4: an interceptor timeout blocks with terminate: true (infrastructure failure)', async () => {
    const slow: Interceptor = {
      name: 'slow',
      timeoutMs: 50,
      intercept: (c) => (c.interception_point === 'pre_tool_call' ? new Promise(() => undefined) : Verdict.allow()),
    };
    const { d } = dispatcherWith(slow);
    try {
      d.register('op-timeout', []);
      const outcome = await d.evaluateToolCall('op-timeout', ctx('op-timeout'));
      expect(outcome).toMatchObject({ status: 'blocked', reason: 'host_error:interceptor_timeout', terminate: true });
    } finally {
      await d.close();
    }
  });

  it('I4: posture continue keeps the run going on an infrastructure deny (no terminate)', async () => {
    // Fails at pre_tool_call only: a failed agent_startup blocks the whole session whatever the posture.
    const emitter = new InterceptionEmitter({
      interceptors: [
        (c) => {
          if (c.interception_point === 'pre_tool_call') throw new Error('boom');
          return Verdict.allow();
        },
      ],
    });
    const d = new HookDispatcher({ emitter, interceptionPoints: 'tool-seam', interceptionPosture: 'continue', env: {}, logger: silentLogger() });
    try {
      const outcome = await d.evaluateToolCall('op-continue', ctx('op-continue'));
      expect(outcome).toMatchObject({ status: 'blocked', reason: 'host_error:interceptor_failed' });
      expect(outcome).not.toHaveProperty('terminate');
    } finally {
      await d.close();
    }
  });

  it('I4: evaluate_only never changes the outcome but records the verdict', async () => {
    const { d, emitter } = dispatcherWith(() => Verdict.deny({ reason: 'policy.would_block' }), { mode: 'evaluate_only' });
    try {
      d.register('op-eval', []);
      expect(await d.evaluateToolCall('op-eval', ctx('op-eval'))).toEqual({ status: 'allow' });
      const pre = emitter.records.find((r) => r.interception_point === 'pre_tool_call');
      expect(pre?.mode).toBe('evaluate_only');
      expect(pre?.verdict).toMatchObject({ decision: 'deny', reason: 'policy.would_block' });
    } finally {
      await d.close();
    }
  });

  it('I4 / seed 003: records land in Postgres without payloads; a restarted dispatcher opens its own session (one agent_startup each, sequences strictly increasing in each)', async () => {
    const run = async () => {
      const sink = createStoreRecordSink(t.store.db);
      const emitter = new InterceptionEmitter({ interceptors: [() => Verdict.allow()], recordSink: sink.sink, sequenceProvider: sink.sequenceProvider });
      const d = new HookDispatcher({ emitter, interceptionPoints: 'tool-seam', env: {}, logger: silentLogger() });
      d.register('op-records', []);
      await d.evaluateToolCall('op-records', ctx('op-records'));
      await d.evaluateAfterToolCall('op-records', ctx('op-records'), { content: 'tool-result-needle-9c2e', success: true });
      d.unregister('op-records');
      await d.close(); // waits for the background agent_shutdown record
      expect(emitter.sinkFailures).toBe(0);
    };
    await run();
    await run(); // a restarted dispatcher for the same operation
    const rows = await t.store.pool!.query<{ session_id: string; sequence: number; point: string; record: unknown }>(
      `select session_id, sequence, point, record from interception_records where session_id like 'op-records/%' order by id`,
    );
    const sessions = [...new Set(rows.rows.map((r) => r.session_id))];
    expect(sessions).toHaveLength(2);
    for (const id of sessions) expect(rows.rows.filter((r) => r.session_id === id).map((r) => r.sequence)).toEqual([0, 1, 2, 3]);
    expect(rows.rows.map((r) => r.point)).toEqual([
      'agent_startup',
      'pre_tool_call',
      'post_tool_call',
      'agent_shutdown',
      'agent_startup',
      'pre_tool_call',
      'post_tool_call',
      'agent_shutdown',
    ]);
    const dump = JSON.stringify(rows.rows);
    expect(dump).not.toContain('tool-arg-needle-71f3');
    expect(dump).not.toContain('tool-result-needle-9c2e');
  });
});
