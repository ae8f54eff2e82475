/**
 * `createApprovalQueue` (A1–A3): durable approvals for escalated tool calls and human
 * interventions. Its `resolver` plugs into the AGENT-HOOKS-0.1 approval seam (an emitter, the run
 * adapter's `createAgentHooks`, every integration); its methods are the tenant's approval API.
 */
import type { AgentContext, ApprovalRequest } from '../contract/agentHooks.ts';
import { ApprovalStatusSchema, type Approval, type ApprovalAnswer, type ApprovalStatus } from '../contract/approval.ts';
import { createDeliveryIdFactory } from '../contract/deliveryId.ts';
import { parseTenant } from '../contract/tenant.ts';
import { resolveConfig } from '../config/resolveConfig.ts';
import type { ApprovalResolverFunction } from '../intercept/approval.ts';
import { silentLogger, type Logger } from '../observability/logger.ts';
import { cancelApprovalRows, getApprovalRow, listApprovalRows, toApproval, type ApprovalRow } from '../store/approvalsRepo.ts';
import { storeOf, type Db, type Store } from '../store/db.ts';
import { openConfiguredStore } from '../store/openConfigured.ts';
import type { StoreHandle } from '../store/types.ts';
import type { WebhookConfigInput } from '../contract/webhook.ts';
import type { HookProducer } from '../queue/types.ts';
import { checkDecisionInput, decideApproval } from './decideApproval.ts';
import { displayContext, type ApprovalDisplayRedactor } from './displayContext.ts';
import { createApprovalAnnouncer } from './announce.ts';
import { ApprovalNotFoundError, ApprovalNotPendingError } from '../contract/errors.ts';
import { resolveApproval, type QueueResolution } from './resolveApproval.ts';
import { requestIntervention, resumeIntervention, type InterventionDeps } from './interventions.ts';
import type { AnswerLinks, InterventionOutcome, RequestInterventionInput, ResumeInterventionInput } from './types.ts';
import { withDefined } from '../util/withDefined.ts';

/** How long the resolver waits for a decision before the run ends "approval pending" (ms). */
export const DEFAULT_APPROVAL_WAIT_MS = 1_000;
const DEFAULT_POLL_MS = 100;
/** How long a request waits for a decision, and a decision for the run that uses it (ms). */
export const DEFAULT_APPROVAL_EXPIRY_MS = 24 * 60 * 60 * 1000;
/** Past the emitter's default resolver bound (5,000 ms) the wait would become approval_resolver_failed. */
const MAX_WAIT_MS = 60_000;
const MAX_EXPIRY_MS = 30 * 24 * 60 * 60 * 1000;

export type ApprovalQueueOptions = {
  /** Postgres URL; default DATABASE_URL, else the embedded store (as the operation store). */
  databaseUrl?: string;
  /** An already-open store (not closed by `close()`). */
  store?: StoreHandle;
  /** N1: whose approvals these are; default `default`. Named by the server app, never read from a context. */
  tenant?: string;
  /**
   * How long the resolver waits for an approver before answering `unresolved` (the deny stands, the
   * run ends "approval pending"); default 1,000 ms. Keep it below the emitter's `resolverTimeoutMs`
   * (default 5,000 ms), else the wait ends as `approval_resolver_failed`.
   */
  waitMs?: number;
  /** How often the wait looks for a decision; default 100 ms. */
  pollMs?: number;
  /** How long a request stays decidable, and a decision usable, from the request; default 24 h. */
  expiresInMs?: number;
  /** What of the context is stored and shown to approvers (default: the context as presented). The identity always covers the whole call. */
  approvalRedactor?: ApprovalDisplayRedactor;
  /**
   * A hook producer (`createHookProducer`): `approval.requested` / `approval.resolved` are enqueued
   * as soon as this process makes or decides a request. Without one, the worker announces them
   * (its sweep, every HOOKRELAY_APPROVAL_SWEEP_MS).
   */
  producer?: Pick<HookProducer, 'enqueue'>;
  /** Approver webhooks that receive both events (beside the operation's hooks subscribed to them). */
  approvers?: WebhookConfigInput[];
  /** The worker's answer endpoint and the HOOKRELAY_APPROVAL_SECRETS that sign answer tokens (put in `approval.requested`). */
  answerLinks?: AnswerLinks;
  logger?: Logger;
  /** Where DATABASE_URL / HOOKRELAY_DATA_DIR are read from (default `process.env`, read now). */
  env?: Record<string, string | undefined>;
};

