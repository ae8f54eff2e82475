/**
 * APR-4 (A3): approval events through the durable queue — ledger rows per subscriber (the queue's
 * approver webhook and the operation's own hooks of type approval.requested / approval.resolved),
 * delivered by a real worker, Standard Webhooks signed, announced once however many announcers.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalQueue } from '../../../src/approvals/approvalQueue.ts';
import { createApprovalAnnouncer } from '../../../src/approvals/announce.ts';
import { verifyAnswerToken } from '../../../src/approvals/answerToken.ts';
import { createOperationStore } from '../../../src/operations/operationStore.ts';
import { AgentContextBuilder, ALLOW, ApprovalPendingError, InterceptionEmitter, Verdict } from '../../../src/intercept/index.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { listApprovalRows } from '../../../src/store/approvalsRepo.ts';
import { deliveries } from '../../../src/store/schema.ts';
import { startReceiver, type Receiver, type RecordedRequest } from '../../support/receiver.ts';
import { createStack, waitFor, type Stack } from '../queue/harness.ts';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
let stack: Stack;
let receiver: Receiver;

beforeAll(async () => {
  stack = await createStack('aprev');
  receiver = await startReceiver({ status: 200 });
  await stack.startWorker({ HOOKRELAY_SIGNING_SECRETS: SECRET, HOOKRELAY_APPROVAL_SWEEP_MS: '100' });
});

afterAll(async () => {
  await stack?.cleanup();
  await receiver?.close();
});

function body(r: RecordedRequest): Record<string, unknown> {
  return JSON.parse(r.body) as Record<string, unknown>;
}

function signedBody(r: RecordedRequest): Record<string, unknown> {
  const h = (n: string) => String(r.headers[n] ?? '');
  return new Webhook(SECRET).verify(r.body, {
    'webhook-id': h('webhook-id'),
    'webhook-timestamp': h('webhook-timestamp'),
    'webhook-signature': h('webhook-signature'),
  }) as Record<string, unknown>;
}

describe('APR-4 (A3): approval.requested / approval.resolved through the ledger', () => {
  it('APR-4 (A3): delivered to the approver webhook and to the operation’s subscribed hooks, signed, once each', async () => {
    const operationId = `op-${randomUUID()}`;
    const ops = createOperationStore({ store: stack.db.store });
    await ops.createOperation({
      operationId,
      hooks: [
        { id: 'ops-requested', type: 'approval.requested', webhook: { url: `${receiver.url}/ops` } },
        { id: 'ops-resolved', type: 'approval.resolved', webhook: { url: `${receiver.url}/ops` } },
        { id: 'ops-done', type: 'onComplete', webhook: { url: `${receiver.url}/ops` } },
      ],
    });
    const answerSecret = randomBytes(32).toString('hex');
    const queue = createApprovalQueue({
      store: stack.db.store,
      producer: stack.producer,
      approvers: [{ url: `${receiver.url}/approver` }],
      answerLinks: { url: 'https://hooks.example.com/approvals/answer', secrets: [answerSecret] },
      waitMs: 0,
    });
    const emitter = new InterceptionEmitter({
      interceptors: [(ctx) => (ctx.interception_point === 'pre_tool_call' ? Verdict.escalate('needs_approval') : ALLOW)],
      resolver: queue.resolver,
    });
    const builder = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: `${operationId}/${randomUUID()}` });
    const err = await emitter.emit(builder.preToolCall({ id: 'c1', name: 'send_email', args: { to: 'ceo@example.com' } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApprovalPendingError);
    const id = (err as ApprovalPendingError).approval.id;

    const of = (type: string) => receiver.requests.filter((r) => body(r).approvalId === id && body(r).hookType === type);
    await waitFor(() => of('approval.requested').length === 2, 20_000, 'approval.requested to both subscribers');
    expect(
      of('approval.requested')
        .map((r) => r.path)
        .sort(),
    ).toEqual(['/approver', '/ops']);
    for (const r of of('approval.requested')) {
      const event = signedBody(r);
      expect(event).toMatchObject({
        approvalId: id,
        operationId,
        status: 'pending',
        toolCall: { id: 'c1', name: 'send_email' },
        deliveryId: r.headers['webhook-id'],
      });
      if (r.path === '/ops') {
        // The operation's own hooks (the agent's side) never get answer tokens: they cannot approve their own escalations.
        expect(event.answer).toBeUndefined();
        continue;
      }
      const links = event.answer as { url: string; approve: string; reject: string };
      expect(links.url).toBe('https://hooks.example.com/approvals/answer');
      expect(verifyAnswerToken(links.approve, [answerSecret])).toMatchObject({ approvalId: id, answer: 'approve', tenant: 'default' });
      expect(verifyAnswerToken(links.reject, [answerSecret])).toMatchObject({ approvalId: id, answer: 'reject' });
    }

    await queue.approve(id, { by: 'ops-lead', reason: 'expected' });
    await waitFor(() => of('approval.resolved').length === 2, 20_000, 'approval.resolved to both subscribers');
    for (const r of of('approval.resolved'))
      expect(signedBody(r)).toMatchObject({ approvalId: id, status: 'approved', decidedBy: 'ops-lead', reason: 'expected' });
    // The onComplete hook of the operation never hears of approvals.
    expect(receiver.requests.filter((r) => body(r).approvalId === id && body(r).hookId === 'ops-done')).toEqual([]);

    // Announcing again (a second worker, a retried sweep) stores nothing new.
    const [row] = await listApprovalRows(stack.db.store.db, { operationId });
    const again = createApprovalAnnouncer({
      db: async () => stack.db.store.db,
      producer: stack.producer,
      approvers: [{ url: `${receiver.url}/approver` }],
      answerLinks: { url: 'https://hooks.example.com/approvals/answer', secrets: [answerSecret] },
      logger: silentLogger(),
    });
    await again.announce([{ ...row!, requestedEventAt: null, resolvedEventAt: null }]);
    const rows = await stack.db.store.db
      .select()
      .from(deliveries)
      .where(and(eq(deliveries.operationId, operationId)));
    expect(rows.map((d) => `${d.eventType} ${d.hookId}`).sort()).toEqual([
      'approval.requested approver',
      'approval.requested ops-requested',
      'approval.resolved approver',
      'approval.resolved ops-resolved',
    ]);
    await ops.close();
  }, 60_000);

  it("TEN-1 (N1, N2): a tenant's approval events are enqueued for that tenant (its operation's tenant check passes; its endpoint state is its own)", async () => {
    const operationId = `op-${randomUUID()}`;
    const ops = createOperationStore({ store: stack.db.store });
    await ops.createOperation({
      operationId,
      tenant: 'acme',
      hooks: [{ id: 'acme-requested', type: 'approval.requested', webhook: { url: `${receiver.url}/acme` } }],
    });
    const queue = createApprovalQueue({ store: stack.db.store, producer: stack.producer, tenant: 'acme', waitMs: 0 });
    const emitter = new InterceptionEmitter({ interceptors: [() => Verdict.escalate('needs_approval')], resolver: queue.resolver });
    const builder = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: `${operationId}/${randomUUID()}` });
    const err = await emitter.emit(builder.preToolCall({ id: 'c1', name: 'send_email', args: {} })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApprovalPendingError);
    const id = (err as ApprovalPendingError).approval.id;
    await waitFor(() => receiver.requests.some((r) => r.path === '/acme' && body(r).approvalId === id), 20_000, "approval.requested to acme's hook");
    const rows = await stack.db.store.db.select().from(deliveries).where(eq(deliveries.operationId, operationId));
    expect(rows.map((d) => `${d.eventType} ${d.tenant}`)).toEqual(['approval.requested acme']);
    await ops.close();
  }, 60_000);

  it('APR-4 (A3): an expiry is announced by the worker sweep as approval.resolved (status expired), with no process of the agent left', async () => {
    const operationId = `op-${randomUUID()}`;
    const ops = createOperationStore({ store: stack.db.store });
    await ops.createOperation({ operationId, hooks: [{ id: 'ops-resolved', type: 'approval.resolved', webhook: { url: `${receiver.url}/expiry` } }] });
    const queue = createApprovalQueue({ store: stack.db.store, waitMs: 0, expiresInMs: 200 });
    const emitter = new InterceptionEmitter({ interceptors: [() => Verdict.escalate('needs_approval')], resolver: queue.resolver });
    const builder = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: operationId });
    const err = (await emitter.emit(builder.preToolCall({ id: 'c1', name: 'x', args: {} })).catch((e: unknown) => e)) as ApprovalPendingError;
    const id = err.approval.id;
    await waitFor(() => receiver.requests.some((r) => body(r).approvalId === id && body(r).status === 'expired'), 20_000, 'approval.resolved (expired)');
    expect(await queue.get(id)).toMatchObject({ status: 'expired' });
    await ops.close();
  }, 60_000);

  it('APR-4 (A3): an approval hook is a webhook only — a handler is refused at registration, naming the field', () => {
    const ops = createOperationStore({ store: stack.db.store });
    return expect(
      ops.createOperation({ operationId: `op-${randomUUID()}`, hooks: [{ id: 'h', type: 'approval.requested', handler: () => undefined }] }),
    ).rejects.toThrow(/handler/);
  });
});
