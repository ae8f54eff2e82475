import { z } from 'zod';

/**
 * AGENT-HOOKS-0.1 wire contract (I1): AgentContext, Verdict, the approval
 * seam and the payload-free InterceptionRecord. Every shape the
 * interception module exchanges with interceptors, resolvers and sinks is
 * declared here once; the TypeScript types are inferred from these schemas.
 */

/** Any JSON value (RFC 8259). Non-finite numbers are not JSON. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };
const JsonValueSchema: z.ZodType<JsonValue> = z.json();

export const SPEC_VERSION = 'agent-hooks/0.1';

/** The closed set of interception points. */
export const InterceptionPointSchema = z.enum([
  'agent_startup',
  'input',
  'pre_model_call',
  'post_model_call',
  'pre_tool_call',
  'post_tool_call',
  'output',
  'agent_shutdown',
]);
export type InterceptionPoint = z.infer<typeof InterceptionPointSchema>;

export const EnforcementModeSchema = z.enum(['enforce', 'evaluate_only']);
export type EnforcementMode = z.infer<typeof EnforcementModeSchema>;

/** The reserved reasons a host synthesizes (and only these). */
export const HostErrorReasonSchema = z.enum([
  'host_error:context_invalid',
  'host_error:interceptor_failed',
  'host_error:interceptor_timeout',
  'host_error:verdict_invalid',
  'host_error:transform_invalid',
  'host_error:transform_target_forbidden',
  'host_error:transform_conflict',
  'host_error:composition_disagreement',
  'host_error:approval_resolver_failed',
  'host_error:approval_unresolved',
  'host_error:approval_identity_mismatch',
  'host_error:adapter_unsupported',
  'host_error:no_interceptor',
  'host_error:streaming_unsupported',
]);
export type HostErrorReason = z.infer<typeof HostErrorReasonSchema>;

// ---- AgentContext -----------------------------------------------------------

const nonEmpty = z.string().min(1);

/** The required core. Loose: optional and namespaced members pass through verbatim. */
export const AgentContextCoreSchema = z.looseObject({
  spec: z.string().regex(/^agent-hooks\/\d+\.\d+$/),
  interception_point: InterceptionPointSchema,
  timestamp: z.string().min(1),
  sequence: z.number().int().min(0),
  agent: z.looseObject({ id: nonEmpty, framework: z.string().regex(/^[a-z0-9_-]+$/) }),
  session: z.looseObject({ id: nonEmpty }),
  // `target` may be any JSON value including null, but it must be present.
  target: z.custom<JsonValue>((v) => v !== undefined, { message: 'target is required' }),
});

const anyJson = z.custom<JsonValue>((v) => v !== undefined, { message: 'required' });
const argsObject = z.record(z.string(), z.custom<JsonValue>());

const AgentInitSchema = z.looseObject({ tools_registered: z.array(z.string()) });
const InputSchema = z.looseObject({ content: anyJson, role: z.enum(['user', 'system', 'external']) });
const ModelSchema = z.looseObject({ id: z.string() });
const MessagesSchema = z.array(z.looseObject({ role: z.string(), content: anyJson }));
const ResponseToolCallSchema = z.looseObject({ id: z.string().optional(), name: z.string(), args: argsObject });
const ResponseSchema = z.looseObject({
  content: anyJson,
  tool_calls: z.array(ResponseToolCallSchema),
  finish_reason: z.string(),
});
const ToolCallSchema = z.looseObject({ id: nonEmpty, name: nonEmpty, args: argsObject });
const ToolResultSchema = z.looseObject({ value: anyJson, is_error: z.boolean() });
const OutputSchema = z.looseObject({ content: anyJson });
export const SummarySchema = z.looseObject({ reason: z.enum(['completed', 'error', 'cancelled']) });

/** The conditional members each point requires, beside the core. */
export const ConditionalSchemas = {
  agent_startup: z.looseObject({ agent_init: AgentInitSchema }),
  input: z.looseObject({ input: InputSchema }),
  pre_model_call: z.looseObject({ model: ModelSchema, messages: MessagesSchema }),
  post_model_call: z.looseObject({ model: ModelSchema, response: ResponseSchema }),
  pre_tool_call: z.looseObject({ tool_call: ToolCallSchema }),
  post_tool_call: z.looseObject({ tool_call: ToolCallSchema, tool_result: ToolResultSchema }),
  output: z.looseObject({ output: OutputSchema }),
  agent_shutdown: z.looseObject({ summary: SummarySchema }),
} as const satisfies Record<InterceptionPoint, z.ZodType>;

/** A context that passed the envelope check; conditional members are indexed. */
export type AgentContext = z.infer<typeof AgentContextCoreSchema> & { target: JsonValue };

// ---- Verdict ----------------------------------------------------------------

const DecisionSchema = z.enum(['allow', 'deny', 'transform']);

const WarningSchema = z.object({ reason: z.string().optional(), message: z.string().optional() });
export type Warning = z.infer<typeof WarningSchema>;

const TransformSchema = z.object({ path: z.string(), value: JsonValueSchema });

const EvidenceSchema = z.object({
  artefact: z.string().nullable().optional(),
  verification_pointers: z.record(z.string(), z.string()).optional(),
});
export type Evidence = z.infer<typeof EvidenceSchema>;

