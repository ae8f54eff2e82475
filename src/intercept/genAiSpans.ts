/**
 * OpenTelemetry spans in the GenAI semantic conventions (status: Development) for the calls
 * hookrelay judges, so a GenAI-aware backend shows a denied tool call:
 *
 * - `execute_tool {gen_ai.tool.name}` around one tool call of the run adapter (judgement, the
 *   tool's execution, judgement of its result), with `gen_ai.operation.name=execute_tool` and the
 *   `gen_ai.tool.*` attributes;
 * - `apply_guardrail {gen_ai.guardian.name}` per interception decision at a content point (the
 *   guardrail draft, semantic-conventions PR 3233): the verdict as `gen_ai.security.decision.type`
 *   and, apart from it, the action hookrelay took (`hookrelay.action`: an `evaluate_only` deny is
 *   recorded, not applied).
 *
 * Through `@opentelemetry/api` only, like `src/observability/tracing.ts` (which this layer may not
 * import): with no SDK registered no span is started. Attributes carry names, ids, verdicts and
 * reason codes — never arguments, results or messages.
 */
import { context, ProxyTracerProvider, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { InterceptionPoint, InterceptionRecord } from '../contract/agentHooks.ts';
import { isReservedReason } from './reasons.ts';

const TRACER_NAME = 'hookrelay';

/** The registered SDK's tracer, or undefined when none is registered. */
function activeTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider();
  if (provider instanceof ProxyTracerProvider) return provider.getDelegateTracer(TRACER_NAME);
  return provider.getTracer(TRACER_NAME);
}

/** `gen_ai.tool.type` values of the conventions. */
export type GenAiToolType = 'function' | 'extension' | 'datastore';

type ExecuteToolSpan = {
  /** The span, for the caller's own attributes; undefined when tracing is off. */
  readonly span: Span | undefined;
  /** Runs `fn` with the span active (its guardrail spans become children). */
  within<T>(fn: () => Promise<T>): Promise<T>;
  /** Ends the span: `completed`, `blocked` at a point with a reason, or a tool error. */
  end(
    outcome: { status: 'completed'; isError: boolean } | { status: 'blocked'; at: InterceptionPoint; reason: string } | { status: 'thrown'; error: unknown },
  ): void;
};

const NO_SPAN: ExecuteToolSpan = { span: undefined, within: (fn) => fn(), end: () => undefined };

/** Opens `execute_tool {name}` (INTERNAL) in the active context; a no-op without an SDK. */
export function startExecuteToolSpan(tool: { name: string; callId: string; type?: GenAiToolType; description?: string; sessionId: string }): ExecuteToolSpan {
  const tracer = activeTracer();
  if (tracer === undefined) return NO_SPAN;
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool.name,
    'gen_ai.tool.call.id': tool.callId,
    'gen_ai.tool.type': tool.type ?? 'function',
    'hookrelay.session_id': tool.sessionId,
  };
  if (tool.description !== undefined) attributes['gen_ai.tool.description'] = tool.description;
  const parent = context.active();
  const span = tracer.startSpan(`execute_tool ${tool.name}`, { kind: SpanKind.INTERNAL, attributes }, parent);
  const active = trace.setSpan(parent, span);
  return {
    span,
    within: (fn) => context.with(active, fn),
    end(outcome) {
      if (outcome.status === 'blocked') {
        span.setAttributes({ 'hookrelay.outcome': 'blocked', 'hookrelay.blocked_at': outcome.at, 'hookrelay.reason': outcome.reason, 'error.type': 'blocked' });
        span.setStatus({ code: SpanStatusCode.ERROR, message: `blocked at ${outcome.at}: ${outcome.reason}` });
      } else if (outcome.status === 'thrown') {
        const name = outcome.error instanceof Error ? outcome.error.name : 'error';
        span.setAttributes({ 'hookrelay.outcome': 'thrown', 'error.type': name });
        span.setStatus({ code: SpanStatusCode.ERROR, message: name });
      } else {
        span.setAttribute('hookrelay.outcome', outcome.isError ? 'tool_error' : 'completed');
        if (outcome.isError) {
          span.setAttribute('error.type', 'tool_error');
          span.setStatus({ code: SpanStatusCode.ERROR, message: 'tool_error' });
        }
      }
      span.end();
    },
  };
}

