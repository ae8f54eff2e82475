import { ApprovalNotClaimedError } from '../contract/errors.ts';
import { assertStorableEvent } from '../contract/storableText.ts';
import type { Db } from '../store/db.ts';
import { loadOperationHooks } from '../store/operationsRepo.ts';
import {
  claimPlaceholderApproval,
  getPlaceholder,
  markApprovalPublished,
  PlaceholderNotFoundError,
  publishPlaceholderOnce,
} from '../store/placeholdersRepo.ts';
import { rejectionReceipt } from './deferredResult.ts';
import type { ApprovalDecision, OperationDispatcher } from './operationStoreTypes.ts';

type ToolCallRef = { operationId: string; toolCallId: string };

/** P3: record the human decision privately (first claim wins); nothing is published. */
export async function claimApproval(
  db: () => Promise<Db>,
  input: ToolCallRef & { decision: ApprovalDecision },
): Promise<{ applied: boolean; decision: ApprovalDecision }> {
  assertStorableEvent({ operationId: input.operationId, toolCallId: input.toolCallId, decision: input.decision }, 'claimApproval', '');
  const r = await claimPlaceholderApproval(await db(), { operationId: input.operationId, toolCallId: input.toolCallId, decision: { ...input.decision } });
  return { applied: r.applied, decision: r.approval as ApprovalDecision };
}

/** `afterHumanIntervention`, and `onStopByHumanIntervention` for a stop, with the operation's stored hooks. */
async function notifyHumanIntervention(d: Db, input: ToolCallRef & { dispatcher: OperationDispatcher }, decision: ApprovalDecision): Promise<void> {
  // D9a: nothing stored → undefined, so the in-memory afterHumanIntervention hooks run (queue mode too).
  const hooks = await loadOperationHooks(d, input.operationId);
  const event = {
    operationId: input.operationId,
    action: decision.action,
    toolCallId: input.toolCallId,
    ...(decision.rejectionReason ? { rejectionReason: decision.rejectionReason } : {}),
  };
  await input.dispatcher.dispatch(input.operationId, 'afterHumanIntervention', event, hooks);
  if (decision.action === 'stop') {
    await input.dispatcher.dispatch(
      input.operationId,
      'onStopByHumanIntervention',
      { operationId: input.operationId, toolCallId: input.toolCallId, ...(decision.rejectionReason ? { rejectionReason: decision.rejectionReason } : {}) },
      hooks,
    );
  }
}

/**
 * P3: the runtime publishes the claimed decision after result control. A reject/stop receipt
 * holds no tool output and fills the placeholder directly; `afterHumanIntervention` (and
 * `onStopByHumanIntervention` for a stop) are dispatched.
 */
export async function publishApproval(
  db: () => Promise<Db>,
  input: ToolCallRef & { dispatcher: OperationDispatcher },
): Promise<{ decision: ApprovalDecision; receiptApplied: boolean; alreadyPublished: boolean }> {
  const d = await db();
  const placeholder = await getPlaceholder(d, input.operationId, input.toolCallId);
  if (!placeholder) throw new PlaceholderNotFoundError(input.operationId, input.toolCallId);
  if (placeholder.approval === null) throw new ApprovalNotClaimedError(`no approval claimed for tool call "${input.toolCallId}"; call claimApproval() first`);
  const { publishedAt: _publishedAt, ...decision } = placeholder.approval as ApprovalDecision & { publishedAt?: string };
  if (_publishedAt !== undefined) return { decision, receiptApplied: false, alreadyPublished: true };
  let receiptApplied = false;
  if (decision.action !== 'approve') {
    const receipt = rejectionReceipt(decision);
    receiptApplied = (await publishPlaceholderOnce(d, { operationId: input.operationId, toolCallId: input.toolCallId, result: receipt })).applied;
  }
  await notifyHumanIntervention(d, input, decision);
  // Marked after the notifications went out: a failed dispatch is retried by calling again.
  await markApprovalPublished(d, input.operationId, input.toolCallId);
  return { decision, receiptApplied, alreadyPublished: false };
}
