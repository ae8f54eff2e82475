/**
 * APR-4 (A3): `hookrelay approvals list | show | approve | reject` as a process, on a real
 * Postgres schema. Requests are made by a real emitter through the queue's resolver.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalQueue, type ApprovalQueue } from '../../src/approvals/approvalQueue.ts';
import { AgentContextBuilder, ALLOW, ApprovalPendingError, InterceptionEmitter, Verdict } from '../../src/intercept/index.ts';
import { createTestStore, type TestStore } from '../support/db.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/hookrelay.mjs');

type Run = { code: number | null; stdout: string; stderr: string };

let t: TestStore;

beforeAll(async () => {
  t = await createTestStore('aprcli');
});
afterAll(async () => {
  await t?.cleanup();
});

function cli(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** One escalated call through a real emitter: returns the pending approval's id. */
async function request(queue: ApprovalQueue, args: Record<string, string>): Promise<{ id: string; operationId: string; emit: () => Promise<unknown> }> {
  const operationId = `op-${randomUUID()}`;
  const emitter = () =>
    new InterceptionEmitter({
      interceptors: [(ctx) => (ctx.interception_point === 'pre_tool_call' ? Verdict.escalate('needs_approval') : ALLOW)],
      resolver: queue.resolver,
    });
  const emit = () =>
    emitter().emit(
      new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: `${operationId}/${randomUUID()}` }).preToolCall({
        id: 'c1',
        name: 'wire_money',
        args,
      }),
    );
  const err = await emit().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApprovalPendingError);
  return { id: (err as ApprovalPendingError).approval.id, operationId, emit };
}

describe('APR-4 (A3): the approvals CLI', () => {
  it('APR-4 (A3): list → show → approve with --reason; the resumed call proceeds; a second approve changes nothing (exit 1)', async () => {
    const queue = createApprovalQueue({ store: t.store, tenant: 'acme', waitMs: 0 });
    const { id, operationId, emit } = await request(queue, { amount: '10', to: 'bob' });

    const list = await cli(['approvals', 'list', '--json', '--tenant', 'acme']);
    expect(list.code).toBe(0);
    const listed = JSON.parse(list.stdout) as Array<{ id: string; status: string; operationId: string }>;
    expect(listed).toContainEqual(expect.objectContaining({ id, status: 'pending', operationId }));

    const table = await cli(['approvals', 'list']);
    expect(table.stdout).toContain(id);
    expect(table.stdout).toContain('wire_money');

    const show = await cli(['approvals', 'show', id, '--json']);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({
      id,
      tenant: 'acme',
      toolCall: { id: 'c1', name: 'wire_money' },
      context: { tool_call: { args: { amount: '10', to: 'bob' } } },
    });

    const approve = await cli(['approvals', 'approve', id, '--reason', 'invoice 42', '--by', 'alice', '--json']);
    expect(approve.code).toBe(0);
    expect(JSON.parse(approve.stdout)).toMatchObject({ id, status: 'approved', decidedBy: 'alice', reason: 'invoice 42' });

    await expect(emit()).resolves.toEqual({ amount: '10', to: 'bob' });

    const again = await cli(['approvals', 'reject', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is approved \(by alice.*nothing changed/);
    expect(await queue.get(id)).toMatchObject({ status: 'approved', outcome: 'applied' });
  }, 60_000);

  it('APR-4 (A3): reject with a reason; the resumed call is denied with it', async () => {
    const queue = createApprovalQueue({ store: t.store, waitMs: 0 });
    const { id, emit } = await request(queue, { amount: '1000000', to: 'mallory' });
    const reject = await cli(['approvals', 'reject', id, '--reason', 'too much']);
    expect(reject.code).toBe(0);
    expect(reject.stdout).toMatch(new RegExp(`^${id} rejected by cli:`));
    const err = (await emit().catch((e: unknown) => e)) as { record: { verdict: { reason?: string; message?: string } } };
    expect(err.record.verdict).toMatchObject({ reason: 'hookrelay:approval_rejected', message: 'too much' });
  }, 60_000);

  it('APR-4 (A3): --tenant refuses another tenant’s approval; an unknown id exits 2; a bad status exits 2', async () => {
    const queue = createApprovalQueue({ store: t.store, tenant: 'tenant-a', waitMs: 0 });
    const { id } = await request(queue, { amount: '5', to: 'carol' });
    const foreign = await cli(['approvals', 'approve', id, '--tenant', 'tenant-b']);
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toContain(`no approval ${id} for tenant tenant-b`);
    expect(await queue.get(id)).toMatchObject({ status: 'pending' });
    expect(JSON.parse((await cli(['approvals', 'list', '--json', '--tenant', 'tenant-b'])).stdout)).toEqual([]);
    const unknown = await cli(['approvals', 'show', 'apr_nope']);
    expect(unknown.code).toBe(2);
    const bad = await cli(['approvals', 'list', '--status', 'maybe']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--status must be one of');
  }, 60_000);
});
