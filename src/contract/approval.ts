import { z } from 'zod';

/**
 * Durable approvals (A1–A3): the request an escalated interception (I) or a human intervention
 * (P) leaves for a person, its decision, and what became of the decision when a run presented the
 * call again. One source of truth for the store, the CLI, the console, the events and the API.
 */

/** A1: an approval's lifecycle. `pending` until decided, or until it expires or is cancelled. */
export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'cancelled'] as const;
export const ApprovalStatusSchema = z.enum(APPROVAL_STATUSES);
export type ApprovalStatus = z.infer<typeof ApprovalStatusSchema>;

/** What asked for it (A1): an escalated interception (a liftable deny) or a human intervention (P3). */
const ApprovalKindSchema = z.enum(['escalation', 'intervention']);
export type ApprovalKind = z.infer<typeof ApprovalKindSchema>;

/**
 * A2: what became of a decision once a run presented its call — set once, never cleared:
 * `applied` (consumed by the one run that presented the identical identity), `expired` (presented
 * after its expiry: denied), `ambiguous` (two decisions for one identity: both denied),
 * `cancelled` (presented after an operator withdrew the request: denied), `identity_mismatch`
 * (the call came back changed: never applied).
 */
const APPROVAL_OUTCOMES = ['applied', 'expired', 'cancelled', 'ambiguous', 'identity_mismatch'] as const;
const ApprovalOutcomeSchema = z.enum(APPROVAL_OUTCOMES);
export type ApprovalOutcome = z.infer<typeof ApprovalOutcomeSchema>;

/** The two decisions an approver makes. */
export const ApprovalAnswerSchema = z.enum(['approve', 'reject']);
export type ApprovalAnswer = z.infer<typeof ApprovalAnswerSchema>;

/** Who decided, as the approver's tool names them (`cli:alice`, `console`, `token`, …): printable, ≤ 200 characters. */
export const DecidedBySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x20-\x7e]+$/, { message: 'must be printable ASCII' });

/** An approver's reason: shown to the agent's operator and in the audit; ≤ 2,000 characters. */
export const DecisionReasonSchema = z.string().max(2_000);

const ToolCallRefSchema = z.object({ id: z.string(), name: z.string() });

/** A1: one approval as every approver's tool and the API show it. `context` is the redacted context (never the raw one). */
const ApprovalSchema = z.object({
  id: z.string(),
  tenant: z.string(),
  operationId: z.string(),
  kind: ApprovalKindSchema,
  /** The interception point it guards (`pre_tool_call` for a human intervention). */
  point: z.string(),
  toolCall: ToolCallRefSchema.nullable(),
  /** The JCS-SHA256 the decision is bound to (docs/approvals.md: the call, without its emission stamps). */
  contextIdentity: z.string(),
  /** The context for display, after `approvalRedactor`. */
  context: z.json(),
  /** Why it was escalated: the liftable deny's reason and message (payload-free). */
  escalation: z.object({ reason: z.string().optional(), message: z.string().optional() }),
  status: ApprovalStatusSchema,
  requestedAt: z.date(),
  expiresAt: z.date(),
  decidedBy: z.string().nullable(),
  decidedAt: z.date().nullable(),
  /** The approver's reason (or why it was cancelled or expired). */
  reason: z.string().nullable(),
  /** A2: when a run presented the call with this decision standing, and what became of it. */
  appliedAt: z.date().nullable(),
  outcome: ApprovalOutcomeSchema.nullable(),
});
export type Approval = z.infer<typeof ApprovalSchema>;

/**
 * What a resolver's `unresolved` answer may add (a hookrelay extension member of the
 * approval resolution): the durable request it left pending, so the run can end with a typed
 * "approval pending" outcome an integration maps onto its framework's pause.
 */
export const PendingApprovalSchema = z.object({
  id: z.string().min(1),
  tenant: z.string(),
  operationId: z.string(),
  expiresAt: z.string(),
  toolCallId: z.string().optional(),
  toolName: z.string().optional(),
});
export type PendingApproval = z.infer<typeof PendingApprovalSchema>;
