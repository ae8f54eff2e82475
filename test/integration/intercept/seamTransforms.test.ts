/**
 * I4 / issue 11: what each kind of transform does at the tool seam, over real emitters — local
 * interceptors and a remote interceptor answering from a real 127.0.0.1 receiver — with a real
 * decision webhook behind the seam. A transform the seam can carry is applied; one it cannot
 * apply is recorded and blocked as host_error:transform_invalid, never dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createRemoteInterceptor } from '../../../src/send/remoteInterceptor.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import { InterceptionEmitter, Verdict, type Interceptor, type InterceptionRecord, type JsonValue } from '../../../src/intercept/index.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import type { ToolCallHookContext, ToolCallResult } from '../../../src/contract/toolContext.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';

const RAW_ARG = 'raw-arg-needle-4d1a';
const RAW_SECRET = 'raw-secret-needle-8e77';

const call = (operationId: string): ToolCallHookContext => ({
  toolCallId: 'call-1',
  assistantMessageId: 'msg-1',
  identifier: 'crm',
  apiName: 'lookup',
  args: { q: RAW_ARG },
  callIndex: 0,
  stepIndex: 0,
  operationId,
  executor: 'server',
});
const rawResult = (): ToolCallResult => ({
  content: `api key ${RAW_SECRET}`,
  success: true,
  error: `trace ${RAW_SECRET}`,
  state: { rows: [RAW_SECRET] },
  executionTime: 12,
  stop: false,
  extra: RAW_SECRET,
});

describe('I4: transforms at the tool seam', () => {
  let controls: Receiver;
  let policy: Receiver;
  let transport: FetchTransport;
  const dispatchers: HookDispatcher[] = [];
  let n = 0;

  beforeAll(async () => {
    controls = await startReceiver({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"decision":"allow"}' });
    policy = await startReceiver();
    transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
  });
  afterAll(async () => {
    await Promise.all(dispatchers.map((d) => d.close()));
    await transport.close();
    await controls.close();
    await policy.close();
  });

  /** One operation with a decision webhook for the phase under test, behind the given interceptor. */
  const setup = (interceptor: Interceptor, opts: { posture?: 'continue'; mode?: 'evaluate_only' } = {}) => {
    const records: InterceptionRecord[] = [];
    const emitter = new InterceptionEmitter({
      interceptors: [interceptor],
      ...(opts.mode ? { mode: opts.mode } : {}),
      recordSink: (r) => void records.push(r),
    });
    const d = new HookDispatcher({
      emitter,
      interceptionPoints: 'tool-seam',
      allowedCidrs: '127.0.0.1/32',
      env: {},
      logger: silentLogger(),
      ...(opts.posture ? { interceptionPosture: opts.posture } : {}),
    });
    dispatchers.push(d);
    const op = `op-tx-${++n}`;
    d.register(op, [
      { id: 'decide', type: 'beforeToolCall', webhook: { url: `${controls.url}/before`, responseHandling: 'toolCall' } },
      { id: 'review', type: 'afterToolCall', webhook: { url: `${controls.url}/after`, responseHandling: 'toolCall' } },
    ]);
    const sent = () => controls.requests.filter((r) => JSON.parse(r.body).operationId === op);
    return { d, op, records, sent };
  };
  const at =
    (point: 'pre_tool_call' | 'post_tool_call', value: JsonValue): Interceptor =>
    (c) =>
      c.interception_point === point ? Verdict.transform('$target', value) : Verdict.allow();
  const remote = (verdictAt: 'pre_tool_call' | 'post_tool_call', verdict: unknown): Interceptor => {
    policy.setHandler((req) => {
      const point = (JSON.parse(req.body) as { interception_point: string }).interception_point;
      const body = point === verdictAt ? verdict : { decision: 'allow' };
      return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    });
    return createRemoteInterceptor({ url: `${policy.url}/verdict` }, { fetchTransport: transport, env: {} });
  };
  const invalid = (records: InterceptionRecord[], point: string) => records.find((r) => r.interception_point === point)?.verdict;

  describe('pre_tool_call (target = the args object)', () => {
    it('I4: an args object replacing the whole target is applied; the decision webhook sees it', async () => {
      const { d, op, sent } = setup(at('pre_tool_call', { q: 'safe', limit: 5 }));
      expect(await d.evaluateToolCall(op, call(op))).toEqual({ status: 'allow', args: { q: 'safe', limit: 5 } });
      expect(JSON.parse(sent()[0]!.body).args).toEqual({ q: 'safe', limit: 5 });
    });

    const nonObjects: [string, JsonValue][] = [
      ['a string', '[redacted]'],
      ['an array', ['a', 'b']],
      ['a number', 7],
      ['null', null],
    ];
    for (const [kind, value] of nonObjects) {
      it(`I4: args turned into ${kind} fail closed: blocked host_error:transform_invalid with terminate, the tool never runs, no decision webhook`, async () => {
        const { d, op, records, sent } = setup(at('pre_tool_call', value));
        const outcome = await d.evaluateToolCall(op, call(op));
        expect(outcome).toMatchObject({
          status: 'blocked',
          reason: 'host_error:transform_invalid',
          terminate: true,
          result: { success: false, error: 'hook_denied' },
        });
        expect(outcome).not.toHaveProperty('args');
        expect(JSON.stringify(outcome)).not.toContain(RAW_ARG);
        expect(sent()).toHaveLength(0);
        expect(invalid(records, 'pre_tool_call')).toMatchObject({ decision: 'deny', reason: 'host_error:transform_invalid' });
      });
    }

    it('I4: posture continue blocks an unappliable args transform without terminate', async () => {
      const { d, op } = setup(at('pre_tool_call', 'nope'), { posture: 'continue' });
      const outcome = await d.evaluateToolCall(op, call(op));
      expect(outcome).toMatchObject({ status: 'blocked', reason: 'host_error:transform_invalid' });
      expect(outcome).not.toHaveProperty('terminate');
    });

    it('I4: a remote interceptor (127.0.0.1) turning args into a string fails closed the same way', async () => {
      const { d, op, records, sent } = setup(remote('pre_tool_call', { decision: 'transform', transform: { path: '$target', value: '[redacted by policy]' } }));
      expect(await d.evaluateToolCall(op, call(op))).toMatchObject({ status: 'blocked', reason: 'host_error:transform_invalid', terminate: true });
      expect(sent()).toHaveLength(0);
      expect(invalid(records, 'pre_tool_call')?.reason).toBe('host_error:transform_invalid');
    });
  });

  describe('post_tool_call (target = the tool result)', () => {
    it("I4: Verdict.transform('$target', '[redacted by policy]') is applied as content; success and run metadata kept, error/state/other members dropped", async () => {
      const { d, op, sent } = setup(at('post_tool_call', '[redacted by policy]'));
      const outcome = await d.evaluateAfterToolCall(op, call(op), rawResult());
      expect(outcome).toEqual({ status: 'allow', result: { content: '[redacted by policy]', success: true, executionTime: 12, stop: false } });
      // The afterToolCall control reviews the redacted result, and the raw output reaches nobody.
      expect(JSON.parse(sent()[0]!.body).result).toEqual({ content: '[redacted by policy]', success: true, executionTime: 12, stop: false });
      expect(JSON.stringify(outcome) + sent()[0]!.body).not.toContain(RAW_SECRET);
    });

    it('I4: an array replacing the whole result is applied as content', async () => {
      const { d, op } = setup(at('post_tool_call', [{ type: 'text', text: 'summary' }]));
      const failed = { ...rawResult(), success: false };
      expect(await d.evaluateAfterToolCall(op, call(op), failed)).toEqual({
        status: 'allow',
        result: { content: [{ type: 'text', text: 'summary' }], success: false, executionTime: 12, stop: false },
      });
    });

    it('I4: a tool-result object replacing the whole result is the new result as is', async () => {
      const { d, op } = setup(at('post_tool_call', { content: 'clean', success: true }));
      expect(await d.evaluateAfterToolCall(op, call(op), rawResult())).toEqual({ status: 'allow', result: { content: 'clean', success: true } });
    });

    const uncarriable: [string, JsonValue][] = [
      ['a number', 42],
      ['a boolean', false],
      ['null', null],
      ['an object that is no tool result', { redacted: true }],
    ];
    for (const [kind, value] of uncarriable) {
      it(`I4: the result replaced by ${kind} fails closed: blocked host_error:transform_invalid with terminate, the raw result withheld`, async () => {
        const { d, op, records, sent } = setup(at('post_tool_call', value));
        const outcome = await d.evaluateAfterToolCall(op, call(op), rawResult());
        expect(outcome).toMatchObject({
          status: 'blocked',
          reason: 'host_error:transform_invalid',
          terminate: true,
          result: { success: false, error: 'hook_denied', state: { phase: 'afterToolCall', type: 'blocked' } },
        });
        expect(JSON.stringify(outcome)).not.toContain(RAW_SECRET);
        expect(sent()).toHaveLength(0);
        const verdict = invalid(records, 'post_tool_call');
        expect(verdict).toMatchObject({ decision: 'deny', reason: 'host_error:transform_invalid' });
        expect(JSON.stringify(records)).not.toContain(RAW_SECRET);
      });
    }

    it('I4: a remote interceptor (127.0.0.1) redacting the whole result to a string is applied', async () => {
      const { d, op } = setup(remote('post_tool_call', { decision: 'transform', transform: { path: '$target', value: '[redacted by policy]' } }));
      expect(await d.evaluateAfterToolCall(op, call(op), rawResult())).toEqual({
        status: 'allow',
        result: { content: '[redacted by policy]', success: true, executionTime: 12, stop: false },
      });
    });

    it('I4: a remote interceptor (127.0.0.1) replacing the result with a number fails closed', async () => {
      const { d, op, records } = setup(remote('post_tool_call', { decision: 'transform', transform: { path: '$target', value: 0 } }));
      const outcome = await d.evaluateAfterToolCall(op, call(op), rawResult());
      expect(outcome).toMatchObject({ status: 'blocked', reason: 'host_error:transform_invalid', terminate: true });
      expect(JSON.stringify(outcome)).not.toContain(RAW_SECRET);
      expect(invalid(records, 'post_tool_call')?.reason).toBe('host_error:transform_invalid');
    });

    it('I4: in evaluate_only nothing is written back, so an unappliable transform neither blocks nor changes the result', async () => {
      const { d, op, records } = setup(at('post_tool_call', 42), { mode: 'evaluate_only' });
      expect(await d.evaluateAfterToolCall(op, call(op), rawResult())).toEqual({ status: 'allow' });
      expect(invalid(records, 'post_tool_call')?.decision).toBe('transform');
    });
  });
});
