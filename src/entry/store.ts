/**
 * `hookrelay/store`: the operation store (persisted caller hooks, deferred publish-once,
 * approvals, terminal lifecycle), the interception record sink, and the Postgres store with its
 * migrations. Loads pg and drizzle at import (PGlite only when the embedded store is opened).
 * The published types name none of the drivers' types (see src/store/types.ts).
 */
import { openStore as openTypedStore, storeOf } from '../store/db.ts';
import { migrateStore as migrateTypedStore } from '../store/migrate.ts';
import type { MigrateOptions, OpenStoreOptions, StoreHandle } from '../store/types.ts';

export { createOperationStore } from '../operations/operationStore.ts';
export type {
  OperationStore,
  OperationStoreOptions,
  OperationDispatcher,
  ApprovalDecision,
  PublishDeferredResultInput,
  PublishDeferredResultOutput,
  CreateOperationInput,
} from '../operations/operationStoreTypes.ts';
export { DeferredContextError, DeferredCancelledError, ApprovalNotClaimedError } from '../contract/errors.ts';
export { PlaceholderNotFoundError, EmbeddedStoreUnavailableError, EmbeddedStoreUntrustedError, StoreUnavailableError } from '../contract/errors.ts';
export { createStoreRecordSink, type StoreRecordSink } from '../store/interceptionRecordSink.ts';
export {
  createApprovalQueue,
  DEFAULT_APPROVAL_WAIT_MS,
  DEFAULT_APPROVAL_EXPIRY_MS,
  type ApprovalQueue,
  type ApprovalQueueOptions,
  type ApprovalQueueResolver,
  type ApprovalListFilter,
  type DecideOptions,
} from '../approvals/approvalQueue.ts';
export { ApprovalNotFoundError, ApprovalNotPendingError, ApprovalTokenError } from '../contract/errors.ts';
export type { AnswerLinks, InterventionTool, InterventionOutcome, RequestInterventionInput, ResumeInterventionInput } from '../approvals/types.ts';
export { APPROVAL_REASONS } from '../approvals/reasons.ts';
export type { Approval, ApprovalStatus, ApprovalKind, ApprovalOutcome, PendingApproval } from '../contract/approval.ts';
export { MIGRATIONS_FOLDER } from '../store/migrationsFolder.ts';
export type { StoreHandle as Store, StoreDb, StoredPlaceholder, OpenStoreOptions, MigrateOptions } from '../store/types.ts';

/** Open the store: a pg pool when `databaseUrl` is given, else the embedded PGlite store (an optional peer). */
export function openStore(options: OpenStoreOptions): Promise<StoreHandle> {
  return openTypedStore(options);
}

/** Apply the shipped migrations (idempotent; concurrent runs on Postgres wait for each other). */
export function migrateStore(store: StoreHandle, options: MigrateOptions = {}): Promise<void> {
  return migrateTypedStore(storeOf(store), options);
}
