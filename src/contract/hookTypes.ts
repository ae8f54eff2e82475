import { z } from 'zod';

/** The 16 lifecycle hook types (SPEC §1), in the order the spec lists them. */
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
