import { isControlHook, type ParsedSerializedHook, type SerializedHook } from '../contract/hook.ts';
import { DeferredCancelledError, DeferredContextError, ToolCallContextError } from '../contract/errors.ts';
import { blockedAfterResult, HOOK_CONTROL_ERROR } from '../decide/blockedResult.ts';
import { withoutEnvHookIds } from '../contract/hookTypes.ts';
import { parseSerializedHooks } from '../contract/validate.ts';
import { assertStorableEvent } from '../contract/storableText.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import { parseToolCallHookContext } from '../notify/toolCallContext.ts';
import type { Db } from '../store/db.ts';
import { getOperation, loadOperationHooks } from '../store/operationsRepo.ts';
import { getPlaceholder, publishPlaceholderOnce, PlaceholderNotFoundError } from '../store/placeholdersRepo.ts';
import type { ApprovalDecision, OperationDispatcher, PublishDeferredResultInput, PublishDeferredResultOutput } from './operationStoreTypes.ts';
import { withDefined } from '../util/withDefined.ts';
import { isObject } from '../util/isObject.ts';

type Round = { operationId: string; hooks: ParsedSerializedHook[] };
type ReviewedResult = { final: ToolCallResult; status: 'allow' | 'blocked' };

/** P3: what a rejected or stopped call publishes: the user's decision, never tool output. */
export function rejectionReceipt(decision: ApprovalDecision): ToolCallResult {
  const reason = decision.rejectionReason ?? (decision.action === 'stop' ? 'Stopped by user.' : 'Rejected by user.');
  return { content: reason, success: false, error: 'user_rejected', state: { type: decision.action, reason } };
}

/** The output of one publish: this call's decision only when its write applied (P2). */
function published(written: { applied: boolean; result: unknown }, status: 'allow' | 'blocked'): PublishDeferredResultOutput {
  const result = written.result as ToolCallResult;
  return written.applied ? { applied: true, result, status } : { applied: false, result };
}

/** One conditional write of `result` into the call's empty placeholder (P2: the first final result wins). */
async function publishOnce(
  d: Db,
  input: PublishDeferredResultInput,
  result: ToolCallResult,
  status: 'allow' | 'blocked',
): Promise<PublishDeferredResultOutput> {
  return published(await publishPlaceholderOnce(d, { operationId: input.operationId, toolCallId: input.toolCallId, result }), status);
}

function rebuildContext(input: PublishDeferredResultInput, ownerUserId: string | undefined): ToolCallHookContext {
  const ctx: Record<string, unknown> = { operationId: input.operationId, toolCallId: input.toolCallId, executor: 'server', args: {}, ...input.context };
  // T3: the runtime account (the operation's owner) when the callback carries none.
  if ((ctx.userId === undefined || ctx.userId === '') && ownerUserId) ctx.userId = ownerUserId;
  if (!isObject(ctx.args)) ctx.args = {};
  // T1: the validator every tool context passes (buildToolCallHookContext's): required ids non-empty.
  try {
    return parseToolCallHookContext(ctx);
  } catch (error) {
    if (!(error instanceof ToolCallContextError)) throw error;
    throw new DeferredContextError(
      `cannot rebuild the tool call for result control (${error.fields.join(', ')}: missing, empty or invalid; pass them in \`context\`); nothing was written`,
    );
  }
}

function snapshotFor(input: PublishDeferredResultInput, operationId: string, first: boolean): readonly SerializedHook[] | undefined {
  const snap = input.snapshotHooks;
  if (snap === undefined) return undefined;
  if (Array.isArray(snap)) return first ? (snap as readonly SerializedHook[]) : undefined;
  return (snap as Readonly<Record<string, readonly SerializedHook[]>>)[operationId];
}

/**
 * L2/L5/D4b: a round's caller hooks: the snapshot, else Postgres; re-validated; errors propagate.
 * L1/E4: an environment hook captured by an older snapshot or row is dropped (never restored
 * from an earlier environment), exactly as the dispatcher drops them from restored hooks.
 */
async function roundHooks(
  db: () => Promise<Db>,
  operationId: string,
  snapshot: readonly SerializedHook[] | undefined,
): Promise<ParsedSerializedHook[] | undefined> {
  // D9a: nothing stored stays `undefined` (never `[]`), so the dispatcher uses its in-memory hooks.
  const raw: readonly unknown[] | undefined = snapshot ?? (await loadOperationHooks(await db(), operationId));
  return raw === undefined ? undefined : parseSerializedHooks(withoutEnvHookIds(raw));
}

/**
 * D9/P5: each round's hooks are the set the dispatcher runs (stored or snapshot hooks by D9
 * precedence, else the in-memory registration); the controls are counted from that set and
 * the same set is passed on, so a counted control is always asked.
 */
