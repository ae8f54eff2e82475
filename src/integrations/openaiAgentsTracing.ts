import type { JsonValue } from '../contract/agentHooks.ts';
import { InterceptionBlockedError } from '../contract/errors.ts';
import type { loadSdk } from './openaiAgentsSdk.ts';

type Sdk = Awaited<ReturnType<typeof loadSdk>>;
type SpanFields = Record<string, JsonValue>;

/**
 * Runs `fn` in a `hookrelay.*` custom span of the Agents SDK's current trace, so a trace shows
 * where hookrelay judged a call, under the SDK's own span for it, and joins hookrelay's records by
 * `session_id` (plus the blocking record's `sequence`). Only ids, names and verdicts go in — never
 * arguments, messages or results. No current trace (tracing off, a call outside `run()`): just `fn`.
 */
export async function inHookrelaySpan<T>(
  sdk: Sdk | undefined,
  name: string,
  fields: SpanFields,
  fn: () => Promise<T>,
  outcome: (r: T) => SpanFields,
): Promise<T> {
  if (sdk === undefined || sdk.getCurrentTrace() === null) return fn();
  return sdk.withCustomSpan(
    async (span) => {
      try {
        const r = await fn();
        Object.assign(span.spanData.data, outcome(r));
        return r;
      } catch (err) {
        if (err instanceof InterceptionBlockedError) {
          const record = err.record;
          Object.assign(span.spanData.data, {
            decision: record.verdict.decision,
            reason: record.verdict.reason ?? 'denied',
            interception_point: record.interception_point,
            sequence: record.sequence,
          });
        }
        throw err;
      }
    },
    { data: { name, data: fields } },
  );
}
