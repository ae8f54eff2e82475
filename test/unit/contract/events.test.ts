import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { BaseEventSchema, EventSchemas, MAX_EVENT_DEPTH, parseHookEvent, serializeEventJson } from '../../../src/contract/events.ts';
import { EventValidationError } from '../../../src/contract/errors.ts';
import { HOOK_TYPES, type HookType } from '../../../src/contract/hookTypes.ts';
import { ToolCallHookContextSchema, ToolCallResultSchema, BlockedToolResultSchema } from '../../../src/contract/toolContext.ts';
import { accepts, issuePath, paths, rejects } from './helpers.ts';

function zodPaths(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ZodError);
    return (error as ZodError).issues.map((i) => issuePath(i.path));
  }
  throw new Error('expected a ZodError');
}

describe('D10: event payload schemas', () => {
  it('there is one event schema per hook type (16)', () => {
    expect(Object.keys(EventSchemas).sort()).toEqual([...HOOK_TYPES].sort());
  });

  describe.each(HOOK_TYPES)('%s', (type: HookType) => {
    const schema = EventSchemas[type];

    it(`D10: ${type} accepts a minimal { operationId }`, () => {
      expect(parseHookEvent(type, { operationId: 'op_1' })).toEqual({ operationId: 'op_1' });
      expect(accepts(schema, { operationId: '' })).toEqual({ operationId: '' });
    });

    it(`D10: ${type} passes unknown keys through unchanged`, () => {
      const event = { operationId: 'op_1', customField: { deep: [1, 2] }, another: 'x', nullish: null };
      expect(parseHookEvent(type, event)).toEqual(event);
    });

    it(`D10: ${type} rejects a missing or non-string operationId naming operationId`, () => {
      expect(zodPaths(() => parseHookEvent(type, {}))).toEqual(['operationId']);
      for (const operationId of [1, null, undefined, { id: 'x' }, ['op']]) {
        expect(paths(rejects(schema, { operationId }))).toEqual(['operationId']);
      }
    });

    it(`D10: ${type} rejects a non-object event`, () => {
      for (const event of [null, 'op_1', 42, undefined]) expect(paths(rejects(schema, event))).toEqual(['']);
    });

    it(`D10: ${type} accepts stepIndex / callIndex integers ≥ 0`, () => {
      expect(parseHookEvent(type, { operationId: 'o', stepIndex: 0, callIndex: 0 })).toMatchObject({ stepIndex: 0, callIndex: 0 });
      expect(parseHookEvent(type, { operationId: 'o', stepIndex: 12, callIndex: 3 })).toMatchObject({ stepIndex: 12, callIndex: 3 });
    });

    it.each(['stepIndex', 'callIndex'])(`D10: ${type} rejects a negative, fractional or non-numeric %s naming it`, (field) => {
      for (const bad of [-1, 1.5, 0.1, Number.NaN, Number.POSITIVE_INFINITY, '1', null]) {
        expect(zodPaths(() => parseHookEvent(type, { operationId: 'o', [field]: bad }))).toEqual([field]);
      }
    });

    it(`D10: ${type} requires userId (where given) to be a string`, () => {
      expect(parseHookEvent(type, { operationId: 'o', userId: 'u_1' })).toMatchObject({ userId: 'u_1' });
      expect(paths(rejects(schema, { operationId: 'o', userId: 5 }))).toEqual(['userId']);
    });
  });
});

