/**
 * APR-8 (A2): an AI SDK run (ai 7, its own mock model) pauses and resumes through the approval
 * queue. The AI SDK's approval check (`toolApproval`, from `run.settings()`) judges pre_tool_call;
 * a call an approval waits for pauses the loop the AI SDK's way (a `tool-approval-request`), the
 * run ends `approval_pending`. A new process answers the request and resumes: the tool runs once,
 * only as approved; a rejection is a deny the model sees.
 */
import { randomUUID } from 'node:crypto';
import { generateText, jsonSchema, type ModelMessage, stepCountIs, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalQueue } from '../../../src/approvals/approvalQueue.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createAiSdkHooks } from '../../../src/integrations/aiSdk.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { ALLOW, Verdict } from '../../../src/intercept/verdict.ts';
import type { InterceptionRecord } from '../../../src/contract/agentHooks.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { mockModel, textResult, toolCallsResult } from '../../support/aiSdkMock.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';

let t: TestStore;
beforeAll(async () => {
  t = await createTestStore('aprai');
});
afterAll(async () => {
  await t?.cleanup();
});

/** One agent process: its own approval queue, bundle, dispatcher (recording onComplete) and AI SDK integration. */
function agentProcess() {
  const queue = createApprovalQueue({ store: t.store, waitMs: 0 });
  const records: InterceptionRecord[] = [];
  const hooks = createAgentHooks({
    interceptors: [(ctx) => (ctx.interception_point === 'pre_tool_call' ? Verdict.escalate('needs_approval', 'deleting needs a person') : ALLOW)],
    resolver: queue.resolver,
    recordSink: (r) => void records.push(r),
  });
  const dispatcher = new HookDispatcher({ logger: silentLogger(), env: {} });
  const completions: Array<Record<string, unknown>> = [];
  return { queue, hooks, dispatcher, completions, records, relay: createAiSdkHooks({ hooks, dispatcher }) };
}

function deleteTool(ran: unknown[]) {
  return {
    delete_file: tool({
      description: 'delete a file',
      inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
      execute: async (args) => {
        ran.push(args);
        return 'deleted';
      },
    }),
  };
}

async function pausedRun(operationId: string, ran: unknown[]) {
  const p = agentProcess();
  p.dispatcher.register(operationId, [{ id: 'done', type: 'onComplete', handler: (e) => void p.completions.push(e) }]);
  const run = p.relay.startRun({ input: 'clean up /tmp/x', operationId });
  const model = mockModel({ generate: [toolCallsResult([{ id: 'c1', name: 'delete_file', args: { path: '/tmp/x' } }]), textResult('unreachable')] });
  const result = await run.track(generateText({ ...(await run.settings({ model, tools: deleteTool(ran) })), stopWhen: stepCountIs(3) }));
  await p.queue.close();
  return { p, run, result, model };
}

describe('APR-8 (A2): the AI SDK pauses on a pending approval and resumes through it', () => {
  it('APR-8 (A2): tool-approval-request in the result, run approval_pending; approved by another process → the resumed call runs once', async () => {
    const operationId = `op-${randomUUID()}`;
    const ran: unknown[] = [];
    const { p, run, result, model } = await pausedRun(operationId, ran);

    const request = result.content.find((c) => c.type === 'tool-approval-request');
    expect(request).toMatchObject({ type: 'tool-approval-request', toolCall: { toolCallId: 'c1', toolName: 'delete_file' } });
    expect(ran).toEqual([]);
    expect(model.doGenerateCalls).toHaveLength(1); // paused: no model call after the request
    expect(run.pendingApproval).toMatchObject({ operationId, toolCallId: 'c1', toolName: 'delete_file' });
    expect(p.completions).toEqual([
      expect.objectContaining({ reason: 'approval_pending', status: 'approval_pending', approval: expect.objectContaining({ id: run.pendingApproval?.id }) }),
    ]);
    expect(p.records.map((r) => r.interception_point)).toEqual([
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call',
      'agent_shutdown',
    ]);

    // Someone approves (another process), the agent resumes in a new process.
    await createApprovalQueue({ store: t.store }).approve(run.pendingApproval!.id, { by: 'alice' });
    const q = agentProcess();
    const resumed = q.relay.startRun({ input: 'clean up /tmp/x', operationId });
    const answer: ModelMessage = {
      role: 'tool',
      content: [{ type: 'tool-approval-response', approvalId: (request as { approvalId: string }).approvalId, approved: true }],
    };
    const model2 = mockModel({ generate: [textResult('deleted /tmp/x')] });
    const settings = await resumed.settings({ model: model2, tools: deleteTool(ran), messages: [...result.response.messages, answer], resume: true });
    const done = await resumed.track(generateText({ ...settings, stopWhen: stepCountIs(3) }));
    expect(done.text).toBe('deleted /tmp/x');
    expect(ran).toEqual([{ path: '/tmp/x' }]);
    expect(q.records.find((r) => r.interception_point === 'pre_tool_call')).toMatchObject({ resolved_by: 'approval', verdict: { decision: 'allow' } });
    expect(await q.queue.get(run.pendingApproval!.id)).toMatchObject({ status: 'approved', outcome: 'applied' });
    await q.queue.close();
  });

  it('APR-8 (A2): rejected → the resumed call is a deny the model sees; the tool never runs', async () => {
    const operationId = `op-${randomUUID()}`;
    const ran: unknown[] = [];
    const { run, result } = await pausedRun(operationId, ran);
    const request = result.content.find((c) => c.type === 'tool-approval-request') as { approvalId: string };
    await createApprovalQueue({ store: t.store }).reject(run.pendingApproval!.id, { by: 'bob', reason: 'keep the file' });

    const q = agentProcess();
    const resumed = q.relay.startRun({ input: 'clean up /tmp/x', operationId });
    const model2 = mockModel({ generate: [textResult('I was not allowed to delete it.')] });
    const settings = await resumed.settings({
      model: model2,
      tools: deleteTool(ran),
      messages: [...result.response.messages, { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] }],
      resume: true,
    });
    const done = await resumed.track(generateText({ ...settings, stopWhen: stepCountIs(3) }));
    expect(done.text).toBe('I was not allowed to delete it.');
    expect(ran).toEqual([]);
    const sentToModel = JSON.stringify(model2.doGenerateCalls[0]?.prompt);
    expect(sentToModel).toContain('hookrelay:approval_rejected');
    expect(sentToModel).toContain('keep the file');
    await q.queue.close();
  });
});
