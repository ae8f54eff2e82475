import { assertPrintableId } from '../contract/terminalText.ts';
import type { ParsedSerializedHook } from '../contract/hook.ts';
import { ApprovalNotClaimedError, DeferredContextError } from '../contract/errors.ts';
import { serializeHook } from '../contract/hook.ts';
import { assertTemplateSources, parseHookBatch, parseSerializedHooks } from '../contract/validate.ts';
import { assertStorableEvent } from '../contract/storableText.ts';
import { handedTemplateEnv, resolveConfig } from '../config/resolveConfig.ts';
import { createOperationWithHooks, getOperation, loadOperationHooks } from '../store/operationsRepo.ts';
import { getPlaceholder, insertPlaceholder, type StoredPlaceholder } from '../store/placeholdersRepo.ts';

import { parseTenant } from '../contract/tenant.ts';
import type { CreateOperationInput, OperationStore, OperationStoreOptions } from './operationStoreTypes.ts';
import { connectStore } from './storeConnection.ts';
import { publishDeferredResult } from './deferredResult.ts';
import { claimApproval, publishApproval } from './operationApprovals.ts';
import { completeOperation } from './operationCompletion.ts';

export type {
  OperationStoreOptions,
  ApprovalDecision,
  PublishDeferredResultInput,
  PublishDeferredResultOutput,
  OperationStore,
} from './operationStoreTypes.ts';

export { DeferredContextError, ApprovalNotClaimedError };

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
  const connection = connectStore(options, settings);
  const db = connection.db;

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

    // P1–P5: result control, then one conditional write (deferredResult.ts).
    publishDeferredResult: (input) => publishDeferredResult(db, input),
    // P3: the private claim, then the published decision (operationApprovals.ts).
    claimApproval: (input) => claimApproval(db, input),
    publishApproval: (input) => publishApproval(db, input),
    // D2: persist, onComplete / onError, unregister (operationCompletion.ts).
    completeOperation: (input) => completeOperation(db, input),
    close: () => connection.close(),
  };
}