/** The approval resolver object the queue hands to an emitter, the run adapter or an integration. */
export type ApprovalQueueResolver = { resolve: ApprovalResolverFunction };

export type ApprovalListFilter = { status?: ApprovalStatus; operationId?: string; limit?: number };

export type DecideOptions = {
  /** Who decides; default `api`. */
  by?: string;
  reason?: string;
};

export interface ApprovalQueue {
  /** N1: the tenant whose approvals this queue requests, lists and decides. */
  readonly tenant: string;
  /** The approval resolver (A1–A2): pass it as `resolver` to `createAgentHooks`, an `InterceptionEmitter` or an integration's bundle. */
  readonly resolver: ApprovalQueueResolver;
  /** A resolver whose requests belong to `operationId` (default: each context's session, less a run's `/<uuid>`). */
  resolverFor(scope: { operationId: string }): ApprovalQueueResolver;
  /** This tenant's approvals, newest first. */
  list(filter?: ApprovalListFilter): Promise<Approval[]>;
  /** One of this tenant's approvals (another tenant's id reads as unknown). */
  get(id: string): Promise<Approval | undefined>;
  approve(id: string, options?: DecideOptions): Promise<Approval>;
  reject(id: string, options?: DecideOptions): Promise<Approval>;
  /** Withdraw a pending request: a run presenting its call is denied (`hookrelay:approval_cancelled`). */
  cancel(id: string, options?: DecideOptions): Promise<Approval>;
  /**
   * A human intervention (P3): a durable request per pending tool call, its placeholder, then
   * `beforeHumanIntervention` (each pending tool with its `approvalId`).
   */
  requestIntervention(input: RequestInterventionInput): Promise<Approval[]>;
  /**
   * The runtime presents the call as it has it now: its decision is applied once, claimed and
   * published (`afterHumanIntervention`); `pending` until someone decided. Run the tool only on `approved`.
   */
  resumeIntervention(input: ResumeInterventionInput): Promise<InterventionOutcome>;
  close(): Promise<void>;
}

function boundedInt(value: number | undefined, fallback: number, min: number, max: number, field: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max)
    throw new TypeError(`createApprovalQueue: ${field} must be a whole number of milliseconds from ${min} to ${max}`);
  return value;
}

