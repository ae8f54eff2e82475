/**
 * APR-1..3 (A1, A2): the approval queue's resolver behind a real emitter, on a real Postgres
 * (own schema). Each "restart" is a new queue, emitter and context builder: nothing in memory
 * carries over, only the store.
 */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalQueue, type ApprovalQueue } from '../../../src/approvals/approvalQueue.ts';
import { ApprovalNotFoundError, ApprovalNotPendingError } from '../../../src/contract/errors.ts';
import { AgentContextBuilder, ALLOW, ApprovalPendingError, InterceptionBlockedError, InterceptionEmitter, Verdict } from '../../../src/intercept/index.ts';
import type { InterceptionRecord, JsonObject } from '../../../src/contract/agentHooks.ts';
import { openPendingApproval, decideApprovalRow } from '../../../src/store/approvalsRepo.ts';
import { approvals } from '../../../src/store/schema.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';

let t: TestStore;

beforeAll(async () => {
  t = await createTestStore('apr');
});

afterAll(async () => {
  await t?.cleanup();
});

/** Escalates every call of `delete_file`; allows everything else. */
const guard = (ctx: { interception_point: string; tool_call?: unknown }) => {
  const name = (ctx.tool_call as { name?: string } | undefined)?.name;
  return ctx.interception_point === 'pre_tool_call' && name === 'delete_file' ? Verdict.escalate('needs_approval', 'deleting needs a person') : ALLOW;
};

type Agent = { emitter: InterceptionEmitter; builder: AgentContextBuilder; records: InterceptionRecord[] };

/** One agent process: its own queue instance, emitter and session (`<operation>/<uuid>`, as the run adapter mints). */
function agent(operationId: string, queue: ApprovalQueue): Agent {
  const records: InterceptionRecord[] = [];
  const emitter = new InterceptionEmitter({ interceptors: [guard], resolver: queue.resolver, recordSink: (r) => void records.push(r) });
  const builder = new AgentContextBuilder({ agentId: 'files-agent', framework: 'hookrelay', sessionId: `${operationId}/${randomUUID()}` });
  return { emitter, builder, records };
}

function queue(options: Parameters<typeof createApprovalQueue>[0] = {}): ApprovalQueue {
  return createApprovalQueue({ store: t.store, waitMs: 30, pollMs: 10, ...options });
}

async function callDelete(a: Agent, args: JsonObject, id = 'call-1'): Promise<unknown> {
  return a.emitter.emit(a.builder.preToolCall({ id, name: 'delete_file', args }));
}

async function pendingOf(promise: Promise<unknown>): Promise<ApprovalPendingError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApprovalPendingError);
  return err as ApprovalPendingError;
}

async function deniedOf(promise: Promise<unknown>): Promise<InterceptionBlockedError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InterceptionBlockedError);
  expect(err).not.toBeInstanceOf(ApprovalPendingError);
  return err as InterceptionBlockedError;
}

describe('APR-1 (A1): an escalation leaves a durable approval request', () => {
  it('APR-1 (A1): id, tenant, operation, point, tool call, context identity, redacted context, expiry, status pending', async () => {
    const op = `op-${randomUUID()}`;
    const q = queue({ tenant: 'acme', approvalRedactor: (ctx) => ({ tool: ctx.tool_call, note: 'redacted' }), expiresInMs: 60_000 });
    const a = agent(op, q);
    const pending = await pendingOf(callDelete(a, { path: '/tmp/x' }));
    expect(pending.approval).toMatchObject({ tenant: 'acme', operationId: op, toolCallId: 'call-1', toolName: 'delete_file' });
    // The deny stands and is recorded: the resolver answered unresolved.
    expect(pending.record.verdict.reason).toBe('host_error:approval_unresolved');

    const stored = await q.get(pending.approval.id);
    expect(stored).toMatchObject({
      id: pending.approval.id,
      tenant: 'acme',
      operationId: op,
      kind: 'escalation',
      point: 'pre_tool_call',
      toolCall: { id: 'call-1', name: 'delete_file' },
      status: 'pending',
      context: { tool: { id: 'call-1', name: 'delete_file', args: { path: '/tmp/x' } }, note: 'redacted' },
      escalation: { reason: 'needs_approval', message: 'deleting needs a person' },
      decidedBy: null,
      appliedAt: null,
    });
    expect(stored?.contextIdentity).toMatch(/^sha256:[0-9a-f]{64}$/);
    const ttl = (stored?.expiresAt.getTime() ?? 0) - (stored?.requestedAt.getTime() ?? 0);
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await q.close();
  });

  it('APR-1 (A1): the same call escalated again while pending joins the one request (no duplicate rows)', async () => {
    const op = `op-${randomUUID()}`;
    const q = queue();
    const first = await pendingOf(callDelete(agent(op, q), { path: '/a' }));
    const second = await pendingOf(callDelete(agent(op, q), { path: '/a' }));
    expect(second.approval.id).toBe(first.approval.id);
    expect(await q.list({ operationId: op })).toHaveLength(1);
  });
});