/** What each point judges, as the draft's `gen_ai.security.target.type`; the session points are not content guardrails. */
const TARGET_TYPE: Partial<Record<InterceptionPoint, string>> = {
  input: 'llm_input',
  pre_model_call: 'llm_input',
  post_model_call: 'llm_output',
  output: 'llm_output',
  pre_tool_call: 'tool_call',
  post_tool_call: 'tool_call',
};

/**
 * The verdict in AGENT-HOOKS-0.1's five words: `warn` is an allow with warnings and `escalate` a
 * deny asking for approval (neither is a wire decision).
 */
function verdictWord(verdict: InterceptionRecord['verdict']): 'allow' | 'warn' | 'deny' | 'escalate' | 'transform' {
  if (verdict.decision === 'deny') return verdict.approval !== undefined ? 'escalate' : 'deny';
  if (verdict.decision === 'allow' && (verdict.warnings?.length ?? 0) > 0) return 'warn';
  return verdict.decision;
}

/** The draft's `gen_ai.security.decision.type` (allow, warn, deny, modify); an escalation blocks until approved: `deny`. */
const DECISION_TYPE = { allow: 'allow', warn: 'warn', deny: 'deny', escalate: 'deny', transform: 'modify' } as const;

/** What hookrelay did with a decision: the action taken, apart from the verdict. */
type GuardrailAction = 'proceeded' | 'transformed' | 'blocked' | 'approval_pending' | 'approved' | 'rejected' | 'recorded_only';

function actionOf(record: InterceptionRecord, pending: boolean): GuardrailAction {
  const decision = record.verdict.decision;
  if (record.mode === 'evaluate_only') return decision === 'allow' ? 'proceeded' : 'recorded_only';
  if (pending) return 'approval_pending';
  if (record.resolved_by === 'approval') return 'approved';
  if (record.resolved_by === 'rejection') return 'rejected';
  if (decision === 'deny') return 'blocked';
  if (decision === 'transform' && record.verdict.transform !== undefined) return 'transformed';
  return 'proceeded';
}

/**
 * One `apply_guardrail` span for an emission's record, from `startedAt` to now, in the active
 * context (under `execute_tool` in a run). A no-op without an SDK or at a session point.
 */
export function recordGuardrailSpan(
  record: InterceptionRecord,
  options: { startedAt: number; pending: boolean; toolCall?: { id?: unknown; name?: unknown } },
): void {
  const targetType = TARGET_TYPE[record.interception_point];
  if (targetType === undefined) return;
  const tracer = activeTracer();
  if (tracer === undefined) return;
  const verdict = record.verdict;
  const word = verdictWord(verdict);
  const decidedBy = record.decided_by === null ? undefined : record.verdicts?.find((v) => v.index === record.decided_by);
  const guardian = decidedBy?.name ?? 'hookrelay';
  const attributes: Attributes = {
    'gen_ai.operation.name': 'apply_guardrail',
    'gen_ai.guardian.name': guardian,
    'gen_ai.security.target.type': targetType,
    'gen_ai.security.decision.type': DECISION_TYPE[word],
    'hookrelay.interception_point': record.interception_point,
    'hookrelay.verdict': word,
    'hookrelay.mode': record.mode,
    'hookrelay.action': actionOf(record, options.pending),
    'hookrelay.session_id': record.session_id,
    'hookrelay.sequence': record.sequence,
  };
  if (verdict.reason !== undefined) attributes['gen_ai.security.decision.reason'] = verdict.reason;
  if (verdict.transform !== undefined) attributes['hookrelay.transform.path'] = verdict.transform.path;
  if (typeof options.toolCall?.id === 'string') attributes['gen_ai.security.target.id'] = options.toolCall.id;
  if (typeof options.toolCall?.name === 'string') attributes['gen_ai.tool.name'] = options.toolCall.name;
  const span = tracer.startSpan(`apply_guardrail ${guardian}`, { kind: SpanKind.INTERNAL, attributes, startTime: options.startedAt }, context.active());
  // The guardian failing (a host_error deny) is an error of the span; a policy deny is its result, not an error.
  if (verdict.decision === 'deny' && verdict.reason !== undefined && isReservedReason(verdict.reason)) {
    span.setAttribute('error.type', verdict.reason);
    span.setStatus({ code: SpanStatusCode.ERROR, message: verdict.reason });
  }
  span.end();
}

/** Whether a tracer is registered: emitters skip even the clock read without one. */
export function genAiTracingOn(): boolean {
  return activeTracer() !== undefined;
}
