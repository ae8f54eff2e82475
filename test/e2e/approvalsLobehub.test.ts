/**
 * APR-7 (A1, A2, P3): the LobeHub human-intervention flow end to end on durable approvals —
 * `beforeHumanIntervention` (each pending tool with its approvalId) → a decision from the CLI
 * (`hookrelay approvals approve|reject`, another process) → the runtime, restarted, resumes each
 * call: the decision is claimed privately and published (`afterHumanIntervention`), the tool runs
 * only when approved, once; a call whose arguments changed inherits nothing.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalQueue } from '../../src/approvals/approvalQueue.ts';
import type { InterventionTool } from '../../src/approvals/types.ts';
import type { AgentHook } from '../../src/contract/hook.ts';
import { HookDispatcher } from '../../src/dispatch/hookDispatcher.ts';
import { createOperationStore } from '../../src/operations/operationStore.ts';
import { createTestStore, type TestStore } from '../support/db.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/hookrelay.mjs');

let t: TestStore;
beforeAll(async () => {
  t = await createTestStore('aprlh');
});
afterAll(async () => {
  await t?.cleanup();
});

async function cli(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'warn' },
  });
  return stdout;
}

type Seen = { type: string; event: Record<string, unknown> };

/** One runtime process: its own dispatcher (local handlers recording the intervention events), operation store and approval queue. */
function runtime(operationId: string, seen: Seen[]) {
  const record = (type: string) => (event: Record<string, unknown>) => void seen.push({ type, event });
  const hooks: AgentHook[] = (['beforeHumanIntervention', 'afterHumanIntervention', 'onStopByHumanIntervention'] as const).map((type) => ({
    id: `audit-${type}`,
    type,
    handler: record(type),
  }));
  const dispatcher = new HookDispatcher({ env: {} });
  dispatcher.register(operationId, hooks);
  const operations = createOperationStore({ store: t.store, templateEnv: 'none' });
  const queue = createApprovalQueue({ store: t.store, tenant: 'lobe', waitMs: 0 });
  return { dispatcher, operations, queue };
}

describe('APR-7 (A1, A2, P3): LobeHub human intervention on durable approvals', () => {
  it('APR-7 (A2, P3): beforeHumanIntervention → CLI approve / reject → the restarted runtime publishes each decision (afterHumanIntervention); the approved tool runs once', async () => {
    const operationId = `op-${randomUUID()}`;
    const seen: Seen[] = [];
    const tools: InterventionTool[] = [
      { toolCallId: 'tc-delete', identifier: 'files', apiName: 'delete', args: { path: '/tmp/old.log' } },
      { toolCallId: 'tc-mail', identifier: 'mail', apiName: 'send', args: { to: 'all@example.com' } },
      { toolCallId: 'tc-move', identifier: 'files', apiName: 'move', args: { from: '/a', to: '/b' } },
    ];
    const before = runtime(operationId, seen);
    const approvals = await before.queue.requestIntervention({
      operationId,
      stepIndex: 2,
      pendingTools: tools,
      operations: before.operations,
      dispatcher: before.dispatcher,
    });
    expect(approvals.map((a) => [a.kind, a.toolCall?.name, a.status, a.tenant])).toEqual([
      ['intervention', 'files/delete', 'pending', 'lobe'],
      ['intervention', 'mail/send', 'pending', 'lobe'],
      ['intervention', 'files/move', 'pending', 'lobe'],
    ]);
    expect(seen).toEqual([
      {
        type: 'beforeHumanIntervention',
        event: expect.objectContaining({
          operationId,
          stepIndex: 2,
          pendingTools: tools.map((tool, i) => ({
            toolCallId: tool.toolCallId,
            identifier: tool.identifier,
            apiName: tool.apiName,
            approvalId: approvals[i]!.id,
          })),
        }),
      },
    ]);
    // Before anyone decided: pending, nothing published, no afterHumanIntervention.
    expect(await before.queue.resumeIntervention({ operationId, tool: tools[0]!, operations: before.operations, dispatcher: before.dispatcher })).toMatchObject(
      { status: 'pending' },
    );
    expect(seen.map((s) => s.type)).toEqual(['beforeHumanIntervention']);
    await before.operations.close();
    await before.queue.close();

    // People decide from the CLI (another process); P3: nothing is published yet.
    await cli(['approvals', 'approve', approvals[0]!.id, '--by', 'alice', '--tenant', 'lobe']);
    await cli(['approvals', 'reject', approvals[1]!.id, '--reason', 'not to everyone', '--by', 'bob']);
    await cli(['approvals', 'approve', approvals[2]!.id, '--by', 'alice']);
    expect(seen.map((s) => s.type)).toEqual(['beforeHumanIntervention']);

    // The runtime restarted: new dispatcher, stores and queue. It presents each call as it has it now.
    const after = runtime(operationId, seen);
    const ports = { operations: after.operations, dispatcher: after.dispatcher };
    let deletions = 0;
    const approved = await after.queue.resumeIntervention({ operationId, tool: tools[0]!, ...ports });
    expect(approved).toMatchObject({ status: 'approved', decision: { action: 'approve' }, published: true, approval: { outcome: 'applied' } });
    if (approved.status === 'approved') deletions++; // the runtime runs the tool only now
    const rejected = await after.queue.resumeIntervention({ operationId, tool: tools[1]!, ...ports });
    expect(rejected).toMatchObject({ status: 'rejected', decision: { action: 'reject', rejectionReason: 'not to everyone' }, published: true });
    // The move's arguments changed after approval: the earlier answer does not carry over.
    const changed = await after.queue.resumeIntervention({ operationId, tool: { ...tools[2]!, args: { from: '/a', to: '/' } }, ...ports });
    expect(changed.status).toBe('pending');
    expect(await after.queue.get(approvals[2]!.id)).toMatchObject({ status: 'approved', outcome: 'identity_mismatch' });

    expect(seen.filter((s) => s.type === 'afterHumanIntervention').map((s) => s.event)).toEqual([
      expect.objectContaining({ operationId, action: 'approve', toolCallId: 'tc-delete' }),
      expect.objectContaining({ operationId, action: 'reject', toolCallId: 'tc-mail', rejectionReason: 'not to everyone' }),
    ]);
    // P3: the reject receipt holds no tool output; the approved call's placeholder waits for its result (the tool's, after result control).
    expect(await after.operations.getPlaceholder({ operationId, toolCallId: 'tc-mail' })).toMatchObject({
      result: { success: false, error: 'user_rejected', content: 'not to everyone' },
    });
    expect(await after.operations.getPlaceholder({ operationId, toolCallId: 'tc-delete' })).toMatchObject({ result: null, approval: { action: 'approve' } });
    // Presented again, the spent decision is not applied a second time.
    expect(await after.queue.resumeIntervention({ operationId, tool: tools[0]!, ...ports })).toMatchObject({ status: 'pending' });
    expect(deletions).toBe(1);
    expect(seen.filter((s) => s.type === 'afterHumanIntervention')).toHaveLength(2);
    await after.operations.close();
    await after.queue.close();
  }, 90_000);
});
