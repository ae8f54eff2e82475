/**
 * The operation store's public shapes (L2, P1–P6), apart from its implementation so the light
 * package entry can type it without loading (or naming) the store's drivers.
 */
import type { ParsedSerializedHook, SerializedHook, AgentHook } from '../contract/hook.ts';
import type { DispatchReport } from '../contract/errors.ts';
import type { HookType } from '../contract/hookTypes.ts';
import type { OperationRecord } from '../contract/operation.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { StoredPlaceholder, StoreHandle } from '../store/types.ts';
import type { ToolCallControlOutcome } from '../decide/evaluateControls.ts';

/**
 * What the operation store needs from a dispatcher (HookDispatcher provides it): a port, so
 * operations never import dispatch.
 */
export interface OperationDispatcher {
  /** I4: an interception emitter reviews tool calls (deferred results then pass post_tool_call too). */
  readonly intercepts: boolean;
  /** E4/L1: the current environment's hooks (throws naming the variables when invalid). */
  environmentHooks(): ParsedSerializedHook[];
  /** D9a: the in-memory webhook hooks of an operation, or undefined. */
  getSerializedHooks(operationId: string): SerializedHook[] | undefined;
  /**
   * D9/D9a: the caller webhook hooks a dispatch or evaluate given `serializedHooks` runs
   * (`undefined`: nothing stored, the in-memory registration is used). Result control counts
   * controls from this set and runs the same set (fail closed; a port without it blocks results).
   */
  resolveCallerHooks(operationId: string, serializedHooks?: readonly unknown[]): ParsedSerializedHook[];
  evaluateAfterToolCall(
    operationId: string,
    context: ToolCallHookContext,
    result: ToolCallResult,
    opts?: { signal?: AbortSignal; serializedHooks?: readonly unknown[]; environmentHooks?: boolean; interception?: boolean },
  ): Promise<ToolCallControlOutcome>;
  /** Resolves to what it could not hand on (F1; a port that reports nothing may resolve to undefined). */
  dispatch(operationId: string, type: HookType, event: Record<string, unknown>, serializedHooks?: readonly unknown[]): Promise<DispatchReport | undefined>;
  unregister(operationId: string, options?: { reason?: string }): void;
}

export type OperationStoreOptions = {
  /** Postgres URL; default DATABASE_URL, else the embedded store. */
  databaseUrl?: string;
  /** An already-open store (tests, or a process that owns one). Not closed by `close()`. */
  store?: StoreHandle;
  /** W2: which variables hook templates may read; default HOOKRELAY_TEMPLATE_ENV (read now), else `none`. */
  templateEnv?: string;
};

export type ApprovalDecision = { action: 'approve' | 'reject' | 'rejectAndContinue' | 'stop'; rejectionReason?: string; [k: string]: unknown };

export type PublishDeferredResultInput = {
  operationId: string;
  toolCallId: string;
  result: ToolCallResult;
  /** The tool-call context (T1); needed to rebuild the call when an afterToolCall control exists. */
  context?: Partial<ToolCallHookContext>;
  /** P4: the operation whose caller hooks govern this result (the intervention / parent operation). */
  interventionOperationId?: string;
  /**
   * L2: the runtime's snapshot of caller hooks. An array is the snapshot of the first round's
   * operation (`interventionOperationId ?? operationId`); a record maps operation ids to snapshots.
   * Rounds without a snapshot restore from Postgres.
   */
  snapshotHooks?: readonly SerializedHook[] | Readonly<Record<string, readonly SerializedHook[]>>;
  dispatcher: OperationDispatcher;
  signal?: AbortSignal;
};

/**
 * `applied: true`: this call wrote the final result and `status` says what its result control
 * decided. `applied: false`: a result was published before (P2) and `result` is the stored one;
 * it speaks for itself (a denial is the sanitized R5b shape), since no review state is stored
 * beside it (P1) and this call decided nothing.
 */
export type PublishDeferredResultOutput = { applied: true; result: ToolCallResult; status: 'allow' | 'blocked' } | { applied: false; result: ToolCallResult };

export type CreateOperationInput = {
  operationId: string;
  /** N1: the tenant the operation belongs to (default 'default'); a second create naming another throws TenantMismatchError. */
  tenant?: string;
  parentOperationId?: string;
  userId?: string;
  hooks?: AgentHook[] | SerializedHook[];
};
type ToolCallRef = { operationId: string; toolCallId: string };

export interface OperationStore {
  /** L2: the operation record and its caller hooks, templates unresolved; idempotent. */
  createOperation(input: CreateOperationInput): Promise<void>;
  getOperation(operationId: string): Promise<OperationRecord | undefined>;
  /** The caller hooks persisted for an operation (validated), or undefined. */
  loadHooks(operationId: string): Promise<ParsedSerializedHook[] | undefined>;
  /** The empty placeholder a deferred result will fill once (P2). */
  createPlaceholder(input: ToolCallRef): Promise<void>;
  getPlaceholder(input: ToolCallRef): Promise<StoredPlaceholder | undefined>;
  /** P1/P2/P4/P5: result control, then one conditional write into the empty placeholder. */
  publishDeferredResult(input: PublishDeferredResultInput): Promise<PublishDeferredResultOutput>;
  /** P3: record the human decision privately (first claim wins); nothing is published. */
  claimApproval(input: ToolCallRef & { decision: ApprovalDecision }): Promise<{ applied: boolean; decision: ApprovalDecision }>;
  /** P3: publish the claimed decision after result control; idempotent. */
  publishApproval(
    input: ToolCallRef & { dispatcher: OperationDispatcher },
  ): Promise<{ decision: ApprovalDecision; receiptApplied: boolean; alreadyPublished: boolean }>;
  /** D2: persist, onComplete (and onError), unregister with the reason; resolves to what its dispatches could not hand on (F1). */
  completeOperation(input: CompleteOperationInput): Promise<DispatchReport>;
  close(): Promise<void>;
}

/** `completeOperation`'s input. */
export type CompleteOperationInput = {
  operationId: string;
  /** `done`, `error`, `interrupted`, `max_steps`, `cost_limit`, `parked`, … */
  reason: string;
  dispatcher: OperationDispatcher;
  /** Extra event fields for onComplete / onError (`lastAssistantContent`, usage, …). */
  event?: Record<string, unknown>;
  /**
   * The run's error, in whatever shape the runtime has it (an `Error`, an SDK error, a provider
   * error body, an agent-state error with only a type): with reason `error`, onComplete and onError
   * carry a readable `errorMessage`, the raw `errorDetail` (JSON) and `errorType` (`readableErrorMessage`).
   */
  error?: unknown;
};
