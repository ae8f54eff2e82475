import { InterceptionPointSchema, type AgentContext, type InterceptionPoint, type JsonValue } from '../contract/agentHooks.ts';
import { isObject } from '../util/isObject.ts';

export const INTERCEPTION_POINTS: readonly InterceptionPoint[] = InterceptionPointSchema.options;

/** Where each point's `target` lives in the context (the alias a transform writes back to). */
const TARGET_ALIAS: Record<InterceptionPoint, readonly [string] | readonly [string, string]> = {
  agent_startup: ['agent_init'],
  input: ['input'],
  pre_model_call: ['messages'],
  post_model_call: ['response'],
  pre_tool_call: ['tool_call', 'args'],
  post_tool_call: ['tool_result', 'value'],
  output: ['output'],
  agent_shutdown: ['summary'],
};

export function isInterceptionPoint(v: unknown): v is InterceptionPoint {
  return typeof v === 'string' && (INTERCEPTION_POINTS as readonly string[]).includes(v);
}

/** Session boundaries define no mutable target. */
export function transformPermitted(point: InterceptionPoint): boolean {
  return point !== 'agent_startup' && point !== 'agent_shutdown';
}

/** Write-back: set `target` and mirror it into the field it aliases, so the action observes it. */
export function writeTarget(ctx: AgentContext, target: JsonValue): void {
  ctx.target = target;
  const alias = TARGET_ALIAS[ctx.interception_point];
  if (alias.length === 1) {
    ctx[alias[0]] = structuredClone(target);
    return;
  }
  const holder = ctx[alias[0]];
  if (isObject(holder)) {
    (holder as Record<string, unknown>)[alias[1]] = structuredClone(target);
  }
}
