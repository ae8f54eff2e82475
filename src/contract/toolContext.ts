import { z } from 'zod';

const NonNegativeInt = z.number().int().min(0);
/** T1: a required id identifies the call; `''` identifies nothing, so it is refused like a missing one. */
const RequiredId = z.string().min(1, 'must be a non-empty string');

/** T4: the structured result of a tool call. Unknown keys pass through (tool-owned state). */
export const ToolCallResultSchema = z.looseObject({
  content: z.unknown(),
  success: z.boolean(),
  error: z.unknown().optional(),
  state: z.unknown().optional(),
  executionTime: z.number().optional(),
  deviceExecutionTime: z.number().optional(),
  stop: z.boolean().optional(),
  workRegistration: z.unknown().optional(),
});
export type ToolCallResult = z.infer<typeof ToolCallResultSchema>;

/** T1–T3: the context every tool event carries. */
export const ToolCallHookContextSchema = z.looseObject({
  // T1 (required; the ids non-empty on every path: structured, flat, a deferred result's rebuild)
  toolCallId: RequiredId,
  assistantMessageId: RequiredId,
  identifier: RequiredId,
  apiName: RequiredId,
  args: z.record(z.string(), z.unknown()),
  callIndex: NonNegativeInt,
  stepIndex: NonNegativeInt,
  operationId: z.string(),
  executor: z.enum(['server', 'client']),
  // T2 (optional correlation ids)
  agentId: z.string().optional(),
  topicId: z.string().optional(),
  sessionId: z.string().optional(),
  threadId: z.string().optional(),
  groupId: z.string().optional(),
  taskId: z.string().optional(),
  workspaceId: z.string().optional(),
  documentId: z.string().optional(),
  sourceMessageId: z.string().optional(),
  toolMessageId: z.string().optional(),
  parentOperationId: z.string().optional(),
  // T3
  userId: z.string().optional(),
  toolSource: z.string().optional(),
  executionTarget: z.string().optional(),
  activeDeviceId: z.string().optional(),
});
export type ToolCallHookContext = z.infer<typeof ToolCallHookContextSchema>;

/** R5b: what a blocked tool call yields. */
export const BlockedToolResultSchema = z.looseObject({
  content: z.string(),
  success: z.literal(false),
  error: z.literal('hook_denied'),
  state: z.looseObject({
    type: z.literal('blocked'),
    reason: z.string(),
    phase: z.literal('afterToolCall').optional(),
  }),
  executionTime: z.number().optional(),
});
export type BlockedToolResult = z.infer<typeof BlockedToolResultSchema>;