describe('D10: typed fields per event type', () => {
  const op = { operationId: 'op_1' };

  it('afterStep: content/usage are free-form; toolCalls/toolResults must be arrays', () => {
    const event = { ...op, content: 'hi', toolCalls: [{ id: 1 }], toolResults: [], usage: { tokens: 3 } };
    expect(parseHookEvent('afterStep', event)).toEqual(event);
    expect(paths(rejects(EventSchemas.afterStep, { ...op, toolCalls: 'x' }))).toEqual(['toolCalls']);
    expect(paths(rejects(EventSchemas.afterStep, { ...op, toolResults: {} }))).toEqual(['toolResults']);
  });

  it.each(['beforeToolCall', 'afterToolCall', 'onToolCallError'] as const)('T1: %s accepts a full tool context and checks its field types', (type) => {
    const context = {
      ...op,
      toolCallId: 'call_1',
      assistantMessageId: 'msg_1',
      identifier: 'web-search',
      apiName: 'search',
      args: { q: 'x' },
      callIndex: 0,
      stepIndex: 2,
      executor: 'server',
      agentId: 'agt',
      topicId: 'tpc',
      threadId: 'thr',
      userId: 'usr',
      toolSource: 'builtin',
      executionTarget: 'cloud',
      activeDeviceId: 'dev',
      parentOperationId: 'op_parent',
    };
    expect(parseHookEvent(type, context)).toEqual(context);
    expect(paths(rejects(EventSchemas[type], { ...op, args: 'q=x' }))).toEqual(['args']);
    expect(paths(rejects(EventSchemas[type], { ...op, executor: 'browser' }))).toEqual(['executor']);
    expect(paths(rejects(EventSchemas[type], { ...op, toolCallId: 7 }))).toEqual(['toolCallId']);
    expect(paths(rejects(EventSchemas[type], { ...op, identifier: null }))).toEqual(['identifier']);
    expect(paths(rejects(EventSchemas[type], { ...op, apiName: 1 }))).toEqual(['apiName']);
  });

  it('T4: afterToolCall result.success must be boolean when result is given', () => {
    expect(parseHookEvent('afterToolCall', { ...op, result: { content: 'ok', success: true, executionTime: 12, extra: 'kept' } })).toEqual({
      ...op,
      result: { content: 'ok', success: true, executionTime: 12, extra: 'kept' },
    });
    expect(zodPaths(() => parseHookEvent('afterToolCall', { ...op, result: { content: 'ok', success: 'yes' } }))).toEqual(['result.success']);
    expect(zodPaths(() => parseHookEvent('afterToolCall', { ...op, result: { content: 'ok' } }))).toEqual(['result.success']);
    expect(zodPaths(() => parseHookEvent('afterToolCall', { ...op, result: 'ok' }))).toEqual(['result']);
    expect(zodPaths(() => parseHookEvent('afterToolCall', { ...op, result: { content: 'x', success: true, executionTime: '1' } }))).toEqual([
      'result.executionTime',
    ]);
  });

  it('T4: afterToolCall result carries tool-owned blocked state unchanged; mocked must be boolean', () => {
    const result = { content: 'nope', success: false, error: 'x', state: { type: 'blocked', reason: 'tool said no' } };
    expect(parseHookEvent('afterToolCall', { ...op, result, mocked: true })).toEqual({ ...op, result, mocked: true });
    expect(paths(rejects(EventSchemas.afterToolCall, { ...op, mocked: 'true' }))).toEqual(['mocked']);
  });

  it('onToolCallError: error is free-form', () => {
    expect(parseHookEvent('onToolCallError', { ...op, error: new Error('boom') }).error).toBeInstanceOf(Error);
  });

  it('beforeHumanIntervention: pendingTools is an array of objects', () => {
    const event = { ...op, stepIndex: 1, pendingTools: [{ apiName: 'rm', identifier: 'fs', other: true }] };
    expect(parseHookEvent('beforeHumanIntervention', event)).toEqual(event);
    expect(paths(rejects(EventSchemas.beforeHumanIntervention, { ...op, pendingTools: {} }))).toEqual(['pendingTools']);
    expect(paths(rejects(EventSchemas.beforeHumanIntervention, { ...op, pendingTools: [{ apiName: 1 }] }))).toEqual(['pendingTools.0.apiName']);
  });

  it('afterHumanIntervention: action, toolCallId, rejectionReason are strings', () => {
    const event = { ...op, action: 'reject', toolCallId: 'c', rejectionReason: 'no' };
    expect(parseHookEvent('afterHumanIntervention', event)).toEqual(event);
    expect(paths(rejects(EventSchemas.afterHumanIntervention, { ...op, action: 1 }))).toEqual(['action']);
    expect(paths(rejects(EventSchemas.afterHumanIntervention, { ...op, rejectionReason: false }))).toEqual(['rejectionReason']);
  });

  it('onStopByHumanIntervention: toolCallId and rejectionReason are strings', () => {
    expect(parseHookEvent('onStopByHumanIntervention', { ...op, toolCallId: 'c', rejectionReason: 'r' })).toMatchObject({ toolCallId: 'c' });
    expect(paths(rejects(EventSchemas.onStopByHumanIntervention, { ...op, toolCallId: 1 }))).toEqual(['toolCallId']);
  });

  it('beforeCompact / onCompactError: tokenCount and messageCount are numbers', () => {
    expect(parseHookEvent('beforeCompact', { ...op, messageCount: 40, tokenCount: 9000, stepIndex: 3 })).toMatchObject({ messageCount: 40 });
    expect(paths(rejects(EventSchemas.beforeCompact, { ...op, messageCount: '40' }))).toEqual(['messageCount']);
    expect(paths(rejects(EventSchemas.beforeCompact, { ...op, tokenCount: '1' }))).toEqual(['tokenCount']);
    expect(parseHookEvent('onCompactError', { ...op, error: 'x', tokenCount: 5 })).toMatchObject({ tokenCount: 5 });
    expect(paths(rejects(EventSchemas.onCompactError, { ...op, tokenCount: '5' }))).toEqual(['tokenCount']);
  });

  it('afterCompact: groupId and summary are strings, message counts numbers', () => {
    const event = { ...op, groupId: 'g', messagesBefore: 40, messagesAfter: 4, summary: 's' };
    expect(parseHookEvent('afterCompact', event)).toEqual(event);
    expect(paths(rejects(EventSchemas.afterCompact, { ...op, messagesAfter: '4' }))).toEqual(['messagesAfter']);
    expect(paths(rejects(EventSchemas.afterCompact, { ...op, summary: 1 }))).toEqual(['summary']);
  });

  it('beforeCallAgent / afterCallAgent / onCallAgentError: agent fields', () => {
    expect(parseHookEvent('beforeCallAgent', { ...op, agentId: 'a', instruction: 'do', parentOperationId: 'p' })).toMatchObject({ agentId: 'a' });
    expect(paths(rejects(EventSchemas.beforeCallAgent, { ...op, instruction: 1 }))).toEqual(['instruction']);
    const after = { ...op, agentId: 'a', subOperationId: 's', success: true, threadId: 't' };
    expect(parseHookEvent('afterCallAgent', after)).toEqual(after);
    expect(paths(rejects(EventSchemas.afterCallAgent, { ...op, success: 'true' }))).toEqual(['success']);
    expect(paths(rejects(EventSchemas.afterCallAgent, { ...op, subOperationId: 1 }))).toEqual(['subOperationId']);
    expect(parseHookEvent('onCallAgentError', { ...op, agentId: 'a', error: { code: 1 } })).toMatchObject({ error: { code: 1 } });
    expect(paths(rejects(EventSchemas.onCallAgentError, { ...op, agentId: 5 }))).toEqual(['agentId']);
  });

  it('onComplete: reason is a string (done, error, interrupted, max_steps, cost_limit, …)', () => {
    for (const reason of ['done', 'error', 'interrupted', 'max_steps', 'cost_limit', 'something_new']) {
      expect(parseHookEvent('onComplete', { ...op, reason }).reason).toBe(reason);
    }
    expect(paths(rejects(EventSchemas.onComplete, { ...op, reason: 1 }))).toEqual(['reason']);
  });

  it('onError: errorMessage is a string, errorDetail free-form', () => {
    expect(parseHookEvent('onError', { ...op, errorMessage: 'm', errorDetail: { stack: 's' }, errorType: 'X' })).toMatchObject({ errorMessage: 'm' });
    expect(paths(rejects(EventSchemas.onError, { ...op, errorMessage: { m: 1 } }))).toEqual(['errorMessage']);
  });

  it('D10: the parsed event is a new object; the caller’s event is not changed', () => {
    const event = { operationId: 'o', stepIndex: 1, extra: { a: 1 } };
    const parsed = parseHookEvent('beforeStep', event);
    expect(parsed).not.toBe(event);
    expect(event).toEqual({ operationId: 'o', stepIndex: 1, extra: { a: 1 } });
  });

  it('D10: BaseEventSchema metadata must be an object', () => {
    expect(accepts(BaseEventSchema, { operationId: 'o', metadata: { k: 'v' } })).toMatchObject({ metadata: { k: 'v' } });
    expect(paths(rejects(BaseEventSchema, { operationId: 'o', metadata: 'x' }))).toEqual(['metadata']);
  });
});

