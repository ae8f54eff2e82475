/**
 * hookrelay/ai-sdk set up once per model, as AI SDK users expect: `wrapLanguageModel({ model,
 * middleware: relay.middleware() })` and `relay.wrapTools(tools)`, then plain generateText /
 * streamText calls, each one run. And the lifecycle events of denied and transformed tool calls
 * (an audit hook sees denials, with the verdict), with the first step numbered 0 (D10).
 */
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { describe, expect, it } from 'vitest';
import type { AgentContext, InterceptionRecord } from '../../../src/contract/agentHooks.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createAiSdkHooks } from '../../../src/integrations/aiSdk.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { InterceptionBlocked } from '../../../src/contract/errors.ts';
import type { Interceptor } from '../../../src/intercept/interceptor.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { mockModel, textResult, textStream, toolCallStream, toolCallsResult } from '../../support/aiSdkMock.ts';

type Ctx = AgentContext & { tool_call?: { name?: string } };
type Judge = (ctx: Ctx) => ReturnType<typeof Verdict.allow>;

function setup(judge: Judge = () => Verdict.allow()) {
  const records: InterceptionRecord[] = [];
  const interceptor: Interceptor = async (ctx) => judge(ctx as Ctx);
  const hooks = createAgentHooks({ interceptors: { policy: interceptor }, recordSink: (r) => void records.push(r), framework: 'ai-sdk' });
  const dispatcher = new HookDispatcher({ logger: silentLogger(), env: {} });
  const events: Array<{ type: string; event: Record<string, unknown> }> = [];
  const audit = (op: string, types: string[]) =>
    dispatcher.register(
      op,
      types.map((type) => ({ id: `h-${type}`, type, handler: (event: Record<string, unknown>) => void events.push({ type, event }) })) as never,
    );
  const relay = createAiSdkHooks({ hooks, dispatcher });
  const points = (session?: string) =>
    records
      .filter((r) => session === undefined || r.session_id === session)
      .map((r) => (r.verdict.decision === 'allow' ? r.interception_point : `${r.interception_point}(${r.verdict.decision})`));
  return { records, relay, events, audit, points };
}

function tools(log: string[]) {
  return {
    get_weather: tool({
      description: 'weather',
      inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
      execute: async ({ city }) => {
        log.push(`get_weather:${city}`);
        return { forecast: 'sunny' };
      },
    }),
    delete_all: tool({
      description: 'delete everything',
      inputSchema: jsonSchema<Record<string, never>>({ type: 'object', properties: {} }),
      execute: async () => {
        log.push('delete_all');
        return 'deleted';
      },
    }),
  };
}

const denyDelete: Judge = (ctx) =>
  ctx.interception_point === 'pre_tool_call' && ctx.tool_call?.name === 'delete_all'
    ? Verdict.deny({ reason: 'policy.destructive', message: 'no bulk deletes' })
    : Verdict.allow();

