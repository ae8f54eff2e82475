import { ToolCallHookContextSchema, type ToolCallHookContext } from '../contract/index.ts';
import { isObject } from '../util/isObject.ts';
import { ToolCallContextError } from '../contract/errors.ts';

/** The tool call as the model emitted it; `arguments` may still be the raw JSON string. */
type ToolCallInput = {
  /** The native (provider) tool call id. */
  id: string;
  identifier: string;
  apiName: string;
  arguments?: Record<string, unknown> | string;
};

/** T2: correlation ids taken from the execution context. */
type ToolCallCorrelation = {
  agentId?: string;
  topicId?: string;
  sessionId?: string;
  threadId?: string;
  groupId?: string;
  taskId?: string;
  workspaceId?: string;
  documentId?: string;
  sourceMessageId?: string;
  toolMessageId?: string;
  /** Only set for a child operation; a root operation has none. */
  parentOperationId?: string;
};

export type ToolCallHookContextInput = {
  toolCall: ToolCallInput;
  /** The effective args after preparation; defaults to the parsed `toolCall.arguments`. */
  args?: Record<string, unknown>;
  assistantMessageId: string;
  operationId: string;
  callIndex: number;
  stepIndex: number;
  /** T3: the call is forwarded to a client through the gateway (`executor: 'client'`). */
  viaGateway?: boolean;
  runtime?: { userId?: string };
  origin?: { userId?: string };
  context?: ToolCallCorrelation;
  toolSource?: string;
  executionTarget?: string;
  activeDeviceId?: string;
};

/**
 * The same context given flat, with the T1–T3 field names themselves (what a runtime that already
 * holds a prepared call has); `args` may be a JSON string; `executor` defaults to `server`.
 */
export type FlatToolCallHookContextInput = Partial<Omit<ToolCallHookContext, 'args'>> & {
  toolCallId: string;
  identifier: string;
  apiName: string;
  args?: Record<string, unknown> | string;
  runtime?: { userId?: string };
  origin?: { userId?: string };
};

const CORRELATION_KEYS = [
  'agentId',
  'topicId',
  'sessionId',
  'threadId',
  'groupId',
  'taskId',
  'workspaceId',
  'documentId',
  'sourceMessageId',
  'toolMessageId',
  'parentOperationId',
] as const satisfies readonly (keyof ToolCallCorrelation)[];

/** Models send `""` for a call without arguments; anything else must be a JSON object. */
function effectiveArgs(input: ToolCallHookContextInput): Record<string, unknown> {
  if (input.args !== undefined) return input.args;
  const raw = input.toolCall.arguments;
  if (raw === undefined || raw === '') return {};
  if (typeof raw !== 'string') return raw;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ToolCallContextError(['args'], 'args: toolCall.arguments is not valid JSON (pass the effective args as `args`)');
  }
  if (!isObject(parsed)) throw new ToolCallContextError(['args'], 'args: toolCall.arguments must encode a JSON object');
  return parsed;
}

/** An empty id correlates nothing (and "no parent" must not appear as `''`), so it is omitted too. */
function setIfPresent(target: Record<string, unknown>, key: string, value: string | undefined): void {
  if (value !== undefined && value !== '') target[key] = value;
}

/**
 * T1–T3: the one context the three tool events carry. Optional keys that have no value are
 * omitted rather than set to undefined, so payload projections only see real fields.
 * Throws ToolCallContextError naming every missing or invalid field.
 */
export function buildToolCallHookContext(input: ToolCallHookContextInput | FlatToolCallHookContextInput): ToolCallHookContext {
  if (!isStructured(input)) return buildFromFlat(input);
  const draft: Record<string, unknown> = {
    toolCallId: input.toolCall.id,
    assistantMessageId: input.assistantMessageId,
    identifier: input.toolCall.identifier,
    apiName: input.toolCall.apiName,
    args: effectiveArgs(input),
    callIndex: input.callIndex,
    stepIndex: input.stepIndex,
    operationId: input.operationId,
    executor: input.viaGateway === true ? 'client' : 'server',
  };
  for (const key of CORRELATION_KEYS) setIfPresent(draft, key, input.context?.[key]);
  setIfPresent(draft, 'userId', input.runtime?.userId ?? input.origin?.userId);
  setIfPresent(draft, 'toolSource', input.toolSource);
  setIfPresent(draft, 'executionTarget', input.executionTarget);
  setIfPresent(draft, 'activeDeviceId', input.activeDeviceId);

  return parseToolCallHookContext(draft);
}

function isStructured(input: ToolCallHookContextInput | FlatToolCallHookContextInput): input is ToolCallHookContextInput {
  return isObject((input as { toolCall?: unknown }).toolCall);
}

function buildFromFlat(input: FlatToolCallHookContextInput): ToolCallHookContext {
  const { runtime, origin, args, ...fields } = input;
  const draft: Record<string, unknown> = { executor: 'server' };
  for (const [key, value] of Object.entries(fields)) if (value !== undefined && value !== '') draft[key] = value;
  draft.args = effectiveArgs({
    toolCall: { id: input.toolCallId, identifier: input.identifier, apiName: input.apiName, arguments: args },
  } as ToolCallHookContextInput);
  setIfPresent(draft, 'userId', runtime?.userId ?? origin?.userId ?? (typeof input.userId === 'string' ? input.userId : undefined)); // T3
  return parseToolCallHookContext(draft);
}

/**
 * T1: the one validator of a tool context, whatever built it (the structured and flat forms here,
 * a deferred result's rebuild in the operation store): the contract schema, required ids non-empty.
 * Throws ToolCallContextError naming every missing or invalid field.
 */
export function parseToolCallHookContext(draft: Record<string, unknown>): ToolCallHookContext {
  const parsed = ToolCallHookContextSchema.safeParse(draft);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.map(String).join('.') || '(root)'))];
    const detail = parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`).join('; ');
    throw new ToolCallContextError(fields, `invalid tool context (${detail})`);
  }
  return parsed.data;
}

const REQUIRED_IDS = ['toolCallId', 'assistantMessageId', 'identifier', 'apiName'] as const;

/**
 * T1 on the decision path: `evaluateToolCall` takes a loose context (fields may be left out), but
 * a required id given as `''` identifies no call and is refused as the builders refuse it.
 */
export function refuseEmptyToolCallIds(context: Record<string, unknown>): void {
  const empty = REQUIRED_IDS.filter((key) => context[key] === '');
  if (empty.length > 0) throw new ToolCallContextError(empty, `invalid tool context (${empty.map((k) => `${k}: must be a non-empty string`).join('; ')})`);
}
