import { z } from 'zod';
import { DeliveryEventTypeSchema, ENV_HOOK_ID_PREFIX, HookTypeSchema, isApprovalEventType, isToolHookType, type DeliveryEventType } from './hookTypes.ts';
import { matcherProblem } from './matcher.ts';
import { controlCharacterProblem } from './terminalText.ts';
import { controlTypeProblem, EnvironmentWebhookConfigSchema, WebhookConfigSchema, type WebhookConfig, type WebhookConfigInput } from './webhook.ts';

/** A handler: any function. Return values are ignored; a thrown error is logged (D5). */
export type HookHandler = (event: Record<string, unknown> & { operationId: string }) => unknown;

/** D4 / SEC-H4: absent, `''` or `'*'` match every tool; anything else must compile on RE2 (matcher.ts). */
export { matcherProblem };

const MatcherSchema = z.string().superRefine((m, ctx) => {
  const problem = matcherProblem(m);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const HandlerSchema = z.custom<HookHandler>((v) => typeof v === 'function', { message: 'must be a function' });

type HookShape = { id: string; type: DeliveryEventType; matcher?: string; webhook?: WebhookConfig };

/** Rules that cross fields (D4 matcher placement, W1a control type, E4 reserved ids). */
function crossFieldRules(hook: HookShape, ctx: z.RefinementCtx): void {
  if (hook.id.startsWith(ENV_HOOK_ID_PREFIX)) {
    ctx.addIssue({ code: 'custom', path: ['id'], message: `ids starting with "${ENV_HOOK_ID_PREFIX}" are reserved for environment hooks` });
  }
  if (hook.id.length === 0) ctx.addIssue({ code: 'custom', path: ['id'], message: 'must not be empty' });
  const unprintable = controlCharacterProblem(hook.id);
  if (unprintable !== undefined) ctx.addIssue({ code: 'custom', path: ['id'], message: unprintable });
  if (hook.matcher !== undefined && !isToolHookType(hook.type)) {
    ctx.addIssue({ code: 'custom', path: ['matcher'], message: 'is only allowed on beforeToolCall, afterToolCall and onToolCallError' });
  }
  if (hook.webhook) {
    const problem = controlTypeProblem(hook.type, hook.webhook);
    if (problem) ctx.addIssue({ code: 'custom', path: ['webhook', 'responseHandling'], message: problem });
  }
}

/** The persisted form (D3, L2): `{ id, type, matcher?, webhook }`; templates stay unresolved. */
export const SerializedHookSchema = z
  .strictObject({
    id: z.string(),
    type: DeliveryEventTypeSchema,
    matcher: MatcherSchema.optional(),
    webhook: WebhookConfigSchema,
  })
  .superRefine(crossFieldRules);

/**
 * An environment hook carried through the ledger (E3, D8), checked under its event name (its
 * reserved id stripped): like a serialized hook, but it may read `AGENT_HOOK_WEBHOOK_*` (W2).
 */
export const EnvironmentSerializedHookSchema = z
  .strictObject({
    id: z.string(),
    type: HookTypeSchema,
    matcher: MatcherSchema.optional(),
    webhook: EnvironmentWebhookConfigSchema,
  })
  .superRefine(crossFieldRules);

/** A serialized hook as written by callers: the webhook's defaulted fields are optional. */
export type SerializedHook = z.input<typeof SerializedHookSchema>;
/** A serialized hook after validation: defaults applied. */
export type ParsedSerializedHook = z.output<typeof SerializedHookSchema>;

/** A hook registered in code (D3): a handler, a webhook, or both. */
export const AgentHookSchema = z
  .strictObject({
    id: z.string(),
    type: DeliveryEventTypeSchema,
    matcher: MatcherSchema.optional(),
    handler: HandlerSchema.optional(),
    webhook: WebhookConfigSchema.optional(),
  })
  .superRefine((hook, ctx) => {
    crossFieldRules(hook, ctx);
    if (!hook.handler && !hook.webhook) {
      ctx.addIssue({ code: 'custom', path: ['handler'], message: 'a hook needs a handler, a webhook, or both' });
    }
    if (hook.handler && isApprovalEventType(hook.type)) {
      ctx.addIssue({
        code: 'custom',
        path: ['handler'],
        message: `${hook.type} is delivered as a webhook by the approval queue, never dispatched: give a webhook, no handler`,
      });
    }
    if (hook.handler && hook.webhook?.responseHandling === 'toolCall') {
      ctx.addIssue({ code: 'custom', path: ['handler'], message: "a control (responseHandling 'toolCall') cannot also have a handler" });
    }
  });

export type AgentHook = {
  id: string;
  type: DeliveryEventType;
  matcher?: string;
  handler?: HookHandler;
  webhook?: WebhookConfigInput;
};
export type ParsedAgentHook = z.output<typeof AgentHookSchema>;

/** A control is a webhook whose HTTP answer can allow or deny a tool call (R1). */
export function isControlHook(hook: { webhook?: Pick<WebhookConfig, 'responseHandling'> }): boolean {
  return hook.webhook?.responseHandling === 'toolCall';
}

/** The serialized form of a parsed hook; undefined when it has no webhook (handlers do not survive a restart). */
export function serializeHook(hook: ParsedAgentHook): ParsedSerializedHook | undefined {
  if (!hook.webhook) return undefined;
  const out: ParsedSerializedHook = { id: hook.id, type: hook.type, webhook: structuredClone(hook.webhook) };
  if (hook.matcher !== undefined) out.matcher = hook.matcher;
  return out;
}
