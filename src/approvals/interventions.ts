/**
 * Human interventions (LobeHub's P3 flow) on durable approvals (A1, A2):
 *
 *   requestIntervention — one durable request per pending tool call, bound to the call's
 *     identity (operation, tool call id, `identifier/apiName`, arguments), the empty placeholder
 *     its result will fill (P2), then `beforeHumanIntervention` with each tool's `approvalId`.
 *   (an approver decides: CLI, console, event, chat button — privately, P3: nothing is published)
 *   resumeIntervention — the runtime presents the call as it has it now: the decision for that
 *     identity is applied once and claimed on the placeholder (`claimApproval`), then published
 *     (`publishApproval` → `afterHumanIntervention`, and a reject receipt with no tool output).
 *     Changed arguments never inherit an earlier decision (a new request is made); an expired,
 *     ambiguous or spent decision is a reject, recorded.
 */
import { randomBytes } from 'node:crypto';
import type { AgentContext, JsonValue } from '../contract/agentHooks.ts';
import { SPEC_VERSION } from '../contract/agentHooks.ts';
import type { Approval } from '../contract/approval.ts';
import type { InterventionOutcome, InterventionTool, RequestInterventionInput, ResumeInterventionInput } from './types.ts';
import type { HookType } from '../contract/hookTypes.ts';
import type { ApprovalDecision } from '../operations/operationStoreTypes.ts';
import { getApprovalRow, openPendingApproval, toApproval, type ApprovalRow } from '../store/approvalsRepo.ts';
import type { Db } from '../store/db.ts';
import { approvalIdentity } from './approvalIdentity.ts';
import { APPROVAL_REASONS } from './reasons.ts';
import { settleDecision, type SettleScope } from './resolveApproval.ts';
import type { Logger } from '../observability/logger.ts';
import { isObject } from '../util/isObject.ts';
import { withDefined } from '../util/withDefined.ts';

export type InterventionDeps = {
  db: () => Promise<Db>;
  tenant: string;
  expiresInMs: number;
  display: (context: AgentContext) => Promise<JsonValue>;
  newId: () => string;
  onChanged: (rows: readonly ApprovalRow[]) => void;
  logger: Logger;
};

/** The call as a pre_tool_call context (I4 mapping: name `identifier/apiName`, session = the operation). */
function callContext(operationId: string, tool: InterventionTool): AgentContext {
  if (tool === null || typeof tool !== 'object' || typeof tool.toolCallId !== 'string' || tool.toolCallId === '')
    throw new TypeError('pendingTools[]: each needs a non-empty toolCallId, identifier, apiName and args object');
  if (typeof tool.identifier !== 'string' || typeof tool.apiName !== 'string') throw new TypeError('pendingTools[]: identifier and apiName must be strings');
  const args = tool.args ?? {};
  if (!isObject(args)) throw new TypeError('pendingTools[]: args must be an object');
  return {
    spec: SPEC_VERSION,
    interception_point: 'pre_tool_call',
    timestamp: new Date().toISOString(),
    sequence: 0,
    agent: { id: 'human-intervention', framework: 'hookrelay' },
    session: { id: operationId },
    tool_call: { id: tool.toolCallId, name: `${tool.identifier}/${tool.apiName}`, args: structuredClone(args) },
    target: structuredClone(args),
  } as AgentContext;
}

function scopeOf(deps: InterventionDeps, operationId: string, context: AgentContext, tool: InterventionTool): SettleScope {
  return {
    tenant: deps.tenant,
    operationId,
    point: 'pre_tool_call',
    contextIdentity: approvalIdentity(context, operationId),
    toolCallId: tool.toolCallId,
    toolName: `${tool.identifier}/${tool.apiName}`,
  };
}

async function openRequest(db: Db, deps: InterventionDeps, operationId: string, context: AgentContext, scope: SettleScope): Promise<ApprovalRow> {
  const { row, created } = await openPendingApproval(db, {
    id: deps.newId(),
    tenant: deps.tenant,
    operationId,
    kind: 'intervention',
    point: 'pre_tool_call',
    toolCallId: scope.toolCallId,
    toolName: scope.toolName,
    contextIdentity: scope.contextIdentity,
    context: await deps.display(context),
    escalation: { reason: 'human_intervention' },
    expiresInMs: deps.expiresInMs,
    answerNonce: randomBytes(18).toString('base64url'),
  });
  if (created) deps.onChanged([row]);
  return row;
}

