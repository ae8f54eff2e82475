/**
 * SEAM-3 / SEAM-4 (I5): the AI SDK middleware refuses what it cannot judge instead of running it
 * silently — a model call offering a tool no `wrapTools` wrapped (no `wrapTools` at all, a tool
 * added to a wrapped set), a result no wrapped `execute` produced (a same-name tool swapped in) —
 * and a second hookrelay middleware on one model (the AGENT-HOOKS one-bundle rule). Real AI SDK
 * `generateText` / `streamText` over its own mock model.
 */
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { describe, expect, it } from 'vitest';
import type { AgentContext } from '../../../src/contract/agentHooks.ts';
import { createAiSdkHooks } from '../../../src/integrations/aiSdk.ts';
import { UninterceptedToolError, AgentHooksInstallError } from '../../../src/contract/errors.ts';
import type { Interceptor } from '../../../src/intercept/interceptor.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import { mockModel, textResult, textStream, toolCallsResult } from '../../support/aiSdkMock.ts';

type Ctx = AgentContext & { tool_call?: { name?: string } };

function relay() {
  const seen: Ctx[] = [];
  const policy: Interceptor = (ctx) => {
    seen.push(ctx as Ctx);
    return (ctx as Ctx).interception_point === 'pre_tool_call' && (ctx as Ctx).tool_call?.name === 'delete_all'
      ? Verdict.deny({ reason: 'policy.destructive' })
      : Verdict.allow();
  };
  return { relay: createAiSdkHooks({ hooks: createAgentHooks({ interceptors: { policy }, framework: 'ai-sdk' }) }), seen };
}

function tools(log: string[]) {
  const schema = jsonSchema<Record<string, unknown>>({ type: 'object', properties: {} });
  return {
    get_weather: tool({ inputSchema: schema, execute: async () => (log.push('get_weather'), 'sunny') }),
    delete_all: tool({ inputSchema: schema, execute: async () => (log.push('delete_all'), 'deleted') }),
  };
}

const deleteThenAnswer = () => mockModel({ generate: [toolCallsResult([{ id: 'd1', name: 'delete_all', args: {} }]), textResult('done')] });

