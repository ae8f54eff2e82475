/**
 * A3: `approval.requested` and `approval.resolved`, delivered through the durable queue — one
 * ledger row per subscriber, signed (Standard Webhooks), retried and replayable like every
 * delivery. Subscribers: the configured approver webhooks (HOOKRELAY_APPROVER_URL, or the queue's
 * `approvers`) and the operation's own webhook hooks of type `approval.requested` /
 * `approval.resolved`.
 *
 * The approval row is the outbox: `requested_event_at` / `resolved_event_at` are set once the
 * ledger has the event. Whoever made the change announces it at once when it has a producer (a
 * server app's queue); the worker's sweep announces whatever is left (a CLI or console decision,
 * a crash in between, an expiry). The idempotency key `<approval id>:<event>` makes two announcers
 * converge on the same deliveries; each event's payload is built from fields that never change
 * once written, so both build the same bytes.
 */
import type { SerializedHook } from '../contract/hook.ts';
import type { ApprovalEventType } from '../contract/hookTypes.ts';
import type { WebhookConfigInput } from '../contract/webhook.ts';
import { parseSerializedHooks } from '../contract/validate.ts';
import type { Logger } from '../observability/logger.ts';
import { IdempotencyConflictError } from '../contract/errors.ts';
import type { HookProducer } from '../queue/types.ts';
import { markApprovalAnnounced, unannouncedApprovalRows, type ApprovalRow } from '../store/approvalsRepo.ts';
import type { Db } from '../store/db.ts';
import { loadOperationHooks } from '../store/operationsRepo.ts';
import { signAnswerToken } from './answerToken.ts';
import type { AnswerLinks } from './types.ts';
import { withDefined } from '../util/withDefined.ts';

export type ApprovalAnnouncer = {
  /** Announce what these rows still need (requested, then resolved); failures are logged, the sweep retries. */
  announce(rows: readonly ApprovalRow[]): Promise<void>;
  /** Announce the oldest rows the ledger has no event for yet; returns how many events were enqueued. */
  sweep(limit?: number): Promise<number>;
};

export type ApprovalAnnouncerOptions = {
  db: () => Promise<Db>;
  producer: Pick<HookProducer, 'enqueue'>;
  /** Approver webhooks subscribed to both events. */
  approvers: readonly WebhookConfigInput[];
  answerLinks?: AnswerLinks | undefined;
  logger: Logger;
};

const SWEEP_LIMIT = 100;

/** The approver webhooks as serialized hooks, one per event type (validated now: a bad config names its field). */
function approverHooks(approvers: readonly WebhookConfigInput[]): Record<ApprovalEventType, SerializedHook[]> {
  const build = (type: ApprovalEventType) =>
    parseSerializedHooks(approvers.map((webhook, i) => ({ id: approvers.length === 1 ? 'approver' : `approver-${i + 1}`, type, webhook })));
  return { 'approval.requested': build('approval.requested'), 'approval.resolved': build('approval.resolved') };
}

function common(row: ApprovalRow): Record<string, unknown> {
  return {
    operationId: row.operationId,
    approvalId: row.id,
    tenant: row.tenant,
    kind: row.kind,
    point: row.point,
    toolCall: row.toolCallId === null ? null : { id: row.toolCallId, name: row.toolName },
    contextIdentity: row.contextIdentity,
    requestedAt: row.requestedAt.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
  };
}

/** `approval.requested`: the request as it was made (never its later state), with answer tokens while it is open. */
function requestedEvent(row: ApprovalRow, links: AnswerLinks | undefined): Record<string, unknown> {
  const event: Record<string, unknown> = { ...common(row), status: 'pending', context: row.context, escalation: row.escalation };
  const secret = links?.secrets[0];
  if (links !== undefined && secret !== undefined && row.answerNonce !== null) {
    const claims = { approvalId: row.id, tenant: row.tenant, nonce: row.answerNonce, expiresAt: row.expiresAt };
    event.answer = {
      ...withDefined({ url: links.url }),
      approve: signAnswerToken({ ...claims, answer: 'approve' }, secret),
      reject: signAnswerToken({ ...claims, answer: 'reject' }, secret),
    };
  }
  return event;
}

/** `approval.resolved`: how it ended (approved, rejected, expired or cancelled), by whom and why. */
function resolvedEvent(row: ApprovalRow): Record<string, unknown> {
  return {
    ...common(row),
    status: row.status,
    decidedBy: row.decidedBy,
    decidedAt: row.decidedAt?.toISOString() ?? null,
    reason: row.reason,
  };
}

export function createApprovalAnnouncer(options: ApprovalAnnouncerOptions): ApprovalAnnouncer {
  const approvers = approverHooks(options.approvers);

  async function enqueue(row: ApprovalRow, type: ApprovalEventType, event: Record<string, unknown>, hooks: readonly SerializedHook[]): Promise<number> {
    if (hooks.length === 0) return 0;
    try {
      // N2: the approval's own tenant, so its events meet that tenant's endpoint state (and its operation's tenant check).
      await options.producer.enqueue({ operationId: row.operationId, tenant: row.tenant, type, event, hooks, idempotencyKey: `${row.id}:${type}` });
    } catch (err) {
      // Another announcer, configured with other approvers, already put this event in the ledger under its key.
      if (!(err instanceof IdempotencyConflictError)) throw err;
      options.logger.warn({ approvalId: row.id, event: type }, 'approval event already in the ledger with another subscriber set; kept as it is');
    }
    return 1;
  }

  async function send(db: Db, type: ApprovalEventType, row: ApprovalRow): Promise<number> {
    const stored = (await loadOperationHooks(db, row.operationId)) ?? [];
    const subscribed = (stored as SerializedHook[]).filter((h) => h?.type === type);
    let sent: number;
    if (type === 'approval.requested') {
      // Answer tokens go only to the approvers the operator configured: whoever registers an
      // operation's hooks (the agent's side) must not be able to approve its own escalations.
      sent =
        (await enqueue(row, type, requestedEvent(row, options.answerLinks), approvers[type])) +
        (await enqueue(row, type, requestedEvent(row, undefined), subscribed));
    } else {
      sent = await enqueue(row, type, resolvedEvent(row), [...approvers[type], ...subscribed]);
    }
    await markApprovalAnnounced(db, row.id, type === 'approval.requested' ? 'requested' : 'resolved');
    return sent;
  }

  async function announceRow(db: Db, row: ApprovalRow): Promise<number> {
    let sent = 0;
    if (row.requestedEventAt === null) sent += await send(db, 'approval.requested', row);
    if (row.status !== 'pending' && row.resolvedEventAt === null) sent += await send(db, 'approval.resolved', row);
    return sent;
  }

  return {
    async announce(rows) {
      const db = await options.db();
      for (const row of rows) {
        try {
          await announceRow(db, row);
        } catch (err) {
          options.logger.warn({ err, approvalId: row.id }, 'approval event not enqueued yet; the worker sweep retries');
        }
      }
    },
    async sweep(limit = SWEEP_LIMIT) {
      const db = await options.db();
      let sent = 0;
      for (const row of await unannouncedApprovalRows(db, limit)) {
        try {
          sent += await announceRow(db, row);
        } catch (err) {
          options.logger.warn({ err, approvalId: row.id }, 'approval event not enqueued; retried at the next sweep');
        }
      }
      return sent;
    },
  };
}