export function createApprovalQueue(options: ApprovalQueueOptions = {}): ApprovalQueue {
  if (options === null || typeof options !== 'object') throw new TypeError('createApprovalQueue(options): options must be an object');
  const tenant = parseTenant(options.tenant, 'createApprovalQueue: tenant');
  const waitMs = boundedInt(options.waitMs, DEFAULT_APPROVAL_WAIT_MS, 0, MAX_WAIT_MS, 'waitMs');
  const pollMs = boundedInt(options.pollMs, DEFAULT_POLL_MS, 10, MAX_WAIT_MS, 'pollMs');
  const expiresInMs = boundedInt(options.expiresInMs, DEFAULT_APPROVAL_EXPIRY_MS, 100, MAX_EXPIRY_MS, 'expiresInMs');
  if (options.approvalRedactor !== undefined && typeof options.approvalRedactor !== 'function')
    throw new TypeError('createApprovalQueue: approvalRedactor must be a function');
  const logger = options.logger ?? silentLogger();
  const { settings } = resolveConfig(['DATABASE_URL', 'HOOKRELAY_DATA_DIR'], { env: options.env });
  const newId = createDeliveryIdFactory();

  let opened: Promise<Store> | undefined;
  const owned = options.store === undefined;
  const db = async (): Promise<Db> => {
    if (options.store) return storeOf(options.store).db;
    opened ??= openConfiguredStore({ databaseUrl: options.databaseUrl ?? settings.DATABASE_URL, dataDir: settings.HOOKRELAY_DATA_DIR });
    opened.catch(() => (opened = undefined)); // a failed open is retried by the next call
    return (await opened).db;
  };
  const announcer =
    options.producer === undefined
      ? undefined
      : createApprovalAnnouncer({ db, producer: options.producer, approvers: options.approvers ?? [], answerLinks: options.answerLinks, logger });
  /** Announced in the background (never on the resolver's clock); whatever fails here, the worker's sweep announces. */
  const announce = (rows: readonly ApprovalRow[]) => {
    if (rows.length === 0 || announcer === undefined) return;
    announcer.announce(rows).catch((err: unknown) => logger.warn({ err }, 'approval announcement failed; the worker announces it'));
  };

  const resolverFor = (operationId: string | undefined): ApprovalQueueResolver => ({
    resolve: (request: ApprovalRequest, ctx: { signal: AbortSignal }): Promise<QueueResolution> =>
      resolveApproval(request, ctx?.signal, {
        db,
        tenant,
        operationId,
        waitMs,
        pollMs,
        expiresInMs,
        display: (context: AgentContext) => displayContext(context, options.approvalRedactor),
        newId: () => `apr_${newId().slice('dlv_'.length)}`,
        onRequested: (row) => announce([row]),
        onChanged: announce,
        logger,
      }),
  });

  const interventionDeps: InterventionDeps = {
    db,
    tenant,
    expiresInMs,
    display: (context: AgentContext) => displayContext(context, options.approvalRedactor),
    newId: () => `apr_${newId().slice('dlv_'.length)}`,
    onChanged: announce,
    logger,
  };

  const decide = async (id: string, answer: ApprovalAnswer, o: DecideOptions = {}): Promise<Approval> => {
    const row = await decideApproval(await db(), { id, answer, by: o.by ?? 'api', reason: o.reason, tenant });
    announce([row]);
    return toApproval(row);
  };

  return {
    tenant,
    resolver: resolverFor(undefined),
    resolverFor(scope) {
      if (scope === null || typeof scope !== 'object' || typeof scope.operationId !== 'string' || scope.operationId === '')
        throw new TypeError('resolverFor({ operationId }): operationId must be a non-empty string');
      return resolverFor(scope.operationId);
    },
    async list(filter = {}) {
      const status = filter.status === undefined ? undefined : ApprovalStatusSchema.parse(filter.status);
      const rows = await listApprovalRows(await db(), {
        tenant,
        ...withDefined({ status, operationId: filter.operationId, limit: filter.limit }),
      });
      return rows.map(toApproval);
    },
    async get(id) {
      const row = await getApprovalRow(await db(), id, tenant);
      return row === undefined ? undefined : toApproval(row);
    },
    approve: (id, o) => decide(id, 'approve', o),
    reject: (id, o) => decide(id, 'reject', o),
    async cancel(id, o = {}) {
      const { by, reason } = checkDecisionInput(o.by ?? 'api', o.reason);
      const d = await db();
      const existing = await getApprovalRow(d, id, tenant);
      if (existing === undefined) throw new ApprovalNotFoundError(id);
      const [row] = await cancelApprovalRows(d, [id], by, reason ?? `cancelled by ${by}`);
      if (row === undefined) throw new ApprovalNotPendingError(id, existing.status as ApprovalStatus, '');
      announce([row]);
      return toApproval(row);
    },
    requestIntervention: (input) => requestIntervention(input, interventionDeps),
    resumeIntervention: (input) => resumeIntervention(input, interventionDeps),
    async close() {
      if (owned && opened) await (await opened).close();
    },
  };
}
