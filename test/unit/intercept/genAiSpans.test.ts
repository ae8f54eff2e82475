/**
 * DEP-6 (issue 50): tool calls judged through hookrelay emit OpenTelemetry spans in the GenAI
 * semantic conventions — `execute_tool {gen_ai.tool.name}` with the `gen_ai.tool.*` attributes, and
 * an `apply_guardrail` span per interception decision carrying the verdict apart from the action
 * taken — to a real SDK with an in-memory exporter. hookrelay's own attributes stay beside them.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createAiSdkHooks } from '../../../src/integrations/aiSdk.ts';
import { InterceptionEmitter } from '../../../src/intercept/emitter.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import type { AgentContext } from '../../../src/contract/agentHooks.ts';

const exporter = new InMemorySpanExporter();
let provider: TracerProvider;

beforeAll(() => {
  provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
});
beforeEach(() => exporter.reset());
afterAll(async () => {
  trace.disable();
  context.disable();
  await provider.shutdown();
});

const spans = (prefix: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name.startsWith(prefix));
/** The guardrail spans of tool points (the run's `input` point has its own, target `llm_input`). */
const toolGuardrails = () => spans('apply_guardrail').filter((s) => s.attributes['gen_ai.security.target.type'] === 'tool_call');
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

/** Denies `delete_all` at pre_tool_call, rewrites `units` of get_weather, allows the rest. */
const policy = (ctx: AgentContext) => {
  if (ctx.interception_point !== 'pre_tool_call') return Verdict.allow();
  const call = (ctx as { tool_call?: { name?: string } }).tool_call;
  if (call?.name === 'delete_all') return Verdict.deny({ reason: 'policy.destructive' });
  if (call?.name === 'get_weather') return Verdict.transform('$target.units', 'metric');
  return Verdict.allow();
};

async function oneCall(mode: 'enforce' | 'evaluate_only', name: string, args: Record<string, unknown>) {
  const hooks = createAgentHooks({ interceptors: { 'tool-policy': policy }, tools: [name], mode });
  const run = hooks.startRun({ input: 'go' });
  await run.ready;
  let ran = 0;
  const outcome = await run.toolCall({ id: 'call_7', name, args, description: 'a test tool' }, async (a) => {
    ran++;
    return { ok: true, args: a };
  });
  await run.end();
  return { outcome, ran };
}