describe('SEAM-3 (I5): the AI SDK middleware refuses a tool whose execution it will not see', () => {
  it('SEAM-3 (I5) AI-SDK relay.middleware() without wrapTools: the model call offering delete_all is refused (UninterceptedToolError); the model is never asked, delete_all never runs', async () => {
    const { relay: r } = relay();
    const log: string[] = [];
    const inner = deleteThenAnswer();
    const model = wrapLanguageModel({ model: inner, middleware: r.middleware() });
    const err = await generateText({ model, tools: tools(log), prompt: 'clean up', stopWhen: stepCountIs(3) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UninterceptedToolError);
    expect((err as UninterceptedToolError).message).toContain('wrapTools');
    expect(log).toEqual([]);
    expect(inner.doGenerateCalls).toHaveLength(0);
  });

  it('SEAM-3 (I5) AI-SDK a tool added to a wrapped set (and streamText too): refused before the model is asked', async () => {
    const { relay: r } = relay();
    const log: string[] = [];
    const all = tools(log);
    const set = { ...r.wrapTools({ get_weather: all.get_weather }), delete_all: all.delete_all };
    const inner = deleteThenAnswer();
    const model = wrapLanguageModel({ model: inner, middleware: r.middleware() });
    await expect(generateText({ model, tools: set, prompt: 'clean up', stopWhen: stepCountIs(3) })).rejects.toBeInstanceOf(UninterceptedToolError);
    const streamed = mockModel({ stream: [textStream(['hi'])] });
    const errors: unknown[] = [];
    const s = streamText({
      model: wrapLanguageModel({ model: streamed, middleware: r.middleware() }),
      tools: set,
      prompt: 'x',
      onError: ({ error }) => void errors.push(error),
    });
    await s.consumeStream();
    expect(errors[0]).toBeInstanceOf(UninterceptedToolError);
    expect(log).toEqual([]);
    expect(inner.doGenerateCalls).toHaveLength(0);
    expect(streamed.doStreamCalls).toHaveLength(0);
  });

  it('SEAM-3 (I5) AI-SDK a same-name tool swapped in after wrapTools: its result is refused before the model sees it, loudly (the call rejects)', async () => {
    const { relay: r, seen } = relay();
    const log: string[] = [];
    const all = tools(log);
    const wrapped = r.wrapTools({ get_weather: all.get_weather });
    const swapped = { ...wrapped, get_weather: tool({ inputSchema: jsonSchema({ type: 'object' }), execute: async () => (log.push('raw'), 'raw') }) };
    const inner = mockModel({ generate: [toolCallsResult([{ id: 'w1', name: 'get_weather', args: {} }]), textResult('done')] });
    const model = wrapLanguageModel({ model: inner, middleware: r.middleware() });
    await expect(generateText({ model, tools: swapped, prompt: 'weather', stopWhen: stepCountIs(3) })).rejects.toBeInstanceOf(UninterceptedToolError);
    expect(inner.doGenerateCalls).toHaveLength(1); // the unjudged result never reached the model
    expect(seen.filter((c) => c.interception_point === 'pre_tool_call')).toHaveLength(0);
  });

  it('SEAM-3 (I5) AI-SDK a run model (run.wrapModel) offered tools that did not go through run.wrapTools: refused', async () => {
    const { relay: r } = relay();
    const log: string[] = [];
    const run = r.startRun({ input: 'clean up' });
    const inner = deleteThenAnswer();
    await expect(
      run.track(generateText({ model: run.wrapModel(inner), tools: tools(log), prompt: 'clean up', stopWhen: stepCountIs(3) })),
    ).rejects.toBeInstanceOf(UninterceptedToolError);
    expect(log).toEqual([]);
  });

  it('AI-SDK (beside SEAM-3) with every tool through wrapTools, the loop runs as before: delete_all judged and denied, get_weather run', async () => {
    const { relay: r } = relay();
    const log: string[] = [];
    const inner = mockModel({
      generate: [
        toolCallsResult([
          { id: 'a', name: 'get_weather', args: {} },
          { id: 'b', name: 'delete_all', args: {} },
        ]),
        textResult('done'),
      ],
    });
    const model = wrapLanguageModel({ model: inner, middleware: r.middleware() });
    const out = await generateText({ model, tools: r.wrapTools(tools(log)), prompt: 'go', stopWhen: stepCountIs(3) });
    expect(out.text).toBe('done');
    expect(log).toEqual(['get_weather']);
  });
});

describe('SEAM-4 (I5): one hookrelay bundle per model', () => {
  it('SEAM-4 (I5) AI-SDK two hookrelay middlewares on one model — nested wrapLanguageModel or one middleware array — are refused (AgentHooksInstallError); the model is never asked', async () => {
    const a = relay().relay;
    const b = relay().relay;
    const inner = mockModel({ generate: [textResult('hi'), textResult('hi')] });
    const nested = wrapLanguageModel({ model: wrapLanguageModel({ model: inner, middleware: a.middleware() }), middleware: b.middleware() });
    await expect(generateText({ model: nested, prompt: 'x' })).rejects.toBeInstanceOf(AgentHooksInstallError);
    const array = wrapLanguageModel({ model: inner, middleware: [a.middleware(), a.middleware()] });
    await expect(generateText({ model: array, prompt: 'x' })).rejects.toBeInstanceOf(AgentHooksInstallError);
    const run = a.startRun({ input: 'x' });
    const perRun = run.wrapModel(wrapLanguageModel({ model: inner, middleware: b.middleware() }));
    await expect(run.track(generateText({ model: perRun, prompt: 'x' }))).rejects.toBeInstanceOf(AgentHooksInstallError);
    expect(inner.doGenerateCalls).toHaveLength(0);
  });
});
