import { describe, expect, it } from 'vitest';
import { EventSchemas, ToolCallHookContextSchema } from '../../../src/contract/index.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { buildToolCallHookContext, type ToolCallHookContextInput } from '../../../src/notify/toolCallContext.ts';
import { ToolCallContextError } from '../../../src/contract/errors.ts';

const input = (overrides: Partial<ToolCallHookContextInput> = {}): ToolCallHookContextInput => ({
  toolCall: { id: 'native-call-id', identifier: 'search-tool', apiName: 'search', arguments: '{"query":"original"}' },
  assistantMessageId: 'assistant-1',
  operationId: 'op-1',
  callIndex: 7,
  stepIndex: 1,
  ...overrides,
});

function contextError(fn: () => unknown): ToolCallContextError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ToolCallContextError);
    return error as ToolCallContextError;
  }
  throw new Error('expected a ToolCallContextError');
}

describe('T1: required tool context', () => {
  it('T1: builds exactly the required fields from a minimal call (executor defaults to server)', () => {
    expect(buildToolCallHookContext(input())).toStrictEqual({
      toolCallId: 'native-call-id',
      assistantMessageId: 'assistant-1',
      identifier: 'search-tool',
      apiName: 'search',
      args: { query: 'original' },
      callIndex: 7,
      stepIndex: 1,
      operationId: 'op-1',
      executor: 'server',
    });
  });

  it('T1: the effective args win over the raw model arguments', () => {
    const context = buildToolCallHookContext(input({ args: { query: 'effective' } }));
    expect(context.args).toStrictEqual({ query: 'effective' });
  });

  it('T1: object arguments are used as is; empty or absent arguments mean {}', () => {
    const base = input().toolCall;
    expect(buildToolCallHookContext(input({ toolCall: { ...base, arguments: { a: 1 } } })).args).toStrictEqual({ a: 1 });
    expect(buildToolCallHookContext(input({ toolCall: { ...base, arguments: '' } })).args).toStrictEqual({});
    expect(buildToolCallHookContext(input({ toolCall: { ...base, arguments: undefined } })).args).toStrictEqual({});
  });

  it.each(['{not json', '[1,2]', '"text"', 'null'])('T1: arguments %j that are not a JSON object throw naming args', (raw) => {
    const error = contextError(() => buildToolCallHookContext(input({ toolCall: { ...input().toolCall, arguments: raw } })));
    expect(error.fields).toEqual(['args']);
    expect(error.message).toMatch(/args/);
  });

  it('T1: executor is client only for gateway-dispatched calls', () => {
    expect(buildToolCallHookContext(input({ viaGateway: true })).executor).toBe('client');
    expect(buildToolCallHookContext(input({ viaGateway: false })).executor).toBe('server');
  });

  it('T1: a missing required field throws an error naming it', () => {
    const broken = { ...input(), assistantMessageId: undefined } as unknown as ToolCallHookContextInput;
    const error = contextError(() => buildToolCallHookContext(broken));
    expect(error.fields).toEqual(['assistantMessageId']);
    expect(error.message).toContain('assistantMessageId');
  });

  it('T1: every invalid field is named (native id missing, negative callIndex, fractional stepIndex)', () => {
    const broken = { ...input({ callIndex: -1, stepIndex: 1.5 }), toolCall: { identifier: 'x', apiName: 'y' } } as unknown as ToolCallHookContextInput;
    const error = contextError(() => buildToolCallHookContext(broken));
    expect(error.fields.sort()).toEqual(['callIndex', 'stepIndex', 'toolCallId']);
  });

  it('T1: the output satisfies the contract schema and the tool event schemas', () => {
    const context = buildToolCallHookContext(input({ context: { agentId: 'agent-1' }, runtime: { userId: 'u1' } }));
    expect(ToolCallHookContextSchema.safeParse(context).success).toBe(true);
    expect(EventSchemas.beforeToolCall.safeParse(context).success).toBe(true);
    expect(EventSchemas.onToolCallError.safeParse({ ...context, error: 'boom' }).success).toBe(true);
    expect(
      EventSchemas.afterToolCall.safeParse({ ...context, mocked: false, result: { content: 'x', success: true, state: { type: 'blocked' } } }).success,
    ).toBe(true);
  });

  it('T1: the input is not mutated and the args are a copy', () => {
    const args = { query: 'effective' };
    const given = input({ args });
    const snapshot = structuredClone(given);
    const context = buildToolCallHookContext(given);
    expect(given).toStrictEqual(snapshot);
    context.args.query = 'changed';
    expect(args.query).toBe('effective');
  });
});

describe('T2: optional correlation ids', () => {
  const correlation = {
    agentId: 'agent-1',
    topicId: 'topic-1',
    sessionId: 'session-1',
    threadId: 'thread-1',
    groupId: 'group-1',
    taskId: 'task-1',
    workspaceId: 'ws-1',
    documentId: 'doc-1',
    sourceMessageId: 'src-msg-1',
    toolMessageId: 'tool-msg-1',
    parentOperationId: 'parent-op',
  };

  it('T2: every correlation id from the execution context is carried', () => {
    expect(buildToolCallHookContext(input({ context: correlation }))).toMatchObject(correlation);
  });

  it('T2: absent correlation ids are omitted, not set to undefined', () => {
    const context = buildToolCallHookContext(input({ context: { agentId: 'agent-1', topicId: undefined } }));
    expect(Object.hasOwn(context, 'topicId')).toBe(false);
    expect(Object.keys(context)).toContain('agentId');
    for (const key of Object.keys(correlation).filter((k) => k !== 'agentId')) expect(Object.hasOwn(context, key)).toBe(false);
  });

  it.each([undefined, ''])('T2: parentOperationId (%j) is present only when a parent exists', (parent) => {
    const root = buildToolCallHookContext(input({ context: { parentOperationId: parent } }));
    expect(Object.hasOwn(root, 'parentOperationId')).toBe(false);
    const child = buildToolCallHookContext(input({ context: { parentOperationId: 'parent-op' } }));
    expect(child.parentOperationId).toBe('parent-op');
  });
});

