import type { AgentContext, Verdict } from '../contract/agentHooks.ts';
import { errorTypeName } from './identity.ts';
import { HostError } from './reasons.ts';
import { assertTimeout, settleWithin } from './timeouts.ts';
import { EmissionCancelledError } from '../contract/errors.ts';
import { hostErrorVerdict, parseWireVerdict } from './verdict.ts';
import { withDefined } from '../util/withDefined.ts';

/** What an interceptor is handed beside its own copy of the context. */
export type InterceptOptions = { signal: AbortSignal };

export type InterceptorFunction = (ctx: AgentContext, options: InterceptOptions) => Verdict | Promise<Verdict>;

/** `intercept(context) -> Verdict`, as a function or an object; `name` is a payload-free label for records. */
export type Interceptor =
  | InterceptorFunction
  | {
      intercept: InterceptorFunction;
      readonly name?: string;
      /** This interceptor's own bound (e.g. a remote interceptor's configured timeout); default the emitter's. */
      readonly timeoutMs?: number | null;
    };

export type RegisteredInterceptor = { readonly name?: string; readonly intercept: InterceptorFunction; readonly timeoutMs?: number | null };

export function toRegistered(interceptor: Interceptor, name?: string): RegisteredInterceptor {
  if (typeof interceptor === 'function') return { name, intercept: interceptor };
  if (interceptor !== null && typeof interceptor === 'object' && typeof interceptor.intercept === 'function') {
    const own = interceptor.timeoutMs;
    if (own !== undefined) assertTimeout('interceptor timeoutMs', own);
    return { name: name ?? interceptor.name, intercept: interceptor.intercept.bind(interceptor), ...withDefined({ timeoutMs: own }) };
  }
  throw new TypeError('an interceptor is a function or an object with an intercept(context) method');
}

/**
 * One interceptor call: it gets its own deep copy (its mutations
 * cannot reach enforcement, identity or siblings), a timeout, and its
 * result crosses the verdict gate. Every failure becomes the deny that takes the
 * interceptor's slot; the message names an exception type only, never its text.
 */
export async function callInterceptor(
  entry: RegisteredInterceptor,
  ctx: AgentContext,
  timeoutMs: number | null,
  signal: AbortSignal | undefined,
): Promise<Verdict> {
  const copy = structuredClone(ctx);
  const bound = entry.timeoutMs !== undefined ? entry.timeoutMs : timeoutMs;
  const settled = await settleWithin((s) => entry.intercept(copy, { signal: s }), bound, signal);
  switch (settled.kind) {
    case 'cancelled':
      throw new EmissionCancelledError(settled.reason);
    case 'timeout':
      return hostErrorVerdict(HostError.InterceptorTimeout, `interceptor exceeded ${bound} ms`);
    case 'error':
      return hostErrorVerdict(HostError.InterceptorFailed, `interceptor raised ${errorTypeName(settled.error)}`);
    case 'value': {
      const gated = parseWireVerdict(settled.value);
      return gated.ok ? gated.verdict : hostErrorVerdict(gated.reason, gated.detail);
    }
  }
}