describe('AI-SDK middleware: wrapLanguageModel once per model', () => {
  it('UX-5 AI-SDK middleware via wrapLanguageModel: each generateText call is one run — eight points in one session, tools judged, a second call its own session', async () => {
    const s = setup(denyDelete);
    const log: string[] = [];
    const inner = mockModel({
      generate: [
        toolCallsResult([
          { id: 'a1', name: 'get_weather', args: { city: 'Kyoto' } },
          { id: 'a2', name: 'delete_all', args: {} },
        ]),
        textResult('Sunny; nothing deleted.'),
        textResult('Hello again.'),
      ],
    });
    const model = wrapLanguageModel({ model: inner, middleware: s.relay.middleware({ run: () => ({ operationId: 'op-mw' }) }) });
    const wrappedTools = s.relay.wrapTools(tools(log));
    s.audit('op-mw', ['beforeStep', 'afterStep', 'afterToolCall', 'onComplete']);

    const first = await generateText({
      model,
      tools: wrappedTools,
      prompt: 'Weather in Kyoto, then clean up',
      stopWhen: stepCountIs(4),
      toolCallConcurrency: 1,
    });
    expect(first.text).toBe('Sunny; nothing deleted.');
    expect(log).toEqual(['get_weather:Kyoto']); // delete_all denied: never ran
    const sessions = [...new Set(s.records.map((r) => r.session_id))];
    expect(sessions).toHaveLength(1);
    expect(s.points()).toEqual([
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call',
      'post_tool_call',
      'pre_tool_call(deny)',
      'pre_model_call',
      'post_model_call',
      'output',
      'agent_shutdown',
    ]);
    const denied = s.events.find((e) => e.type === 'afterToolCall' && e.event.apiName === 'delete_all')!.event;
    expect(denied).toMatchObject({
      toolCallId: 'a2',
      stepIndex: 0,
      result: { success: false },
      verdict: { decision: 'deny', interceptionPoint: 'pre_tool_call', reason: 'policy.destructive' },
    });
    expect(s.events.map((e) => `${e.type}${e.event.stepIndex ?? ''}`)).toEqual([
      'beforeStep0',
      'afterToolCall0',
      'afterToolCall0',
      'afterStep0',
      'beforeStep1',
      'afterStep1',
      'onComplete',
    ]);

    await generateText({ model, prompt: 'Hi' });
    const all = [...new Set(s.records.map((r) => r.session_id))];
    expect(all).toHaveLength(2);
    expect(s.points(all[1])).toEqual(['agent_startup', 'input', 'pre_model_call', 'post_model_call', 'output', 'agent_shutdown']);
  });

  it('UX-5 AI-SDK middleware: an input transform is the prompt the model gets; a post_model_call deny rejects the call and the run ends error', async () => {
    const t = setup((ctx) => (ctx.interception_point === 'input' ? Verdict.transform('$target.content', 'Weather in Paris?') : Verdict.allow()));
    const inner = mockModel({ generate: [textResult('ok')] });
    await generateText({ model: wrapLanguageModel({ model: inner, middleware: t.relay.middleware() }), prompt: 'Weather in Kyoto?' });
    expect(JSON.stringify(inner.doGenerateCalls[0]!.prompt)).toContain('Weather in Paris?');
    expect(JSON.stringify(inner.doGenerateCalls[0]!.prompt)).not.toContain('Kyoto');

    const d = setup((ctx) => (ctx.interception_point === 'post_model_call' ? Verdict.deny({ reason: 'policy.toxicity' }) : Verdict.allow()));
    const model = wrapLanguageModel({ model: mockModel({ generate: [textResult('bad')] }), middleware: d.relay.middleware() });
    await expect(generateText({ model, prompt: 'q', maxRetries: 0 })).rejects.toBeInstanceOf(InterceptionBlocked);
    expect(d.points().at(-1)).toBe('agent_shutdown');
    expect(d.points()).toContain('post_model_call(deny)');
  });

  it('UX-5 AI-SDK middleware with streamText: the tool step and the answer are one run; the run ends when the answer stream is read', async () => {
    const s = setup();
    const log: string[] = [];
    const model = wrapLanguageModel({
      model: mockModel({ stream: [toolCallStream([{ id: 's1', name: 'get_weather', args: { city: 'Oslo' } }]), textStream(['Cold ', 'in Oslo.'])] }),
      middleware: s.relay.middleware(),
    });
    const result = streamText({ model, tools: s.relay.wrapTools(tools(log)), prompt: 'Weather in Oslo?', stopWhen: stepCountIs(3) });
    expect(await result.text).toBe('Cold in Oslo.');
    await result.consumeStream();
    expect(log).toEqual(['get_weather:Oslo']);
    expect(new Set(s.records.map((r) => r.session_id)).size).toBe(1);
    expect(s.points()).toEqual([
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call',
      'post_tool_call',
      'pre_model_call',
      'post_model_call',
      'output',
      'agent_shutdown',
    ]);
  });

  it('UX-5 AI-SDK middleware: a caller that stops reading the stream ends the run cancelled (agent_shutdown, onComplete interrupted)', async () => {
    const s = setup();
    s.audit('op-cancel', ['onComplete']);
    const model = wrapLanguageModel({
      model: mockModel({ stream: [textStream(['one ', 'two ', 'three'])] }),
      middleware: s.relay.middleware({ run: () => ({ operationId: 'op-cancel' }) }),
    });
    const { stream } = await model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'count' }] }] });
    const reader = stream.getReader();
    await reader.read();
    await reader.cancel();
    expect(s.points().at(-1)).toBe('agent_shutdown');
    expect(s.events.map((e) => e.event)).toEqual([expect.objectContaining({ reason: 'interrupted', status: 'cancelled' })]);
  });

  it('UX-5 AI-SDK middleware: a tool call id two open runs asked for is refused, never run under the wrong run', async () => {
    const s = setup();
    const log: string[] = [];
    const model = wrapLanguageModel({
      model: mockModel({
        generate: [toolCallsResult([{ id: 'dup', name: 'delete_all', args: {} }]), toolCallsResult([{ id: 'dup', name: 'delete_all', args: {} }])],
      }),
      middleware: s.relay.middleware(),
    });
    const prompt = (text: string) => [{ role: 'user' as const, content: [{ type: 'text' as const, text }] }];
    await model.doGenerate({ prompt: prompt('first run') });
    await model.doGenerate({ prompt: prompt('second run') });
    expect(new Set(s.records.map((r) => r.session_id)).size).toBe(2);
    const wrapped = s.relay.wrapTools(tools(log)) as unknown as { delete_all: { execute: (input: unknown, options: unknown) => Promise<unknown> } };
    await expect(async () => wrapped.delete_all.execute({}, { toolCallId: 'dup', messages: [] })).rejects.toThrow(/two open runs/);
    expect(log).toEqual([]);
  });

  it('UX-5 AI-SDK middleware: a wrapped tool no wrapped model asked for is refused, never run unjudged', async () => {
    const s = setup();
    const log: string[] = [];
    // The model is not wrapped: its tool call reaches a wrapped tool with no run behind it.
    const result = await generateText({
      model: mockModel({ generate: [toolCallsResult([{ id: 'x1', name: 'delete_all', args: {} }]), textResult('done')] }),
      tools: s.relay.wrapTools(tools(log)),
      prompt: 'q',
      stopWhen: stepCountIs(2),
    });
    expect(log).toEqual([]);
    const output = result.steps[0]!.content.find((p) => p.type === 'tool-error');
    expect(String((output as { error?: unknown } | undefined)?.error)).toMatch(/no model wrapped with this bundle's middleware/);
  });
});