async function resolveRounds(
  db: () => Promise<Db>,
  input: PublishDeferredResultInput,
  dispatcher: Pick<OperationDispatcher, 'resolveCallerHooks'>,
  roundIds: readonly string[],
): Promise<Round[]> {
  const rounds: Round[] = [];
  for (const [i, operationId] of roundIds.entries()) {
    const stored = await roundHooks(db, operationId, snapshotFor(input, operationId, i === 0));
    rounds.push({ operationId, hooks: dispatcher.resolveCallerHooks(operationId, stored) });
  }
  return rounds;
}

/** T3: the user of the first of these operations that has one, unless the callback's context names its own. */
async function findOwnerUserId(d: Db, input: PublishDeferredResultInput, roundIds: readonly string[]): Promise<string | undefined> {
  let owner: string | undefined;
  if (input.context?.userId === undefined) {
    for (const id of new Set([input.operationId, ...roundIds])) {
      owner = (await getOperation(d, id))?.userId ?? undefined;
      if (owner) break;
    }
  }
  return owner;
}

/** The result through each round's afterToolCall review, in order; the first block ends it. */
async function reviewInRounds(input: PublishDeferredResultInput, context: ToolCallHookContext, rounds: readonly Round[]): Promise<ReviewedResult> {
  let final: ToolCallResult = input.result;
  for (const [i, round] of rounds.entries()) {
    // Later rounds review the effective result so far (an I4 transform in an earlier round).
    const outcome = await input.dispatcher.evaluateAfterToolCall(round.operationId, context, final, {
      serializedHooks: round.hooks,
      environmentHooks: i === rounds.length - 1,
      interception: i === 0, // I4: one result, judged once (post_tool_call in the first round's session)
      ...withDefined({ signal: input.signal }),
    });
    if (outcome.status === 'cancelled') throw new DeferredCancelledError('result control was cancelled; nothing was written');
    if (outcome.status === 'blocked') return { final: outcome.result as ToolCallResult, status: 'blocked' };
    if (outcome.result) final = outcome.result;
  }
  return { final, status: 'allow' };
}

/**
 * P1/P2/P4/P5, L2–L5: result control first — rounds of caller hooks (the intervention
 * operation, then this one), the current environment hooks once in the final round — then one
 * conditional write into the empty placeholder. The first final result wins.
 */
export async function publishDeferredResult(db: () => Promise<Db>, input: PublishDeferredResultInput): Promise<PublishDeferredResultOutput> {
  // A result Postgres cannot store (NUL, lone surrogate) is refused before any round runs or anything is written.
  assertStorableEvent(
    { operationId: input.operationId, toolCallId: input.toolCallId, result: input.result, interventionOperationId: input.interventionOperationId },
    'publishDeferredResult',
    '',
  );
  const d = await db();
  const existing = await getPlaceholder(d, input.operationId, input.toolCallId);
  if (!existing) throw new PlaceholderNotFoundError(input.operationId, input.toolCallId);
  if (existing.result !== null) return { applied: false, result: existing.result as ToolCallResult };
  const claimed = existing.approval as ApprovalDecision | null;
  // P3: a human rejected or stopped this call: its output is never published, only the receipt.
  if (claimed && claimed.action !== 'approve') return publishOnce(d, input, rejectionReceipt(claimed), 'blocked');

  const roundIds = [...new Set([input.interventionOperationId, input.operationId].filter((x): x is string => typeof x === 'string'))];
  const dispatcher = input.dispatcher;
  // P5/D9: a port that cannot say which hooks it runs leaves the hook set unknown: the result
  // is blocked, never allowed unreviewed (fail closed).
  if (typeof dispatcher.resolveCallerHooks !== 'function') return publishOnce(d, input, blockedAfterResult(HOOK_CONTROL_ERROR, input.result), 'blocked');
  const rounds = await resolveRounds(db, input, dispatcher, roundIds);
  const envHooks = dispatcher.environmentHooks();
  const hasAfterControl = [...rounds.flatMap((r) => r.hooks), ...envHooks].some((h) => h.type === 'afterToolCall' && isControlHook(h));

  let reviewed: ReviewedResult = { final: input.result, status: 'allow' };
  // I4/P5: with an interception emitter the result also passes post_tool_call, control or not —
  // a deferred result never skips the interceptors (fail closed).
  if (hasAfterControl || dispatcher.intercepts) {
    const context = rebuildContext(input, await findOwnerUserId(d, input, roundIds));
    reviewed = await reviewInRounds(input, context, rounds);
  }
  // P1: the final result itself (the allowed result or the sanitized denial), nothing beside it.
  return publishOnce(d, input, reviewed.final, reviewed.status);
}