/** The normalized verdict the host works with (nulls already folded into absence). */
export const VerdictSchema = z.object({
  decision: DecisionSchema,
  reason: z.string().optional(),
  message: z.string().optional(),
  warnings: z.array(WarningSchema).optional(),
  approval: z.record(z.string(), JsonValueSchema).optional(),
  transform: TransformSchema.optional(),
  evidence: EvidenceSchema.optional(),
  result_labels: z.array(z.string()).optional(),
});
export type Verdict = z.infer<typeof VerdictSchema>;

const nullishString = z.string().nullish();

/**
 * A JSON value as the lossless reader (`parseJsonLossless`) returns it: an integer token beyond
 * ±(2^53−1) is a `bigint`, kept exact so that the I-JSON check of the context it would enter
 * rejects it instead of a rounded double slipping through. Typed as `JsonValue` because a
 * bigint never survives into a context.
 */
const WireJsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.string(), z.number(), z.bigint(), z.boolean(), z.null(), z.array(WireJsonValueSchema), z.record(z.string(), WireJsonValueSchema)]),
) as z.ZodType<JsonValue>;

/** The verdict's wire shape before the semantic gate: a `null` member counts as absent. */
export const WireVerdictSchema = z.object({
  decision: DecisionSchema,
  reason: nullishString,
  message: nullishString,
  warnings: z.array(z.object({ reason: nullishString, message: nullishString })).nullish(),
  approval: z.record(z.string(), WireJsonValueSchema).nullish(),
  transform: z.object({ path: z.string(), value: WireJsonValueSchema.optional() }).nullish(),
  evidence: z.object({ artefact: nullishString, verification_pointers: z.record(z.string(), z.string()).nullish() }).nullish(),
  result_labels: z.array(z.string()).nullish(),
});

// ---- Composition ------------------------------------------------------------

const CompositionProfileSchema = z.enum(['sequential/first_deny', 'sequential/run_all', 'parallel/strictest', 'parallel/unanimous']);
export type CompositionProfile = z.infer<typeof CompositionProfileSchema>;

const SynthesisPolicySchema = z.enum(['deny', 'approval']);
export type SynthesisPolicy = z.infer<typeof SynthesisPolicySchema>;

export const CompositionConfigSchema = z.strictObject({
  profile: CompositionProfileSchema,
  on_approval: z.enum(['stop', 'resume']).optional(),
  on_disagreement: SynthesisPolicySchema.optional(),
  on_transform_conflict: SynthesisPolicySchema.optional(),
});
export type CompositionConfig = z.infer<typeof CompositionConfigSchema>;

// ---- Approval seam ----------------------------------------------------------

const ApprovalOutcomeSchema = z.enum(['approve', 'reject', 'unresolved']);
type ApprovalOutcome = z.infer<typeof ApprovalOutcomeSchema>;

export type ApprovalRequest = {
  context_identity: string | null;
  interception_point: InterceptionPoint;
  /** The liftable deny being consulted (interceptor's or host-synthesized). */
  verdict: Verdict;
  /** The context as presented to the resolver, after any redaction. */
  context: AgentContext;
};

/** Shape check for step 2 of the resolution's validation order; the verdict itself crosses the verdict gate. */
export const ApprovalResolutionShapeSchema = z.object({
  outcome: ApprovalOutcomeSchema,
  context_identity: z.string().nullable(),
  verdict: z.unknown().optional(),
});
export type ApprovalResolution = {
  outcome: ApprovalOutcome;
  context_identity: string | null;
  verdict?: unknown;
};

// ---- InterceptionRecord -----------------------------------------------------

const VerdictSummarySchema = z.object({
  index: z.number().int().min(0),
  decision: DecisionSchema,
  reason: z.string().optional(),
  name: z.string().optional(),
});
export type VerdictSummary = z.infer<typeof VerdictSummarySchema>;

/** The payload-free projection of a verdict: no transform.value, approval stripped. */
const ProjectedVerdictSchema = VerdictSchema.extend({
  approval: z.strictObject({}).optional(),
  transform: z.object({ path: z.string() }).optional(),
});
export type ProjectedVerdict = z.infer<typeof ProjectedVerdictSchema>;

export const InterceptionRecordSchema = z.object({
  interception_point: InterceptionPointSchema,
  mode: EnforcementModeSchema,
  verdict: ProjectedVerdictSchema,
  input_identity: z.string().nullable(),
  enforced_identity: z.string().nullable(),
  identity_provider: z.string().nullable(),
  session_id: z.string(),
  sequence: z.number().int(),
  timestamp: z.string().optional(),
  trace: z.object({ trace_id: z.string().optional(), span_id: z.string().optional() }).optional(),
  decided_by: z.number().int().min(0).nullable(),
  composition: CompositionConfigSchema,
  verdicts: z.array(VerdictSummarySchema).optional(),
  fold_truncated: z.boolean().optional(),
  resolved_by: z.enum(['approval', 'rejection']).optional(),
  interceptors_registered: z.number().int().min(0),
});
export type InterceptionRecord = z.infer<typeof InterceptionRecordSchema>;
