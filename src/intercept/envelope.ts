import { AgentContextCoreSchema, ConditionalSchemas, type AgentContext } from '../contract/agentHooks.ts';
import { DEFAULT_MAX_DEPTH, findDomainViolation } from './json/canonicalJson.ts';
import { isObject } from '../util/isObject.ts';

/** AGENT-HOOKS-0.1's recommended serialized-size bound. */
export const DEFAULT_MAX_CONTEXT_BYTES = 5 * 1024 * 1024;

export type EnvelopeLimits = { maxDepth?: number; maxContextBytes?: number };

export type EnvelopeCheck = { ok: true; context: AgentContext } | { ok: false; detail: string };

type Issue = { path: PropertyKey[]; message: string };

function describe(issue: Issue | undefined): string {
  if (issue === undefined) return '$: invalid';
  const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  return `$${path}: ${issue.message}`;
}

/**
 * Envelope check, run before any dispatch: the JSON value domain and
 * bounds, the required core, and the point's conditional
 * members (presence and JSON type). Details name paths, never values.
 */
export function validateEnvelope(ctx: unknown, limits: EnvelopeLimits = {}): EnvelopeCheck {
  if (!isObject(ctx)) return { ok: false, detail: '$: context must be a JSON object' };
  const violation = findDomainViolation(ctx, limits.maxDepth ?? DEFAULT_MAX_DEPTH);
  if (violation !== null) return { ok: false, detail: violation };
  const maxBytes = limits.maxContextBytes ?? DEFAULT_MAX_CONTEXT_BYTES;
  if (Buffer.byteLength(JSON.stringify(ctx), 'utf8') > maxBytes) {
    return { ok: false, detail: `$: serialized context exceeds ${maxBytes} bytes` };
  }
  const core = AgentContextCoreSchema.safeParse(ctx);
  if (!core.success) return { ok: false, detail: describe(core.error.issues[0]) };
  const conditional = ConditionalSchemas[core.data.interception_point].safeParse(ctx);
  if (!conditional.success) return { ok: false, detail: describe(conditional.error.issues[0]) };
  return { ok: true, context: ctx as AgentContext };
}