describe('APR-2 (A2): a decision applies once, only to the identical call', () => {
  it('APR-2 (A2): approved → the resumed call (new process, new session, new sequence) proceeds once; a second resume does not', async () => {
    const op = `op-${randomUUID()}`;
    const before = agent(op, queue());
    const pending = await pendingOf(callDelete(before, { path: '/tmp/report.txt' }));

    // Restart: a new queue instance decides; another new process resumes.
    const approver = queue();
    const decided = await approver.approve(pending.approval.id, { by: 'alice', reason: 'ok for the report' });
    expect(decided).toMatchObject({ status: 'approved', decidedBy: 'alice', reason: 'ok for the report' });

    const resumed = agent(op, queue());
    await expect(callDelete(resumed, { path: '/tmp/report.txt' })).resolves.toEqual({ path: '/tmp/report.txt' });
    expect(resumed.records[0]).toMatchObject({
      resolved_by: 'approval',
      verdict: { decision: 'allow', evidence: { verification_pointers: { 'hookrelay:approval': pending.approval.id } } },
    });
    expect(await approver.get(pending.approval.id)).toMatchObject({ outcome: 'applied' });

    // Exactly once: the same call presented again is a new request, not the old decision.
    const again = await pendingOf(callDelete(agent(op, queue()), { path: '/tmp/report.txt' }));
    expect(again.approval.id).not.toBe(pending.approval.id);
  });

  it('APR-2 (A2): two runs resuming the identical call at once — exactly one proceeds', async () => {
    const op = `op-${randomUUID()}`;
    const pending = await pendingOf(callDelete(agent(op, queue()), { path: '/race' }));
    await queue().approve(pending.approval.id);
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => callDelete(agent(op, queue()), { path: '/race' })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('APR-2 (A2): arguments changed after approval → the old decision is not applied; a new request is made', async () => {
    const op = `op-${randomUUID()}`;
    const q = queue();
    const pending = await pendingOf(callDelete(agent(op, q), { path: '/tmp/one-file' }));
    await q.approve(pending.approval.id);
    const changed = await pendingOf(callDelete(agent(op, queue()), { path: '/' }));
    expect(changed.approval.id).not.toBe(pending.approval.id);
    expect(await q.get(pending.approval.id)).toMatchObject({ status: 'approved', outcome: 'identity_mismatch' });
    // And the original call, presented later, does not inherit it either (closed, never applied).
    const original = await pendingOf(callDelete(agent(op, queue()), { path: '/tmp/one-file' }));
    expect(original.approval.id).not.toBe(pending.approval.id);
  });

  it('APR-2 (A2): another call (another id) never matches an approval', async () => {
    const op = `op-${randomUUID()}`;
    const q = queue();
    const pending = await pendingOf(callDelete(agent(op, q), { path: '/x' }, 'call-A'));
    await q.approve(pending.approval.id);
    const other = await pendingOf(callDelete(agent(op, queue()), { path: '/x' }, 'call-B'));
    expect(other.approval.id).not.toBe(pending.approval.id);
    // Another operation with the identical call id and args never matches either.
    const elsewhere = await pendingOf(callDelete(agent(`op-${randomUUID()}`, queue()), { path: '/x' }, 'call-A'));
    expect(elsewhere.approval.id).not.toBe(pending.approval.id);
  });

  it('APR-2 (A2): rejected → the resumed call is denied with the approver reason, resolved_by rejection', async () => {
    const op = `op-${randomUUID()}`;
    const q = queue();
    const pending = await pendingOf(callDelete(agent(op, q), { path: '/etc' }));
    await q.reject(pending.approval.id, { by: 'bob', reason: 'not /etc' });
    const resumed = agent(op, queue());
    const denied = await deniedOf(callDelete(resumed, { path: '/etc' }));
    expect(denied.record).toMatchObject({
      resolved_by: 'rejection',
      verdict: { decision: 'deny', reason: 'hookrelay:approval_rejected', message: 'not /etc' },
    });
  });

  it('APR-2 (A2): expiry → a late decision is refused and the resumed call is denied', async () => {
    const op = `op-${randomUUID()}`;
    const q = queue({ expiresInMs: 150 });
    const pending = await pendingOf(callDelete(agent(op, q), { path: '/late' }));
    await new Promise((r) => setTimeout(r, 250));
    await expect(q.approve(pending.approval.id)).rejects.toBeInstanceOf(ApprovalNotPendingError);
    expect(await q.get(pending.approval.id)).toMatchObject({ status: 'expired' });
    const denied = await deniedOf(callDelete(agent(op, queue()), { path: '/late' }));
    expect(denied.record.verdict.reason).toBe('hookrelay:approval_expired');
    expect(await q.get(pending.approval.id)).toMatchObject({ outcome: 'expired' });
  });

  it('APR-2 (A2): approved but used after the expiry → denied', async () => {
    const op = `op-${randomUUID()}`;
    const q = queue({ expiresInMs: 300 });
    const pending = await pendingOf(callDelete(agent(op, q), { path: '/slow' }));
    await q.approve(pending.approval.id);
    await new Promise((r) => setTimeout(r, 400));
    const denied = await deniedOf(callDelete(agent(op, queue()), { path: '/slow' }));
    expect(denied.record.verdict.reason).toBe('hookrelay:approval_expired');
    expect(await q.get(pending.approval.id)).toMatchObject({ status: 'approved', outcome: 'expired' });
  });

  it('APR-2 (A2): two decisions standing for one call → ambiguous, both closed, denied', async () => {
    const op = `op-${randomUUID()}`;
    const q = queue();
    const first = await pendingOf(callDelete(agent(op, q), { path: '/dup' }));
    await q.approve(first.approval.id);
    // A second decided request for the identical call (a writer racing past the pending index).
    const [row] = await t.store.db.select().from(approvals).where(eq(approvals.id, first.approval.id));
    const second = await openPendingApproval(t.store.db, {
      id: `apr_${randomUUID()}`,
      tenant: 'default',
      operationId: op,
      kind: 'escalation',
      point: 'pre_tool_call',
      toolCallId: 'call-1',
      toolName: 'delete_file',
      contextIdentity: row!.contextIdentity,
      context: {},
      escalation: {},
      expiresInMs: 60_000,
      answerNonce: 'n',
    });
    await decideApprovalRow(t.store.db, { id: second.row.id, status: 'rejected', decidedBy: 'x', reason: null });
    const denied = await deniedOf(callDelete(agent(op, queue()), { path: '/dup' }));
    expect(denied.record.verdict.reason).toBe('hookrelay:approval_ambiguous');
    expect(await q.get(first.approval.id)).toMatchObject({ outcome: 'ambiguous' });
    expect(await q.get(second.row.id)).toMatchObject({ outcome: 'ambiguous' });
  });

  it('APR-2 (A2): a store that does not answer → deny (approval_resolver_failed), never pending, never allowed', async () => {
    const unreachable = createApprovalQueue({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none', waitMs: 10 });
    const a = agent(`op-${randomUUID()}`, unreachable);
    const denied = await deniedOf(callDelete(a, { path: '/x' }));
    expect(denied.record.verdict.reason).toBe('host_error:approval_resolver_failed');
    await unreachable.close();
  });

  it('APR-2 (A2): a decision made while the resolver waits is applied in the same emission', async () => {
    const op = `op-${randomUUID()}`;
    const waiting = queue({ waitMs: 3_000, pollMs: 20 });
    const a = agent(op, waiting);
    const call = callDelete(a, { path: '/now' });
    let id: string | undefined;
    for (let i = 0; i < 100 && id === undefined; i++) {
      await new Promise((r) => setTimeout(r, 20));
      id = (await waiting.list({ operationId: op, status: 'pending' }))[0]?.id;
    }
    await queue().approve(id!);
    await expect(call).resolves.toEqual({ path: '/now' });
  });
});

describe('APR-3 (A3): a tenant sees only its own approvals', () => {
  it('APR-3 (A3): another tenant can neither list, read nor decide them', async () => {
    const op = `op-${randomUUID()}`;
    const mine = queue({ tenant: 'tenant-a' });
    const theirs = queue({ tenant: 'tenant-b' });
    const pending = await pendingOf(callDelete(agent(op, mine), { path: '/secret' }));
    expect(await theirs.get(pending.approval.id)).toBeUndefined();
    expect((await theirs.list()).map((a) => a.id)).not.toContain(pending.approval.id);
    await expect(theirs.approve(pending.approval.id)).rejects.toBeInstanceOf(ApprovalNotFoundError);
    expect(await mine.get(pending.approval.id)).toMatchObject({ status: 'pending' });
    // The other tenant's resolver never sees this tenant's decision.
    await mine.approve(pending.approval.id);
    const foreign = await pendingOf(callDelete(agent(op, queue({ tenant: 'tenant-b' })), { path: '/secret' }));
    expect(foreign.approval.tenant).toBe('tenant-b');
  });

  it('APR-3 (N1): a tenant outside the rule is refused at construction', () => {
    expect(() => createApprovalQueue({ store: t.store, tenant: 'a b' })).toThrow(/tenant/);
    expect(() => createApprovalQueue({ store: t.store, tenant: 'x'.repeat(129) })).toThrow(/tenant/);
  });
});