describe('T1 / R5b: tool context and blocked result schemas', () => {
  const context = {
    toolCallId: 'c',
    assistantMessageId: 'm',
    identifier: 'i',
    apiName: 'a',
    args: {},
    callIndex: 0,
    stepIndex: 0,
    operationId: 'o',
    executor: 'client',
  };

  it('T1: every required context field is required, naming it', () => {
    expect(accepts(ToolCallHookContextSchema, context)).toEqual(context);
    for (const field of Object.keys(context)) {
      const { [field]: _omit, ...rest } = context as Record<string, unknown>;
      expect(paths(rejects(ToolCallHookContextSchema, rest))).toEqual([field]);
    }
    expect(paths(rejects(ToolCallHookContextSchema, { ...context, callIndex: -1 }))).toEqual(['callIndex']);
    expect(paths(rejects(ToolCallHookContextSchema, { ...context, stepIndex: 0.5 }))).toEqual(['stepIndex']);
  });

  it('T4: a tool result needs content and a boolean success', () => {
    expect(accepts(ToolCallResultSchema, { content: null, success: false })).toEqual({ content: null, success: false });
    expect(paths(rejects(ToolCallResultSchema, { content: 'x' }))).toEqual(['success']);
  });

  it('R5b: the blocked before / after shapes are accepted, others rejected', () => {
    accepts(BlockedToolResultSchema, { content: 'r', success: false, error: 'hook_denied', state: { type: 'blocked', reason: 'r' }, executionTime: 0 });
    accepts(BlockedToolResultSchema, { content: 'r', success: false, error: 'hook_denied', state: { phase: 'afterToolCall', type: 'blocked', reason: 'r' } });
    expect(paths(rejects(BlockedToolResultSchema, { content: 'r', success: true, error: 'hook_denied', state: { type: 'blocked', reason: 'r' } }))).toEqual([
      'success',
    ]);
    expect(paths(rejects(BlockedToolResultSchema, { content: 'r', success: false, error: 'other', state: { type: 'blocked', reason: 'r' } }))).toEqual([
      'error',
    ]);
    expect(paths(rejects(BlockedToolResultSchema, { content: 'r', success: false, error: 'hook_denied', state: { type: 'blocked' } }))).toEqual([
      'state.reason',
    ]);
  });
});

describe('D10: events are serialized with a typed error, never a raw RangeError', () => {
  const nest = (levels: number): unknown => {
    let v: unknown = {};
    for (let i = 1; i < levels; i += 1) v = [v];
    return v;
  };

  it('D10: up to MAX_EVENT_DEPTH levels serialize; one more is an EventValidationError naming the rule', () => {
    expect(serializeEventJson(nest(MAX_EVENT_DEPTH))).toMatch(/^\[+\{\}\]+$/);
    expect(() => serializeEventJson(nest(MAX_EVENT_DEPTH + 1))).toThrow(EventValidationError);
    expect(() => serializeEventJson(nest(10_000), 'payload')).toThrow(/^payload nests objects\/arrays more than 256 levels deep/);
  });

  it('D10: a cycle and a BigInt are EventValidationErrors (a TypeError subclass), scalars pass', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.me = cyclic;
    expect(() => serializeEventJson(cyclic)).toThrow(EventValidationError);
    expect(() => serializeEventJson({ n: 1n })).toThrow(TypeError);
    expect(serializeEventJson({ a: 'x', n: 1, d: new Date(0) })).toBe('{"a":"x","n":1,"d":"1970-01-01T00:00:00.000Z"}');
  });
});
