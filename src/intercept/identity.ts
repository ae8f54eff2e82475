import { createHash } from 'node:crypto';
import type { AgentContext, InterceptionPoint } from '../contract/agentHooks.ts';
import { canonicalizeJcs } from './json/canonicalJson.ts';
import { validateEnvelope } from './envelope.ts';
import { HostError } from './reasons.ts';
import { HostFailureError } from '../contract/errors.ts';
import { isObject } from '../util/isObject.ts';

/** The default provider's name. */
export const JCS_SHA256 = 'jcs-sha256';

/** Member whitelist: `null` keeps the value whole, a list keeps only those subfields. */
type Keep = readonly [string, readonly string[] | null];

const REQUIRED: readonly Keep[] = [
  ['spec', null],
  ['interception_point', null],
  ['timestamp', null],
  ['sequence', null],
  ['agent', ['id', 'framework']],
  ['session', ['id']],
  ['target', null],
];

/** The closed per-point projection the identity covers, mirroring the per-point schemas' required members. */
const CONDITIONAL: Record<InterceptionPoint, readonly Keep[]> = {
  agent_startup: [['agent_init', ['tools_registered']]],
  input: [['input', ['content', 'role']]],
  pre_model_call: [
    ['model', ['id']],
    ['messages', null],
  ],
  post_model_call: [
    ['model', ['id']],
    ['response', ['content', 'tool_calls', 'finish_reason']],
  ],
  pre_tool_call: [['tool_call', ['id', 'name', 'args']]],
  post_tool_call: [
    ['tool_call', ['id', 'name', 'args']],
    ['tool_result', ['value', 'is_error']],
  ],
  output: [['output', ['content']]],
  agent_shutdown: [['summary', ['reason']]],
};

/** `ctx_rc`: the required+conditional projection; optional and namespaced data never reach the hash. */
export function projectIdentityPreimage(ctx: AgentContext): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, sub] of [...REQUIRED, ...CONDITIONAL[ctx.interception_point]]) {
    const v: unknown = ctx[key];
    if (v === undefined) continue;
    if (sub === null || !isObject(v)) {
      out[key] = v;
      continue;
    }
    const picked: Record<string, unknown> = {};
    for (const k of sub) if ((v as Record<string, unknown>)[k] !== undefined) picked[k] = (v as Record<string, unknown>)[k];
    out[key] = picked;
  }
  return out;
}

/**
 * The `jcs-sha256` provider: `sha256:` + hex(SHA-256(JCS(ctx_rc))).
 * Refuses (throws `HostFailureError(context_invalid)`) an envelope that fails
 * the envelope check — no identity over a guessed preimage — and any non-I-JSON projection.
 */
export function jcsSha256Identity(ctx: unknown): string {
  const checked = validateEnvelope(ctx);
  if (!checked.ok) throw new HostFailureError(HostError.ContextInvalid, checked.detail);
  const canonical = canonicalizeJcs(projectIdentityPreimage(checked.context));
  return `sha256:${createHash('sha256').update(canonical, 'utf8').digest('hex')}`;
}

/** A host-defined provider; `compute` must be a pure function of the context. */
export type CustomIdentityProvider = {
  readonly name: string;
  readonly compute: (ctx: AgentContext) => string;
};

/** What a host declares: the default, a custom provider, or `null` (identity-unbound). */
export type IdentityProviderOption = typeof JCS_SHA256 | CustomIdentityProvider | null;

const CUSTOM_NAME = /^[a-z][a-z0-9_-]*$/;

/** Provider name rules are enforced, not advisory: the `jcs` prefix is reserved for golden semantics. */
function assertProviderName(name: string): void {
  if (!CUSTOM_NAME.test(name) || name.startsWith('jcs')) {
    throw new TypeError(`identity provider name must match ^[a-z][a-z0-9_-]*$ and must not start with "jcs"`);
  }
}

/** Build a custom provider, rejecting forbidden names at construction time. */
export function createIdentityProvider(name: string, compute: (ctx: AgentContext) => string): CustomIdentityProvider {
  assertProviderName(name);
  return Object.freeze({ name, compute });
}

/** The resolved provider an emitter runs: `compute` returns null only for the null provider. */
export type ResolvedIdentityProvider = {
  readonly name: string | null;
  compute(ctx: AgentContext): string | null;
};

export function resolveIdentityProvider(option: IdentityProviderOption | undefined): ResolvedIdentityProvider {
  if (option === undefined || option === JCS_SHA256) return { name: JCS_SHA256, compute: jcsSha256Identity };
  if (option === null) return { name: null, compute: () => null };
  if (typeof option !== 'object' || typeof option.compute !== 'function') {
    throw new TypeError('identity provider must be "jcs-sha256", null, or { name, compute }');
  }
  assertProviderName(option.name);
  const { name, compute } = option;
  return {
    name,
    compute(ctx) {
      // A provider that raises or returns a non-string fails the emission closed.
      let out: unknown;
      try {
        out = compute(structuredClone(ctx));
      } catch (err) {
        throw new HostFailureError(HostError.ContextInvalid, `identity provider "${name}" raised ${errorTypeName(err)}`);
      }
      if (typeof out !== 'string') {
        throw new HostFailureError(HostError.ContextInvalid, `identity provider "${name}" returned a non-string`);
      }
      return out;
    },
  };
}

/** Type name only: an exception's message may carry target content. */
export function errorTypeName(err: unknown): string {
  if (err instanceof Error) return err.name || err.constructor.name || 'Error';
  return typeof err;
}
