/**
 * Responses for the AI SDK's own mock model (`MockLanguageModelV4` from `ai/test`): whole
 * results for `generateText`, stream parts for `streamText`. No network.
 */
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

type Model = ConstructorParameters<typeof MockLanguageModelV4>[0] & object;
type GenerateResult = Exclude<NonNullable<Model['doGenerate']>, (...args: never[]) => unknown> extends infer R ? (R extends unknown[] ? never : R) : never;
type StreamResult = Exclude<NonNullable<Model['doStream']>, (...args: never[]) => unknown> extends infer R ? (R extends unknown[] ? never : R) : never;
export type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;

export const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

export function textResult(text: string): GenerateResult {
  return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] } as GenerateResult;
}

export function toolCallsResult(calls: Array<{ id: string; name: string; args: Record<string, unknown> }>): GenerateResult {
  return {
    content: calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.args) })),
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  } as GenerateResult;
}

export function textStream(chunks: string[]): StreamResult {
  const parts: StreamPart[] = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't1' },
    ...chunks.map((delta) => ({ type: 'text-delta' as const, id: 't1', delta })),
    { type: 'text-end', id: 't1' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
  ];
  return { stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }) };
}

export function toolCallStream(calls: Array<{ id: string; name: string; args: Record<string, unknown> }>): StreamResult {
  const parts: StreamPart[] = [
    { type: 'stream-start', warnings: [] },
    ...calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.args) })),
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
  ];
  return { stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }) };
}

/** A mock model answering `generate` results / `stream` results in order. */
export function mockModel(options: { generate?: GenerateResult[]; stream?: StreamResult[] }): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    ...(options.generate ? { doGenerate: options.generate } : {}),
    ...(options.stream ? { doStream: options.stream } : {}),
  });
}
