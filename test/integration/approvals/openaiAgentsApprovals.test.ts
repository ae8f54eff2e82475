/**
 * APR-9 (A2): an OpenAI Agents SDK run (@openai/agents 0.20, its scripted test model) pauses
 * and resumes through the approval queue. A wrapped function tool's `needsApproval` judges
 * pre_tool_call: a call a durable approval waits for interrupts the run the SDK's way
 * (`result.interruptions`, a serializable RunState); the run ends `approval_pending`. Another
 * process approves; a new process restores the RunState, answers the interruption and runs: the
 * tool runs once, as approved.
 */
import { randomUUID } from 'node:crypto';
import { Agent, run, RunState, setTracingDisabled, tool } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createApprovalQueue } from '../../../src/approvals/approvalQueue.ts';
import type { InterceptionRecord } from '../../../src/contract/agentHooks.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createOpenAIAgentsHooks } from '../../../src/integrations/openaiAgents.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { ALLOW, Verdict } from '../../../src/intercept/verdict.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';

let t: TestStore;
beforeAll(async () => {
  setTracingDisabled(true);
  t = await createTestStore('apragents');
});
afterAll(async () => {
  await t?.cleanup();
});

function agentProcess() {
  const queue = createApprovalQueue({ store: t.store, waitMs: 0 });
  const records: InterceptionRecord[] = [];
  const hooks = createAgentHooks({
    interceptors: [(ctx) => (ctx.interception_point === 'pre_tool_call' ? Verdict.escalate('needs_approval') : ALLOW)],
    resolver: queue.resolver,
    recordSink: (r) => void records.push(r),
    framework: 'openai-agents',
  });
  const relay = createOpenAIAgentsHooks({ hooks, dispatcher: new HookDispatcher({ logger: silentLogger(), env: {} }) });
  return { queue, records, relay };
}

function filesAgent(model: ScriptedModel, ran: string[]) {
  const deleteFile = tool({
    name: 'delete_file',
    description: 'delete a file',
    parameters: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      ran.push(path);
      return `deleted ${path}`;
    },
  });
  return new Agent({ name: 'files', instructions: 'Tidy up.', model, tools: [deleteFile] });
}

describe('APR-9 (A2): the Agents SDK interrupts on a pending approval and resumes from its RunState', () => {
  it('APR-9 (A2): interruption + approval_pending; approved elsewhere; a new process restores the RunState → the call runs once', async () => {
    const operationId = `op-${randomUUID()}`;
    const ran: string[] = [];
    const a = agentProcess();
    const r1 = a.relay.startRun({ input: 'delete /tmp/x', operationId });
    const first = await r1.prepare(filesAgent(new ScriptedModel([[functionCall('delete_file', { path: '/tmp/x' }, { callId: 'c1' })]]), ran));
    const paused = await r1.track(run(first.agent, first.input));
    expect(paused.interruptions).toHaveLength(1);
    expect(paused.interruptions[0]).toMatchObject({ rawItem: { callId: 'c1', name: 'delete_file' } });
    expect(ran).toEqual([]);
    const approvalId = r1.pendingApproval?.id as string;
    expect(r1.pendingApproval).toMatchObject({ operationId, toolCallId: 'c1', toolName: 'delete_file' });
    expect((await r1.end({ status: 'completed' })).outcome).toBe('approval_pending');
    const saved = paused.state.toString();
    await a.queue.close();

    await createApprovalQueue({ store: t.store }).approve(approvalId, { by: 'alice', reason: 'fine' });

    const b = agentProcess();
    const r2 = b.relay.startRun({ input: 'delete /tmp/x', operationId });
    const second = await r2.prepare(filesAgent(new ScriptedModel([[assistantMessage('Deleted /tmp/x.')]]), ran));
    const state = await RunState.fromString(second.agent, saved);
    for (const item of state.getInterruptions()) state.approve(item);
    const done = await r2.track(run(second.agent, state));
    expect(done.finalOutput).toBe('Deleted /tmp/x.');
    expect(ran).toEqual(['/tmp/x']);
    expect(b.records.find((r) => r.interception_point === 'pre_tool_call')).toMatchObject({ resolved_by: 'approval' });
    expect(await b.queue.get(approvalId)).toMatchObject({ outcome: 'applied' });
    await b.queue.close();
  });
  it('APR-9 (A2): rejected elsewhere → r.resume(agent, state) from the app’s own agent: the call is a deny the model sees; the tool never runs', async () => {
    const operationId = `op-${randomUUID()}`;
    const ran: string[] = [];
    const a = agentProcess();
    const r1 = a.relay.startRun({ input: 'delete /etc', operationId });
    const paused = await r1.runAgent(filesAgent(new ScriptedModel([[functionCall('delete_file', { path: '/etc' }, { callId: 'c9' })]]), ran));
    const saved = (paused as { state: { toString(): string } }).state.toString();
    const approvalId = r1.pendingApproval?.id as string;
    expect(approvalId).toMatch(/^apr_/);
    await a.queue.close();

    await createApprovalQueue({ store: t.store }).reject(approvalId, { by: 'bob', reason: 'never /etc' });

    const b = agentProcess();
    const model = new ScriptedModel([[assistantMessage('Not allowed.')]]);
    const appAgent = filesAgent(model, ran);
    const state = await RunState.fromString(appAgent, saved);
    for (const item of state.getInterruptions()) state.approve(item); // "resume": the decision is hookrelay's
    const r2 = b.relay.startRun({ input: 'delete /etc', operationId });
    const done = await r2.resume(appAgent, state);
    expect(done.finalOutput).toBe('Not allowed.');
    expect(ran).toEqual([]);
    expect(JSON.stringify(model.calls[0]?.request.input)).toContain('hookrelay:approval_rejected');
    expect(await b.queue.get(approvalId)).toMatchObject({ status: 'rejected', outcome: 'applied' });
    await b.queue.close();
  });
});