describe('T3: identity and execution plan', () => {
  it.each([
    { runtimeUser: 'runtime-owner', originUser: 'origin-owner', expected: 'runtime-owner' },
    { runtimeUser: 'runtime-owner', originUser: undefined, expected: 'runtime-owner' },
    { runtimeUser: undefined, originUser: 'origin-owner', expected: 'origin-owner' },
    { runtimeUser: undefined, originUser: undefined, expected: undefined },
  ])('T3: userId = runtime.userId ?? origin.userId → $expected', ({ runtimeUser, originUser, expected }) => {
    const context = buildToolCallHookContext(input({ runtime: { userId: runtimeUser }, origin: { userId: originUser } }));
    expect(context.userId).toBe(expected);
    expect(Object.hasOwn(context, 'userId')).toBe(expected !== undefined);
  });

  it('T3: a userId inside the tool args is never used as the identity', () => {
    const context = buildToolCallHookContext(input({ args: { userId: 'attacker' }, origin: { userId: 'owner' } }));
    expect(context.userId).toBe('owner');
  });

  it('T3: toolSource, executionTarget and activeDeviceId are carried when given', () => {
    const context = buildToolCallHookContext(input({ toolSource: 'mcp', executionTarget: 'sandbox', activeDeviceId: 'device-1', viaGateway: true }));
    expect(context).toMatchObject({ toolSource: 'mcp', executionTarget: 'sandbox', activeDeviceId: 'device-1', executor: 'client' });
  });

  it('T3: without them those keys are absent', () => {
    const context = buildToolCallHookContext(input());
    for (const key of ['userId', 'toolSource', 'executionTarget', 'activeDeviceId']) expect(Object.hasOwn(context, key)).toBe(false);
  });
});

describe('buildToolCallHookContext: the flat form', () => {
  it('T1/T3: accepts the T1 field names directly; executor defaults to server; args may be a JSON string; runtime userId wins', () => {
    const ctx = buildToolCallHookContext({
      toolCallId: 'call_9',
      assistantMessageId: 'msg_9',
      identifier: 'files',
      apiName: 'write',
      args: '{"path":"a.txt"}',
      callIndex: 1,
      stepIndex: 4,
      operationId: 'op_9',
      userId: 'origin-user',
      runtime: { userId: 'runtime-user' },
      topicId: '',
    });
    expect(ctx).toEqual({
      toolCallId: 'call_9',
      assistantMessageId: 'msg_9',
      identifier: 'files',
      apiName: 'write',
      args: { path: 'a.txt' },
      callIndex: 1,
      stepIndex: 4,
      operationId: 'op_9',
      executor: 'server',
      userId: 'runtime-user',
    });
  });

  it('T1: a flat input missing a required field names it', () => {
    expect(() => buildToolCallHookContext({ toolCallId: 'c', identifier: 'a', apiName: 'b', operationId: 'o', callIndex: 0, stepIndex: 0 })).toThrow(
      /assistantMessageId/,
    );
  });
});

describe('DOOR-6 (T1): one validator, empty required ids refused on every path', () => {
  const flat = {
    toolCallId: 'call-1',
    assistantMessageId: 'assistant-1',
    identifier: 'search-tool',
    apiName: 'search',
    operationId: 'op-1',
    callIndex: 0,
    stepIndex: 0,
  };
  const structuredWith = (field: string): ToolCallHookContextInput => {
    const base = input();
    if (field === 'toolCallId') return { ...base, toolCall: { ...base.toolCall, id: '' } };
    if (field === 'identifier' || field === 'apiName') return { ...base, toolCall: { ...base.toolCall, [field]: '' } };
    return { ...base, [field]: '' };
  };

  it.each(['toolCallId', 'assistantMessageId', 'identifier', 'apiName'])(
    "DOOR-6 (T1): '' as %s is refused by the structured and the flat form, naming it",
    (field) => {
      const structured = contextError(() => buildToolCallHookContext(structuredWith(field)));
      expect(structured.fields).toEqual([field]);
      expect(structured.message).toContain(field);
      const flatError = contextError(() => buildToolCallHookContext({ ...flat, [field]: '' }));
      expect(flatError.fields).toEqual([field]);
    },
  );

  it.each(['toolCallId', 'assistantMessageId', 'identifier', 'apiName'])(
    "DOOR-6 (T1): evaluateToolCall / evaluateAfterToolCall refuse '' as %s (no allow for a call no id names)",
    async (field) => {
      const dispatcher = new HookDispatcher({ env: {} });
      try {
        await expect(dispatcher.evaluateToolCall('op-1', { ...flat, args: {}, executor: 'server' as const, [field]: '' })).rejects.toBeInstanceOf(
          ToolCallContextError,
        );
        await expect(
          dispatcher.evaluateAfterToolCall('op-1', { ...flat, args: {}, executor: 'server' as const, [field]: '' }, { content: 'x', success: true }),
        ).rejects.toBeInstanceOf(ToolCallContextError);
        expect(await dispatcher.evaluateToolCall('op-1', { ...flat, args: {}, executor: 'server' as const })).toEqual({ status: 'allow' });
      } finally {
        await dispatcher.close();
      }
    },
  );
});
