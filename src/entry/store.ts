/**
 * `hookrelay/store`: the operation store (persisted caller hooks, deferred publish-once,
 * approvals, terminal lifecycle), the interception record sink, and the Postgres store and its
 * migrations. Loads pg and drizzle at import (PGlite only when the embedded store is opened).
 */
export { createOperationStore, type OperationStore, type OperationStoreOptions, type ApprovalDecision, type PublishDeferredResultInput, type PublishDeferredResultOutput } from '../control/operationStore.ts';
export { DeferredContextError, DeferredCancelledError, ApprovalNotClaimedError } from '../control/operationErrors.ts';
export { PlaceholderNotFoundError } from '../store/errors.ts';
export { createStoreRecordSink, type StoreRecordSink } from '../store/interceptionRecordSink.ts';
export { openStore, type Db, type Store, type OpenStoreOptions } from '../store/db.ts';
export { migrateStore, MIGRATIONS_FOLDER, type MigrateOptions } from '../store/migrate.ts';
