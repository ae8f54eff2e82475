/**
 * hookrelay/ai-sdk judges every model output the AI SDK can produce, not only text and client tool
 * calls: reasoning, files, sources and provider-run tool calls are `response` members of
 * post_model_call (`reasoning`, `files`, `sources`, `provider_tool_calls`); a transform or deny
 * applies to them; incremental streaming releases none of them before its verdict; generateObject
 * / streamObject answers are judged as text is. Against the real AI SDK (ai/test mock model).
 */
import { generateObject, generateText, jsonSchema, streamObject, streamText } from 'ai';
import { describe, expect, it } from 'vitest';
import type { AgentContext } from '../../../src/contract/agentHooks.ts';
import { createAiSdkHooks } from '../../../src/integrations/aiSdk.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { InterceptionBlocked } from '../../../src/contract/errors.ts';
import type { Interceptor } from '../../../src/intercept/interceptor.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import { mockModel, type StreamPart, usage } from '../../support/aiSdkMock.ts';
import { simulateReadableStream } from 'ai';

const SECRET = 'sk-live-SECRET-123';
type Ctx = AgentContext & { response?: Record<string, unknown> };
type Judge = (ctx: Ctx) => ReturnType<typeof Verdict.allow> | Promise<ReturnType<typeof Verdict.allow>>;

function setup(judge: Judge, streaming?: 'incremental') {
  const seen: Ctx[] = [];
  const interceptor: Interceptor = async (ctx) => {
    seen.push(structuredClone(ctx) as Ctx);
    return judge(ctx as Ctx);
  };
  const hooks = createAgentHooks({ interceptors: { policy: interceptor }, framework: 'ai-sdk', ...(streaming ? { streaming } : {}) });
  return { seen, relay: createAiSdkHooks({ hooks }) };
}

const redactContent: Judge = (ctx) =>
  ctx.interception_point === 'post_model_call' && typeof ctx.response?.content === 'string' && ctx.response.content.includes(SECRET)
    ? Verdict.transform('$target.content', ctx.response.content.replaceAll(SECRET, '[redacted]'))
    : Verdict.allow();

function reasoningResult() {
  return {
    content: [
      { type: 'reasoning' as const, text: `The user wants the key, which is ${SECRET}.` },
      { type: 'text' as const, text: `Your key is ${SECRET}.` },
    ],
    finishReason: { unified: 'stop' as const, raw: 'stop' },
    usage,
    warnings: [],
  };
}

function stream(parts: StreamPart[]) {
  return { stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }) };
}

