import { z } from 'zod';
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
