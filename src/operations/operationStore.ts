import { assertPrintableId } from '../contract/terminalText.ts';
import { isControlHook, type ParsedSerializedHook, type SerializedHook } from '../contract/hook.ts';
import {
  ApprovalNotClaimedError,
  DeferredCancelledError,
  DeferredContextError,
  ToolCallContextError,
  CriticalHookDeliveryError,
  type CriticalFailure,
  type DispatchReport,
  type NotAcceptedDelivery,
} from '../contract/errors.ts';
import { serializeHook } from '../contract/hook.ts';
import { blockedAfterResult, HOOK_CONTROL_ERROR } from '../decide/blockedResult.ts';
import { withReadableError } from '../util/errorMessage.ts';
import { withoutEnvHookIds } from '../contract/hookTypes.ts';
import { assertTemplateSources, parseHookBatch, parseSerializedHooks } from '../contract/validate.ts';
import { assertStorableEvent } from '../contract/storableText.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import { parseToolCallHookContext } from '../notify/toolCallContext.ts';
import { handedTemplateEnv, resolveConfig } from '../config/resolveConfig.ts';
import { storeOf, type Store } from '../store/db.ts';
import { openConfiguredStore } from '../store/openConfigured.ts';
import { createOperationWithHooks, finishOperation, getOperation, loadOperationHooks } from '../store/operationsRepo.ts';
import {
  claimPlaceholderApproval,
  getPlaceholder,
  insertPlaceholder,
  publishPlaceholderOnce,
  markApprovalPublished,
  PlaceholderNotFoundError,
  type StoredPlaceholder,
} from '../store/placeholdersRepo.ts';

import { parseTenant } from '../contract/tenant.ts';
import type {
  ApprovalDecision,
  CompleteOperationInput,
  CreateOperationInput,
  OperationDispatcher,
  OperationStore,
  OperationStoreOptions,
  PublishDeferredResultInput,
  PublishDeferredResultOutput,
} from './operationStoreTypes.ts';
import { withDefined } from '../util/withDefined.ts';
import { isObject } from '../util/isObject.ts';

export type {
  OperationStoreOptions,
  ApprovalDecision,
  PublishDeferredResultInput,
  PublishDeferredResultOutput,
  OperationStore,
} from './operationStoreTypes.ts';

export { DeferredContextError, ApprovalNotClaimedError };

/** Completion reasons that map to a stored status other than `completed`. */
const STATUS_BY_REASON: Record<string, string> = { error: 'error', interrupted: 'interrupted', parked: 'parked' };

/** P3: what a rejected or stopped call publishes: the user's decision, never tool output. */
function rejectionReceipt(decision: ApprovalDecision): ToolCallResult {
  const reason = decision.rejectionReason ?? (decision.action === 'stop' ? 'Stopped by user.' : 'Rejected by user.');
  return { content: reason, success: false, error: 'user_rejected', state: { type: decision.action, reason } };
}