function reasoningStream(tail = '') {
  return stream([
    { type: 'stream-start', warnings: [] },
    { type: 'reasoning-start', id: 'r1' },
    { type: 'reasoning-delta', id: 'r1', delta: 'The key is ' },
    { type: 'reasoning-delta', id: 'r1', delta: SECRET },
    { type: 'reasoning-end', id: 'r1' },
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Here ' },
    { type: 'text-delta', id: 't1', delta: 'it ' },
    { type: 'text-delta', id: 't1', delta: `is.${tail}` },
    { type: 'text-end', id: 't1' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
  ]);
}

describe('AI-SDK reasoning is judged with the text', () => {
  it('AI-SDK reasoning (generateText): the policy sees response.reasoning; a $target.content redaction leaves no secret in result.reasoningText or result.reasoning', async () => {
    const s = setup(redactContent);
    const run = s.relay.startRun({ input: 'What is my key?' });
    const result = await run.track(generateText({ ...(await run.settings({ model: mockModel({ generate: [reasoningResult()] }) })) }));
    expect(result.text).toBe('Your key is [redacted].');
    expect(s.seen.find((c) => c.interception_point === 'post_model_call')?.response).toMatchObject({
      content: `Your key is ${SECRET}.`,
      reasoning: `The user wants the key, which is ${SECRET}.`,
    });
    expect(result.reasoningText ?? '').not.toContain(SECRET);
    expect(JSON.stringify(result.reasoning)).not.toContain(SECRET);
    expect(JSON.stringify(result.response.messages)).not.toContain(SECRET);
  });

  it('AI-SDK reasoning: a transform of $target.reasoning is the reasoning the caller gets; an unchanged response keeps its reasoning', async () => {
    const s = setup((ctx) =>
      ctx.interception_point === 'post_model_call' ? Verdict.transform('$target.reasoning', 'The user wants the key.') : Verdict.allow(),
    );
    const run = s.relay.startRun({ input: 'q' });
    const result = await run.track(generateText({ ...(await run.settings({ model: mockModel({ generate: [reasoningResult()] }) })) }));
    expect(result.reasoningText).toBe('The user wants the key.');
    expect(result.text).toBe(`Your key is ${SECRET}.`);

    const a = setup(() => Verdict.allow());
    const run2 = a.relay.startRun({ input: 'q' });
    const kept = await run2.track(generateText({ ...(await run2.settings({ model: mockModel({ generate: [reasoningResult()] }) })) }));
    expect(kept.reasoningText).toBe(`The user wants the key, which is ${SECRET}.`);
  });

  it('AI-SDK reasoning (streamText, incremental): on a deny no reasoning part reaches fullStream, before the verdict or after; the error part ends it', async () => {
    const parts: string[] = [];
    let consumerAtVerdict = -1;
    const s = setup(async (ctx) => {
      if (ctx.interception_point !== 'post_model_call') return Verdict.allow();
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); // a reader would run now if anything were released
      consumerAtVerdict = parts.filter((t) => t.startsWith('reasoning')).length;
      return JSON.stringify(ctx.response).includes(SECRET) ? Verdict.deny({ reason: 'policy.secret_egress' }) : Verdict.allow();
    }, 'incremental');
    const run = s.relay.startRun({ input: 'q' });
    const settings = await run.settings({ model: mockModel({ stream: [reasoningStream()] }) });
    const received: unknown[] = [];
    for await (const part of streamText({ ...settings, onError: async (e) => settings.onError(e) }).fullStream) {
      parts.push(part.type);
      received.push(part);
    }
    expect(consumerAtVerdict).toBe(0);
    expect(parts.filter((t) => t.startsWith('reasoning'))).toEqual([]);
    expect(JSON.stringify(received)).not.toContain(SECRET);
    expect(parts).toContain('error');
    expect(s.seen.find((c) => c.interception_point === 'post_model_call')?.response?.reasoning).toBe(`The key is ${SECRET}`);
  });

  it('AI-SDK reasoning (streamText, incremental): an allowed response streams its reasoning only after the verdict that covered it; a text redaction withholds it', async () => {
    const order: string[] = [];
    const s = setup(async (ctx) => {
      if (ctx.interception_point === 'post_model_call') order.push(`verdict:${ctx.response?.finish_reason}`);
      return Verdict.allow();
    }, 'incremental');
    const run = s.relay.startRun({ input: 'q' });
    const settings = await run.settings({ model: mockModel({ stream: [reasoningStream()] }) });
    const result = streamText(settings);
    for await (const part of result.fullStream) if (part.type === 'reasoning-delta' || part.type === 'text-delta') order.push(part.type);
    const lastVerdict = order.lastIndexOf('verdict:stop');
    expect(order.indexOf('reasoning-delta')).toBeGreaterThan(lastVerdict);
    expect(await result.reasoningText).toBe(`The key is ${SECRET}`);

    const r = setup((ctx) => (ctx.interception_point === 'output' ? Verdict.transform('$target.content', 'withheld') : Verdict.allow()), 'incremental');
    const run2 = r.relay.startRun({ input: 'q' });
    const redacted = streamText(await run2.settings({ model: mockModel({ stream: [reasoningStream()] }) }));
    const all: unknown[] = [];
    for await (const part of redacted.fullStream) all.push(part);
    expect(JSON.stringify(all)).not.toContain(SECRET);
  });

  it('AI-SDK reasoning (streamText, buffered): a $target.content redaction streams no reasoning carrying the secret', async () => {
    const s = setup(redactContent);
    const run = s.relay.startRun({ input: 'q' });
    const result = streamText(await run.settings({ model: mockModel({ stream: [reasoningStream(SECRET)] }) }));
    const all: unknown[] = [];
    for await (const part of result.fullStream) all.push(part);
    expect(await result.text).toBe('Here it is.[redacted]');
    expect(JSON.stringify(all)).not.toContain(SECRET);
  });
});