describe('DEP-6: GenAI semantic-convention spans for judged tool calls', () => {
  it('DEP-6: a denied tool call exports an execute_tool span with its apply_guardrail verdict (deny, blocked) as a child', async () => {
    const { outcome, ran } = await oneCall('enforce', 'delete_all', { path: '/' });
    expect(outcome.status).toBe('blocked');
    expect(ran).toBe(0);

    const [tool, ...moreTools] = spans('execute_tool');
    expect(moreTools).toHaveLength(0);
    expect(tool!.name).toBe('execute_tool delete_all');
    expect(tool!.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'delete_all',
      'gen_ai.tool.call.id': 'call_7',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.description': 'a test tool',
      'hookrelay.outcome': 'blocked',
      'hookrelay.blocked_at': 'pre_tool_call',
      'hookrelay.reason': 'policy.destructive',
      'error.type': 'blocked',
    });
    expect(tool!.status.code).toBe(2); // ERROR: the call did not run

    const guardrails = toolGuardrails();
    expect(guardrails).toHaveLength(1); // pre_tool_call only: the denied call has no result to judge
    const g = guardrails[0]!;
    expect(g.name).toBe('apply_guardrail tool-policy');
    expect(parentOf(g)).toBe(tool!.spanContext().spanId);
    expect(g.attributes).toMatchObject({
      'gen_ai.operation.name': 'apply_guardrail',
      'gen_ai.guardian.name': 'tool-policy',
      'gen_ai.security.target.type': 'tool_call',
      'gen_ai.security.target.id': 'call_7',
      'gen_ai.security.decision.type': 'deny',
      'gen_ai.security.decision.reason': 'policy.destructive',
      'hookrelay.verdict': 'deny',
      'hookrelay.action': 'blocked',
      'hookrelay.mode': 'enforce',
      'hookrelay.interception_point': 'pre_tool_call',
    });
    expect(g.status.code).not.toBe(2); // a policy deny is the guardrail's result, not its failure
    // No arguments or results in any attribute.
    for (const s of exporter.getFinishedSpans()) expect(JSON.stringify(s.attributes)).not.toContain('"/"');
  });

  it('DEP-6: in evaluate_only the deny verdict is recorded apart from the action: recorded_only, and the tool runs', async () => {
    const { outcome, ran } = await oneCall('evaluate_only', 'delete_all', { path: '/' });
    expect(outcome.status).toBe('completed');
    expect(ran).toBe(1);
    const tool = spans('execute_tool')[0]!;
    expect(tool.attributes['hookrelay.outcome']).toBe('completed');
    expect(tool.status.code).not.toBe(2);
    const [pre, post] = toolGuardrails().sort((a, b) => Number(a.attributes['hookrelay.sequence']) - Number(b.attributes['hookrelay.sequence']));
    expect(pre!.attributes).toMatchObject({ 'gen_ai.security.decision.type': 'deny', 'hookrelay.action': 'recorded_only', 'hookrelay.mode': 'evaluate_only' });
    expect(post!.attributes).toMatchObject({
      'hookrelay.interception_point': 'post_tool_call',
      'gen_ai.security.decision.type': 'allow',
      'hookrelay.action': 'proceeded',
    });
    for (const g of [pre!, post!]) expect(parentOf(g)).toBe(tool.spanContext().spanId);
  });

  it('DEP-6: a transform is a modify decision whose action is transformed (path only, never the value)', async () => {
    const { outcome } = await oneCall('enforce', 'get_weather', { city: 'Kyoto', units: 'imperial' });
    expect(outcome.status).toBe('completed');
    const pre = toolGuardrails().find((s) => s.attributes['hookrelay.interception_point'] === 'pre_tool_call')!;
    expect(pre.attributes).toMatchObject({
      'gen_ai.security.decision.type': 'modify',
      'hookrelay.verdict': 'transform',
      'hookrelay.action': 'transformed',
      'hookrelay.transform.path': '$target.units',
    });
    expect(JSON.stringify(pre.attributes)).not.toContain('metric');
    expect(spans('execute_tool')[0]!.attributes['hookrelay.outcome']).toBe('completed');
    // The run's input point is judged too: a guardrail over the model's input, outside any tool span.
    const input = spans('apply_guardrail').find((s) => s.attributes['hookrelay.interception_point'] === 'input')!;
    expect(input.attributes).toMatchObject({ 'gen_ai.security.target.type': 'llm_input', 'gen_ai.security.decision.type': 'allow' });
  });

  it("DEP-6: at the dispatcher's tool seam, the denied evaluateToolCall records its apply_guardrail span under the caller's active span", async () => {
    const emitter = new InterceptionEmitter({
      interceptors: {
        'no-rm': (ctx) =>
          ctx.interception_point === 'pre_tool_call' && /rm -rf/.test(JSON.stringify(ctx.target))
            ? Verdict.deny({ reason: 'policy.destructive_shell' })
            : Verdict.allow(),
      },
    });
    const hooks = new HookDispatcher({ emitter, interceptionPoints: 'tool-seam', env: {}, logger: silentLogger() });
    hooks.register('op_seam', []);
    const app = trace.getTracer('app').startSpan('execute_tool shell/exec');
    const decision = await context.with(trace.setSpan(context.active(), app), () =>
      hooks.evaluateToolCall('op_seam', {
        toolCallId: 'call_9',
        assistantMessageId: 'msg_1',
        identifier: 'shell',
        apiName: 'exec',
        args: { cmd: 'rm -rf /' },
        callIndex: 0,
        stepIndex: 0,
        operationId: 'op_seam',
        executor: 'server',
      }),
    );
    app.end();
    hooks.unregister('op_seam');
    await hooks.close();
    expect(decision.status).toBe('blocked');
    const g = toolGuardrails().find((s) => s.attributes['hookrelay.interception_point'] === 'pre_tool_call')!;
    expect(g.attributes).toMatchObject({ 'gen_ai.security.decision.type': 'deny', 'hookrelay.action': 'blocked', 'gen_ai.guardian.name': 'no-rm' });
    expect(parentOf(g)).toBe(app.spanContext().spanId);
  });

  it("DEP-6: an AI SDK tool call denied through hookrelay/ai-sdk exports execute_tool with the tool's description and its deny verdict", async () => {
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const model = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) =>
        prompt.some((m) => m.role === 'tool')
          ? { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
          : {
              content: [{ type: 'tool-call', toolCallId: 'call_ai_1', toolName: 'delete_all', input: '{"path":"/"}' }],
              finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
              usage,
              warnings: [],
            },
    });
    let ran = 0;
    const tools = {
      delete_all: tool({
        description: 'Delete every file under a path',
        inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } } }),
        execute: async () => {
          ran++;
          return 'deleted';
        },
      }),
    };
    const relay = createAiSdkHooks({ hooks: createAgentHooks({ interceptors: { 'tool-policy': policy }, framework: 'ai-sdk', tools: ['delete_all'] }) });
    const run = relay.startRun({ input: 'clean up' });
    await run.track(generateText({ ...(await run.settings({ model, tools })), stopWhen: stepCountIs(3) }));
    expect(ran).toBe(0);
    const span = spans('execute_tool').find((s) => s.attributes['gen_ai.tool.call.id'] === 'call_ai_1')!;
    expect(span.attributes).toMatchObject({
      'gen_ai.tool.name': 'delete_all',
      'gen_ai.tool.description': 'Delete every file under a path',
      'hookrelay.outcome': 'blocked',
    });
    const g = toolGuardrails().find((s) => parentOf(s) === span.spanContext().spanId)!;
    expect(g.attributes).toMatchObject({ 'gen_ai.security.decision.type': 'deny', 'hookrelay.action': 'blocked' });
  });
});

describe('DEP-6: without an SDK no GenAI span is started', () => {
  it('DEP-6: a tool call with the global provider disabled exports nothing', async () => {
    trace.disable();
    try {
      const { outcome } = await oneCall('enforce', 'delete_all', {});
      expect(outcome.status).toBe('blocked');
      expect(exporter.getFinishedSpans()).toHaveLength(0);
    } finally {
      trace.setGlobalTracerProvider(provider);
    }
  });
});