/** The output of one publish: this call's decision only when its write applied (P2). */
function published(written: { applied: boolean; result: unknown }, status: 'allow' | 'blocked'): PublishDeferredResultOutput {
  const result = written.result as ToolCallResult;
  return written.applied ? { applied: true, result, status } : { applied: false, result };
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

/**
 * Operation records, persisted caller hooks, deferred placeholders and approvals (L2, P1–P6).
 * The runtime calls these; result control runs through the given dispatcher so the current
 * environment hooks are read fresh (L1).
 */
export function createOperationStore(options: OperationStoreOptions = {}): OperationStore {
  // Read once, with the settings schema; explicit options win.
  const { settings, templateEnv } = resolveConfig(['DATABASE_URL', 'HOOKRELAY_DATA_DIR', 'HOOKRELAY_TEMPLATE_ENV'], {
    templateEnv: options.templateEnv,
    resolvedTemplateEnv: handedTemplateEnv(options),
  });
  let opened: Promise<Store> | undefined;
  const owned = options.store === undefined;
  const getStore = (): Promise<Store> => {
    if (options.store) return Promise.resolve(storeOf(options.store));
    opened ??= openConfiguredStore({ databaseUrl: options.databaseUrl ?? settings.DATABASE_URL, dataDir: settings.HOOKRELAY_DATA_DIR });
    opened.catch(() => (opened = undefined)); // a failed open is retried by the next call
    return opened;
  };
  const db = async () => (await getStore()).db;

  /**
   * L2/L5/D4b: a round's caller hooks: the snapshot, else Postgres; re-validated; errors propagate.
   * L1/E4: an environment hook captured by an older snapshot or row is dropped (never restored
   * from an earlier environment), exactly as the dispatcher drops them from restored hooks.
   */
  async function roundHooks(operationId: string, snapshot: readonly SerializedHook[] | undefined): Promise<ParsedSerializedHook[] | undefined> {
    // D9a: nothing stored stays `undefined` (never `[]`), so the dispatcher uses its in-memory hooks.
    const raw: readonly unknown[] | undefined = snapshot ?? (await loadOperationHooks(await db(), operationId));
    return raw === undefined ? undefined : parseSerializedHooks(withoutEnvHookIds(raw));
  }

  function snapshotFor(input: PublishDeferredResultInput, operationId: string, first: boolean): readonly SerializedHook[] | undefined {
    const snap = input.snapshotHooks;
    if (snap === undefined) return undefined;
    if (Array.isArray(snap)) return first ? (snap as readonly SerializedHook[]) : undefined;
    return (snap as Readonly<Record<string, readonly SerializedHook[]>>)[operationId];
  }

  return {
    /** Create the record and persist caller hooks (templates unresolved) when any has a webhook (L1, L2). */
    async createOperation(input: CreateOperationInput): Promise<void> {
      const tenant = parseTenant(input.tenant, 'createOperation: tenant');
      // Ids Postgres cannot store (NUL, lone surrogates) are refused before anything is persisted.
      assertStorableEvent({ operationId: input.operationId, parentOperationId: input.parentOperationId, userId: input.userId }, 'createOperation', '');
      assertPrintableId(input.operationId, 'createOperation', 'operationId');
      assertPrintableId(input.parentOperationId, 'createOperation', 'parentOperationId');
      const parsed = parseHookBatch(input.hooks ?? []);
      assertTemplateSources(parsed, templateEnv); // W2: refused before anything is persisted
      const serialized = parsed.map(serializeHook).filter((h): h is ParsedSerializedHook => h !== undefined);
      // L2/D9: one transaction; a retried create neither duplicates nor re-runs a hook.
      await createOperationWithHooks(
        await db(),
        { id: input.operationId, tenant, parentOperationId: input.parentOperationId ?? null, userId: input.userId ?? null },
        serialized,
      );
    },

    async getOperation(operationId: string) {
      return getOperation(await db(), operationId);
    },

    /** The caller hooks persisted for an operation (validated), or undefined. */
    async loadHooks(operationId: string): Promise<ParsedSerializedHook[] | undefined> {
      const stored = await loadOperationHooks(await db(), operationId);
      return stored === undefined ? undefined : parseSerializedHooks(stored);
    },

    /** The empty placeholder a deferred result will fill once (P2). */
    async createPlaceholder(input: { operationId: string; toolCallId: string }): Promise<void> {
      assertStorableEvent({ operationId: input.operationId, toolCallId: input.toolCallId }, 'createPlaceholder', '');
      assertPrintableId(input.operationId, 'createPlaceholder', 'operationId');
      await insertPlaceholder(await db(), input.operationId, input.toolCallId);
    },

    async getPlaceholder(input: { operationId: string; toolCallId: string }): Promise<StoredPlaceholder | undefined> {
      return getPlaceholder(await db(), input.operationId, input.toolCallId);
    },

    /**
     * P1/P2/P4/P5, L2–L5: result control first — rounds of caller hooks (the intervention
     * operation, then this one), the current environment hooks once in the final round — then one
     * conditional write into the empty placeholder. The first final result wins.
     */
    async publishDeferredResult(input: PublishDeferredResultInput): Promise<PublishDeferredResultOutput> {
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
      if (claimed && claimed.action !== 'approve') {
        // P3: a human rejected or stopped this call: its output is never published, only the receipt.
        return published(
          await publishPlaceholderOnce(d, { operationId: input.operationId, toolCallId: input.toolCallId, result: rejectionReceipt(claimed) }),
          'blocked',
        );
      }

      const roundIds = [...new Set([input.interventionOperationId, input.operationId].filter((x): x is string => typeof x === 'string'))];
      const dispatcher = input.dispatcher;
      // P5/D9: a port that cannot say which hooks it runs leaves the hook set unknown: the result
      // is blocked, never allowed unreviewed (fail closed).
      if (typeof dispatcher.resolveCallerHooks !== 'function') {
        return published(
          await publishPlaceholderOnce(d, {
            operationId: input.operationId,
            toolCallId: input.toolCallId,
            result: blockedAfterResult(HOOK_CONTROL_ERROR, input.result),
          }),
          'blocked',
        );
      }
      // D9/P5: each round's hooks are the set the dispatcher runs (stored or snapshot hooks by D9
      // precedence, else the in-memory registration); the controls are counted from that set and
      // the same set is passed on, so a counted control is always asked.
      const rounds: { operationId: string; hooks: ParsedSerializedHook[] }[] = [];
      for (const [i, operationId] of roundIds.entries()) {
        const stored = await roundHooks(operationId, snapshotFor(input, operationId, i === 0));
        rounds.push({ operationId, hooks: dispatcher.resolveCallerHooks(operationId, stored) });
      }
      const envHooks = dispatcher.environmentHooks();
      const hasAfterControl = [...rounds.flatMap((r) => r.hooks), ...envHooks].some((h) => h.type === 'afterToolCall' && isControlHook(h));

      let final: ToolCallResult = input.result;
      let status: 'allow' | 'blocked' = 'allow';
      // I4/P5: with an interception emitter the result also passes post_tool_call, control or not —
      // a deferred result never skips the interceptors (fail closed).
      if (hasAfterControl || dispatcher.intercepts) {
        let owner: string | undefined;
        if (input.context?.userId === undefined) {
          for (const id of new Set([input.operationId, ...roundIds])) {
            owner = (await getOperation(d, id))?.userId ?? undefined;
            if (owner) break;
          }
        }
        const context = rebuildContext(input, owner);
        for (const [i, round] of rounds.entries()) {
          // Later rounds review the effective result so far (an I4 transform in an earlier round).
          const outcome = await dispatcher.evaluateAfterToolCall(round.operationId, context, final, {
            serializedHooks: round.hooks,
            environmentHooks: i === rounds.length - 1,
            interception: i === 0, // I4: one result, judged once (post_tool_call in the first round's session)
            ...withDefined({ signal: input.signal }),
          });
          if (outcome.status === 'cancelled') throw new DeferredCancelledError('result control was cancelled; nothing was written');
          if (outcome.status === 'blocked') {
            final = outcome.result as ToolCallResult;
            status = 'blocked';
            break;
          }
          if (outcome.result) final = outcome.result;
        }
      }
      // P1: the final result itself (the allowed result or the sanitized denial), nothing beside it.
      return published(await publishPlaceholderOnce(d, { operationId: input.operationId, toolCallId: input.toolCallId, result: final }), status);
    },

    /** P3: record the human decision privately (first claim wins); nothing is published. */
    async claimApproval(input: {
      operationId: string;
      toolCallId: string;
      decision: ApprovalDecision;
    }): Promise<{ applied: boolean; decision: ApprovalDecision }> {
      assertStorableEvent({ operationId: input.operationId, toolCallId: input.toolCallId, decision: input.decision }, 'claimApproval', '');
      const r = await claimPlaceholderApproval(await db(), { operationId: input.operationId, toolCallId: input.toolCallId, decision: { ...input.decision } });
      return { applied: r.applied, decision: r.approval as ApprovalDecision };
    },

    /**
     * P3: the runtime publishes the claimed decision after result control. A reject/stop receipt
     * holds no tool output and fills the placeholder directly; `afterHumanIntervention` (and
     * `onStopByHumanIntervention` for a stop) are dispatched.
     */
    async publishApproval(input: {
      operationId: string;
      toolCallId: string;
      dispatcher: OperationDispatcher;
    }): Promise<{ decision: ApprovalDecision; receiptApplied: boolean; alreadyPublished: boolean }> {
      const d = await db();
      const placeholder = await getPlaceholder(d, input.operationId, input.toolCallId);
      if (!placeholder) throw new PlaceholderNotFoundError(input.operationId, input.toolCallId);
      if (placeholder.approval === null)
        throw new ApprovalNotClaimedError(`no approval claimed for tool call "${input.toolCallId}"; call claimApproval() first`);
      const { publishedAt: _publishedAt, ...decision } = placeholder.approval as ApprovalDecision & { publishedAt?: string };
      if (_publishedAt !== undefined) return { decision, receiptApplied: false, alreadyPublished: true };
      let receiptApplied = false;
      if (decision.action !== 'approve') {
        const receipt = rejectionReceipt(decision);
        receiptApplied = (await publishPlaceholderOnce(d, { operationId: input.operationId, toolCallId: input.toolCallId, result: receipt })).applied;
      }
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
      // Marked after the notifications went out: a failed dispatch is retried by calling again.
      await markApprovalPublished(d, input.operationId, input.toolCallId);
      return { decision, receiptApplied, alreadyPublished: false };
    },

    /**
     * D2 terminal lifecycle: persist first, then `onComplete` (and `onError` only for reason
     * `error`); a CriticalHookDeliveryError is rethrown so a queue step is retried; then
     * unregister with the reason (an emitter's agent_shutdown maps it: `done` → `completed`,
     * `error` → `error`, `interrupted` / `max_steps` / `cost_limit` → `cancelled`) — except for
     * `parked` (waiting on an async tool): no hooks, no unregister, the session stays open.
     */
    async completeOperation(input: CompleteOperationInput): Promise<DispatchReport> {
      assertStorableEvent({ operationId: input.operationId, event: input.event }, 'completeOperation', '');
      const d = await db();
      await finishOperation(d, input.operationId, STATUS_BY_REASON[input.reason] ?? 'completed', input.reason);
      if (input.reason === 'parked') return { notAccepted: [] };
      const record = await getOperation(d, input.operationId);
      // D9a: nothing stored → undefined, so the in-memory onComplete / onError hooks run (queue mode too).
      const hooks = await loadOperationHooks(d, input.operationId);
      const base = { ...(record?.userId ? { userId: record.userId } : {}), ...input.event, operationId: input.operationId };
      const failures: CriticalFailure[] = [];
      const others: unknown[] = [];
      const notAccepted: NotAcceptedDelivery[] = [];
      const run = async (type: 'onComplete' | 'onError', event: Record<string, unknown>) => {
        try {
          const report = await input.dispatcher.dispatch(input.operationId, type, event, hooks);
          if (report) notAccepted.push(...report.notAccepted);
        } catch (error) {
          if (error instanceof CriticalHookDeliveryError) {
            failures.push(...error.failures);
            others.push(...error.otherErrors);
          } else others.push(error);
        }
      };
      // The run's error (any shape) becomes a readable errorMessage + raw errorDetail (errorMessage.ts).
      const failed = { ...base, ...withDefined({ error: input.error }) };
      const hasError = input.error !== undefined || ['error', 'errorMessage', 'errorDetail'].some((k) => base[k as keyof typeof base] !== undefined);
      try {
        await run('onComplete', { ...(input.reason === 'error' && hasError ? withReadableError(failed) : base), reason: input.reason });
        if (input.reason === 'error') await run('onError', withReadableError(failed));
      } finally {
        input.dispatcher.unregister(input.operationId, { reason: input.reason }); // agent_shutdown says how it ended
      }
      // D6: critical stays critical; the other errors of both dispatches travel with it.
      if (failures.length > 0) throw new CriticalHookDeliveryError(failures, others);
      if (others.length > 0) throw others[0];
      return { notAccepted };
    },

    async close(): Promise<void> {
      if (owned && opened) await (await opened).close();
    },
  };
}
