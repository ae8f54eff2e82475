import { z } from 'zod';
import { EventValidationError } from './errors.ts';
import type { HookType } from './hookTypes.ts';
import { ToolCallHookContextSchema, ToolCallResultSchema } from './toolContext.ts';

const NonNegativeInt = z.number().int().min(0);

/**
 * D10: events are validated loosely. Only a string `operationId` is required; the typed fields
 * are optional and unknown keys pass through. `stepIndex` / `callIndex` are integers ≥ 0.
 */
export const BaseEventSchema = z.looseObject({
  operationId: z.string(),
  stepIndex: NonNegativeInt.optional(),
  callIndex: NonNegativeInt.optional(),
  userId: z.string().optional(),
  agentId: z.string().optional(),
  topicId: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/**
 * D10: what `dispatch` and `enqueue` accept: any object with a string `operationId`; only
 * `stepIndex` / `callIndex` are checked (integers ≥ 0); every other key passes through untyped.
 */
export const IngestEventSchema = z.looseObject({
  operationId: z.string(),
  stepIndex: NonNegativeInt.optional(),
  callIndex: NonNegativeInt.optional(),
});
export type IngestEvent = z.infer<typeof IngestEventSchema>;

const toolContextFields = ToolCallHookContextSchema.partial().extend({ operationId: z.string() });

export const EventSchemas = {
  beforeStep: BaseEventSchema,
  afterStep: BaseEventSchema.extend({
    content: z.unknown().optional(),
    toolCalls: z.array(z.unknown()).optional(),
    toolResults: z.array(z.unknown()).optional(),
    usage: z.unknown().optional(),
  }),
  beforeToolCall: BaseEventSchema.extend(toolContextFields.shape),
  afterToolCall: BaseEventSchema.extend(toolContextFields.shape).extend({
    result: ToolCallResultSchema.optional(),
    mocked: z.boolean().optional(),
  }),
  onToolCallError: BaseEventSchema.extend(toolContextFields.shape).extend({ error: z.unknown().optional() }),
  beforeHumanIntervention: BaseEventSchema.extend({
    pendingTools: z.array(z.looseObject({ apiName: z.string().optional(), identifier: z.string().optional() })).optional(),
  }),
  afterHumanIntervention: BaseEventSchema.extend({
    action: z.string().optional(),
    toolCallId: z.string().optional(),
    rejectionReason: z.string().optional(),
  }),
  onStopByHumanIntervention: BaseEventSchema.extend({
    toolCallId: z.string().optional(),
    rejectionReason: z.string().optional(),
  }),
  beforeCompact: BaseEventSchema.extend({ messageCount: z.number().optional(), tokenCount: z.number().optional() }),
  afterCompact: BaseEventSchema.extend({
    groupId: z.string().optional(),
    messagesBefore: z.number().optional(),
    messagesAfter: z.number().optional(),
    summary: z.string().optional(),
  }),
  onCompactError: BaseEventSchema.extend({ error: z.unknown().optional(), tokenCount: z.number().optional() }),
  beforeCallAgent: BaseEventSchema.extend({
    agentId: z.string().optional(),
    instruction: z.string().optional(),
    parentOperationId: z.string().optional(),
  }),
  afterCallAgent: BaseEventSchema.extend({
    agentId: z.string().optional(),
    subOperationId: z.string().optional(),
    success: z.boolean().optional(),
    threadId: z.string().optional(),
    parentOperationId: z.string().optional(),
  }),
  onCallAgentError: BaseEventSchema.extend({
    agentId: z.string().optional(),
    error: z.unknown().optional(),
    parentOperationId: z.string().optional(),
  }),
  onComplete: BaseEventSchema.extend({
    reason: z.string().optional(),
    status: z.string().optional(),
    lastAssistantContent: z.unknown().optional(),
  }),
  onError: BaseEventSchema.extend({
    errorMessage: z.string().optional(),
    errorDetail: z.unknown().optional(),
    errorType: z.string().optional(),
  }),
} as const satisfies Record<HookType, z.ZodType>;

export type HookEvent = z.infer<typeof BaseEventSchema>;
export type HookEventOf<T extends HookType> = z.infer<(typeof EventSchemas)[T]>;

/** D10: parse an event loosely for its type; throws a ZodError naming the field. */
export function parseHookEvent<T extends HookType>(type: T, event: unknown): HookEventOf<T> {
  return EventSchemas[type].parse(event) as HookEventOf<T>;
}

/**
 * D10: how deeply an event (and so its payload) may nest objects and arrays. Far beyond any real
 * event, far below what exhausts a stack in JSON.stringify, Postgres or a receiver's parser, so an
 * event accepted here can be stored, delivered and replayed the same way.
 */
export const MAX_EVENT_DEPTH = 256;

/** True when `value` nests objects/arrays more than `maxDepth` levels (a cycle nests forever). Bounded recursion. */
function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (maxDepth === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) if (nestsDeeperThan(value[i], maxDepth - 1)) return true;
    return false;
  }
  for (const key of Object.keys(value)) if (nestsDeeperThan((value as Record<string, unknown>)[key], maxDepth - 1)) return true;
  return false;
}

/**
 * D10: JSON text of an event or payload, or an EventValidationError (never a raw RangeError from
 * JSON.stringify): too deep (or cyclic) per MAX_EVENT_DEPTH, or not serializable (a BigInt).
 */
export function serializeEventJson(value: unknown, label = 'event'): string {
  if (nestsDeeperThan(value, MAX_EVENT_DEPTH)) {
    throw new EventValidationError(`${label} nests objects/arrays more than ${MAX_EVENT_DEPTH} levels deep (or contains a cycle)`);
  }
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new EventValidationError(`${label} is not JSON-serializable (a BigInt or a cycle)`);
    throw error;
  }
}