export async function requestIntervention(input: RequestInterventionInput, deps: InterventionDeps): Promise<Approval[]> {
  if (typeof input.operationId !== 'string' || input.operationId === '') throw new TypeError('requestIntervention: operationId must be a non-empty string');
  if (!Array.isArray(input.pendingTools) || input.pendingTools.length === 0)
    throw new TypeError('requestIntervention: pendingTools must list at least one tool call');
  const contexts = input.pendingTools.map((tool) => callContext(input.operationId, tool)); // all checked before anything is stored
  const db = await deps.db();
  const approvals: Approval[] = [];
  for (const [i, tool] of input.pendingTools.entries()) {
    const context = contexts[i] as AgentContext;
    await input.operations.createPlaceholder({ operationId: input.operationId, toolCallId: tool.toolCallId });
    approvals.push(toApproval(await openRequest(db, deps, input.operationId, context, scopeOf(deps, input.operationId, context, tool))));
  }
  const event = {
    operationId: input.operationId,
    ...withDefined({ stepIndex: input.stepIndex }),
    pendingTools: input.pendingTools.map((tool, i) => ({
      toolCallId: tool.toolCallId,
      identifier: tool.identifier,
      apiName: tool.apiName,
      approvalId: approvals[i]?.id,
    })),
  };
  await input.dispatcher.dispatch(input.operationId, 'beforeHumanIntervention' satisfies HookType, event);
  return approvals;
}

function decisionOf(settled: NonNullable<Awaited<ReturnType<typeof settleDecision>>>): {
  status: 'approved' | 'rejected' | 'denied';
  decision: ApprovalDecision;
} {
  if (settled.kind === 'approved') return { status: 'approved', decision: { action: 'approve', approvalId: settled.row.id } };
  if (settled.kind === 'rejected')
    return {
      status: 'rejected',
      decision: {
        action: 'reject',
        rejectionReason: settled.row.reason ?? `Rejected by ${settled.row.decidedBy ?? 'an approver'}.`,
        approvalId: settled.row.id,
      },
    };
  return {
    status: 'denied',
    decision: { action: 'reject', rejectionReason: `${settled.reason}: ${settled.message}`, ...(settled.row ? { approvalId: settled.row.id } : {}) },
  };
}

export async function resumeIntervention(input: ResumeInterventionInput, deps: InterventionDeps): Promise<InterventionOutcome> {
  const context = callContext(input.operationId, input.tool);
  const scope = scopeOf(deps, input.operationId, context, input.tool);
  const db = await deps.db();
  const settled = await settleDecision(db, scope, deps);
  if (settled === undefined) return { status: 'pending', approval: toApproval(await openRequest(db, deps, input.operationId, context, scope)) };

  let { status, decision } = decisionOf(settled);
  const ref = { operationId: input.operationId, toolCallId: input.tool.toolCallId };
  const claim = await input.operations.claimApproval({ ...ref, decision });
  if (!claim.applied && claim.decision?.action !== decision.action) {
    // The placeholder holds another decision (claimed elsewhere): two decisions → nothing is published, the tool does not run.
    deps.logger.warn(
      { operationId: input.operationId, toolCallId: input.tool.toolCallId },
      'intervention ambiguous: the placeholder holds another decision; denied',
    );
    status = 'denied';
    decision = { action: 'reject', rejectionReason: `${APPROVAL_REASONS.ambiguous}: the tool call already holds another decision` };
    const row = settled.row === undefined ? undefined : await getApprovalRow(db, settled.row.id);
    return { status, decision, approval: row === undefined ? undefined : toApproval(row), published: false };
  }
  const published = await input.operations.publishApproval({ ...ref, dispatcher: input.dispatcher });
  const row = settled.row === undefined ? undefined : await getApprovalRow(db, settled.row.id);
  return { status, decision, approval: row === undefined ? undefined : toApproval(row), published: !published.alreadyPublished };
}