describe('UX-5 AI-SDK lifecycle events carry the verdict of denied and transformed tool calls', () => {
  it('UX-5 AI-SDK denial emits afterToolCall with the verdict (per-run helpers); a transform says what it changed; the first step is stepIndex 0', async () => {
    const s = setup((ctx) => {
      if (ctx.interception_point !== 'pre_tool_call') return Verdict.allow();
      return ctx.tool_call?.name === 'delete_all' ? Verdict.deny({ reason: 'policy.destructive' }) : Verdict.transform('$target.city', 'Oslo');
    });
    s.audit('op-ux5', ['afterToolCall', 'onToolCallError']);
    const log: string[] = [];
    const run = s.relay.startRun({ input: 'q', operationId: 'op-ux5' });
    const model = mockModel({
      generate: [
        toolCallsResult([
          { id: 'u1', name: 'get_weather', args: { city: 'Kyoto' } },
          { id: 'u2', name: 'delete_all', args: {} },
        ]),
        textResult('done'),
      ],
    });
    await run.track(generateText({ ...(await run.settings({ model, tools: tools(log) })), stopWhen: stepCountIs(3), toolCallConcurrency: 1 }));
    expect(log).toEqual(['get_weather:Oslo']);
    expect(s.events.map((e) => [e.type, e.event.apiName, e.event.stepIndex, (e.event.verdict as { decision: string }).decision])).toEqual([
      ['afterToolCall', 'get_weather', 0, 'transform'],
      ['afterToolCall', 'delete_all', 0, 'deny'],
    ]);
    expect(s.events[1]!.event).toMatchObject({ verdict: { interceptionPoint: 'pre_tool_call', reason: 'policy.destructive' }, result: { success: false } });
  });
});
