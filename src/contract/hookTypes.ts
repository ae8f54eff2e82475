import { z } from 'zod';

/** The 16 lifecycle hook types, in their documented order (docs/hooks-and-dispatch.md). */
export const HOOK_TYPES = [
  'beforeStep',
  'afterStep',
  'beforeToolCall',
  'afterToolCall',
  'onToolCallError',
  'beforeHumanIntervention',
  'afterHumanIntervention',
  'onStopByHumanIntervention',
  'beforeCompact',
  'afterCompact',
  'onCompactError',
  'beforeCallAgent',
  'afterCallAgent',
  'onCallAgentError',
  'onComplete',
  'onError',
] as const;

export const HookTypeSchema = z.enum(HOOK_TYPES);
export type HookType = z.infer<typeof HookTypeSchema>;

/**
 * A3: the approval events a webhook hook may subscribe to. They are not lifecycle events: the
 * approval queue enqueues them (never `dispatch`), to the operation's hooks subscribed to them and
 * to the configured approver URL, signed and retried like every delivery.
 */
const APPROVAL_EVENT_TYPES = ['approval.requested', 'approval.resolved'] as const;
export type ApprovalEventType = (typeof APPROVAL_EVENT_TYPES)[number];

/** What a webhook hook may subscribe to and a delivery may carry: the 16 lifecycle events and the approval events. */
export const DeliveryEventTypeSchema = z.enum([...HOOK_TYPES, ...APPROVAL_EVENT_TYPES]);
export type DeliveryEventType = z.infer<typeof DeliveryEventTypeSchema>;

export function isApprovalEventType(type: unknown): type is ApprovalEventType {
  return typeof type === 'string' && (APPROVAL_EVENT_TYPES as readonly string[]).includes(type);
}

export function isDeliveryEventType(type: unknown): type is DeliveryEventType {
  return isHookType(type) || isApprovalEventType(type);
}

/** Tool events: the only ones a `matcher` may be placed on (D4). */
export const TOOL_HOOK_TYPES = ['beforeToolCall', 'afterToolCall', 'onToolCallError'] as const satisfies readonly HookType[];
/** Events on which a hook may be a decision control (`responseHandling: 'toolCall'`, W1a). */
export const CONTROL_HOOK_TYPES = ['beforeToolCall', 'afterToolCall'] as const satisfies readonly HookType[];

export function isToolHookType(type: string): boolean {
  return (TOOL_HOOK_TYPES as readonly string[]).includes(type);
}

export function isControlHookType(type: string): boolean {
  return (CONTROL_HOOK_TYPES as readonly string[]).includes(type);
}

export function isHookType(type: unknown): type is HookType {
  return typeof type === 'string' && (HOOK_TYPES as readonly string[]).includes(type);
}

/** Ids reserved for environment hooks (E3/E4). */
export const ENV_HOOK_ID_PREFIX = 'server-env-webhook:';

/** E3/E4: whether `id` is reserved for an environment hook. */
export function isEnvHookId(id: unknown): boolean {
  return typeof id === 'string' && id.startsWith(ENV_HOOK_ID_PREFIX);
}

/** L1/E4: whether a raw (unvalidated) hook entry carries an environment hook's id. */
export function hasEnvHookId(raw: unknown): boolean {
  return raw !== null && typeof raw === 'object' && isEnvHookId((raw as { id?: unknown }).id);
}

/**
 * E4: environment hooks hookrelay itself hands to a producer (queue-mode dispatch). Membership is
 * by object identity, so no caller data (JSON, a copied object) can claim it: a caller's hook with
 * a reserved id is refused at every entry, `producer.enqueue` included.
 */
const builtEnvironmentHooks = new WeakSet<object>();

/** Marks a serialized hook as one of hookrelay's own environment hooks (E3). */
export function markEnvironmentHook<T extends object>(hook: T): T {
  builtEnvironmentHooks.add(hook);
  return hook;
}

/** Whether `raw` is an object hookrelay marked as its own environment hook. */
export function isMarkedEnvironmentHook(raw: unknown): boolean {
  return raw !== null && typeof raw === 'object' && builtEnvironmentHooks.has(raw);
}

/** L1/E4: environment hooks are never restored: entries with a reserved id are dropped (anything but an array passes through, for the caller's validation to report). */
export function withoutEnvHookIds<T>(hooks: readonly T[]): T[] {
  if (!Array.isArray(hooks)) return hooks as unknown as T[];
  return hooks.filter((h) => !hasEnvHookId(h));
}
