/**
 * The approval queue's public shapes that are not in the contract: kept apart from the modules
 * that work with the store, so the published declarations name no driver type (drizzle's do not
 * type-check under `skipLibCheck: false`; see src/store/types.ts).
 */
import type { JsonObject } from '../contract/agentHooks.ts';
import type { Approval } from '../contract/approval.ts';
import type { ApprovalDecision, OperationDispatcher, OperationStore } from '../operations/operationStoreTypes.ts';

/** The secrets that sign answer tokens, and the worker's answer endpoint when its public URL is known. */
export type AnswerLinks = { url?: string | undefined; secrets: readonly string[] };

/** A tool call waiting for a person (a `pendingTools` entry, with its id and arguments). */
export type InterventionTool = { toolCallId: string; identifier: string; apiName: string; args: JsonObject };

/** What the intervention flow needs of the runtime: its operation store (placeholders, claim, publish) and its dispatcher. */
type InterventionPorts = {
  operations: Pick<OperationStore, 'createPlaceholder' | 'claimApproval' | 'publishApproval'>;
  dispatcher: OperationDispatcher;
};

export type RequestInterventionInput = InterventionPorts & {
  operationId: string;
  stepIndex?: number;
  pendingTools: InterventionTool[];
};

export type ResumeInterventionInput = InterventionPorts & { operationId: string; tool: InterventionTool };

/**
 * `pending`: no decision yet (the tool must not run). Otherwise the decision was claimed and
 * published: run the tool only for `approved`; `rejected` is the approver's, `denied` a doubt
 * (expired, ambiguous, spent) — both published as a reject receipt.
 */
export type InterventionOutcome =
  | { status: 'pending'; approval: Approval }
  | { status: 'approved' | 'rejected' | 'denied'; decision: ApprovalDecision; approval: Approval | undefined; published: boolean };