describe('AI-SDK files, sources and provider-run tool calls are judged members', () => {
  const response = () => ({
    content: [
      { type: 'text' as const, text: 'See the attachments.' },
      { type: 'file' as const, mediaType: 'text/plain', data: { type: 'data' as const, data: Buffer.from(`token ${SECRET}`).toString('base64') } },
      { type: 'source' as const, sourceType: 'url' as const, id: 's1', url: 'https://internal.example/secret', title: 'internal' },
      { type: 'source' as const, sourceType: 'url' as const, id: 's2', url: 'https://docs.example/public' },
      { type: 'tool-call' as const, toolCallId: 'w1', toolName: 'web_search', input: '{"q":"key"}', providerExecuted: true },
      { type: 'tool-result' as const, toolCallId: 'w1', toolName: 'web_search', result: { hits: [SECRET] } },
    ],
    finishReason: { unified: 'stop' as const, raw: 'stop' },
    usage,
    warnings: [],
  });

  it('AI-SDK files/sources/provider tool calls: the policy sees them; a transform drops a source, rewrites a file and a provider result; a deny returns none of them', async () => {
    const s = setup((ctx) => {
      if (ctx.interception_point !== 'post_model_call') return Verdict.allow();
      const r = structuredClone(ctx.response) as Record<string, unknown> & {
        files: Array<Record<string, unknown>>;
        sources: Array<Record<string, unknown>>;
        provider_tool_calls: Array<Record<string, unknown>>;
      };
      r.sources = r.sources.filter((x) => x.id !== 's1');
      r.files[0]!.data = Buffer.from('token [redacted]').toString('base64');
      r.provider_tool_calls[0]!.result = { hits: ['[redacted]'] };
      return Verdict.transform('$target', r as never);
    });
    const run = s.relay.startRun({ input: 'q' });
    const result = await run.track(generateText({ ...(await run.settings({ model: mockModel({ generate: [response()] }) })) }));
    const judged = s.seen.find((c) => c.interception_point === 'post_model_call')!.response!;
    expect(judged).toMatchObject({
      files: [{ type: 'file', media_type: 'text/plain', data: Buffer.from(`token ${SECRET}`).toString('base64') }],
      sources: [{ id: 's1' }, { id: 's2' }],
      provider_tool_calls: [{ id: 'w1', name: 'web_search', args: { q: 'key' }, result: { hits: [SECRET] } }],
    });
    expect(result.sources.map((x) => x.id)).toEqual(['s2']);
    expect(Buffer.from(result.files[0]!.uint8Array).toString()).toBe('token [redacted]');
    expect(JSON.stringify(result.content)).not.toContain(SECRET);

    const d = setup((ctx) => (ctx.interception_point === 'post_model_call' ? Verdict.deny({ reason: 'policy.exfil' }) : Verdict.allow()));
    const run2 = d.relay.startRun({ input: 'q' });
    const err = await run2.track(generateText({ ...(await run2.settings({ model: mockModel({ generate: [response()] }) })) })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InterceptionBlocked);
  });
});

describe('AI-SDK generateObject / streamObject answers are judged', () => {
  const schema = jsonSchema<{ apiKey: string }>({ type: 'object', properties: { apiKey: { type: 'string' } }, required: ['apiKey'] });
  const objectResult = () => ({
    content: [{ type: 'text' as const, text: JSON.stringify({ apiKey: SECRET }) }],
    finishReason: { unified: 'stop' as const, raw: 'stop' },
    usage,
    warnings: [],
  });

  it('AI-SDK generateObject: an output transform is result.object; an output deny rejects and the run ends error', async () => {
    const s = setup((ctx) =>
      ctx.interception_point === 'output' ? Verdict.transform('$target.content', JSON.stringify({ apiKey: '[redacted]' })) : Verdict.allow(),
    );
    const run = s.relay.startRun({ input: 'q' });
    const result = await run.track(generateObject({ model: run.wrapModel(mockModel({ generate: [objectResult()] })), schema, prompt: 'q' }));
    expect(result.object).toEqual({ apiKey: '[redacted]' });
    expect(s.seen.map((c) => c.interception_point)).toContain('output');

    const d = setup((ctx) => (ctx.interception_point === 'output' ? Verdict.deny({ reason: 'policy.secret_egress' }) : Verdict.allow()));
    const run2 = d.relay.startRun({ input: 'q' });
    const err = await run2
      .track(generateObject({ model: run2.wrapModel(mockModel({ generate: [objectResult()] })), schema, prompt: 'q' }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InterceptionBlocked);
    expect(d.seen.at(-1)).toMatchObject({ interception_point: 'agent_shutdown', summary: { reason: 'error' } });
  });

  it('AI-SDK streamObject: on an output deny no partial object reaches the caller', async () => {
    const d = setup((ctx) => (ctx.interception_point === 'output' ? Verdict.deny({ reason: 'policy.secret_egress' }) : Verdict.allow()));
    const run = d.relay.startRun({ input: 'q' });
    const chunks = ['{"apiKey":"', SECRET, '"}'];
    const model = mockModel({
      stream: [
        stream([
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't1' },
          ...chunks.map((delta) => ({ type: 'text-delta' as const, id: 't1', delta })),
          { type: 'text-end', id: 't1' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
        ]),
      ],
    });
    const errors: unknown[] = [];
    const result = streamObject({ model: run.wrapModel(model), schema, prompt: 'q', onError: ({ error }) => void errors.push(error) });
    const partials: unknown[] = [];
    for await (const p of result.partialObjectStream) partials.push(p);
    expect(partials).toEqual([]);
    expect(errors[0]).toBeInstanceOf(InterceptionBlocked);
  });
});
