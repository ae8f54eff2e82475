/**
 * SEAM-2 / SEAM-4 (I5): the Agents SDK judged however the agent graph was built — against the
 * real SDK (@openai/agents 0.20.0) with scripted models and a real stdio MCP server: the SDK's own
 * `clone()` idiom, a tool pushed onto `agent.tools` after `prepare()`, a run resumed from a
 * `RunState` made from the app's own agent object, and a model swapped in on a clone. Each ran
 * `delete_all` unjudged before (issue 47, measured 2). And a prepared agent prepared again by
 * another run is a stacked bundle, refused.
 */
import { Agent, type MCPServerStdio, RunState, run, setTracingDisabled, ToolCallError, tool } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentContext } from '../../../src/contract/agentHooks.ts';
import { UninterceptedToolError, AgentHooksInstallError } from '../../../src/contract/errors.ts';
import { createOpenAIAgentsHooks } from '../../../src/integrations/openaiAgents.ts';
import type { Interceptor } from '../../../src/intercept/interceptor.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import { startStdioFilesServer } from './fixtures/agentsMcpServer.ts';

type Ctx = AgentContext & { tool_call?: { name?: string } };

beforeAll(() => setTracingDisabled(true));

function relay() {
  const seen: Ctx[] = [];
  const policy: Interceptor = (ctx) => {
    seen.push(structuredClone(ctx) as Ctx);
    return (ctx as Ctx).interception_point === 'pre_tool_call' && (ctx as Ctx).tool_call?.name === 'delete_all'
      ? Verdict.deny({ reason: 'policy.destructive' })
      : Verdict.allow();
  };
  const hooks = createAgentHooks({ interceptors: { policy }, framework: 'openai-agents' });
  const judged = () => seen.filter((c) => c.interception_point === 'pre_tool_call').map((c) => c.tool_call?.name);
  return { relay: createOpenAIAgentsHooks({ hooks }), seen, judged };
}

function deleteAll(ran: string[], needsApproval = false) {
  return tool({
    name: 'delete_all',
    description: 'Delete every file',
    parameters: z.object({}),
    needsApproval,
    execute: async () => {
      ran.push('delete_all');
      return 'deleted';
    },
  });
}

describe('SEAM-2 (I5): Agents SDK judged at the run, however the graph was built', () => {
  let server: MCPServerStdio;
  let serverCalls: () => string[];
  beforeAll(async () => {
    ({ server, calls: serverCalls } = await startStdioFilesServer());
  }, 30_000);
  afterAll(async () => {
    await server?.close();
  });

  it("SEAM-2 (I5) Agents-SDK prepared.agent.clone({ instructions }) (the SDK's own idiom): the MCP server's delete_all is judged at pre_tool_call and never reaches the server", async () => {
    const s = relay();
    const model = new ScriptedModel([[functionCall('delete_all', { dir: '/srv' }, { callId: 'd1' })], [assistantMessage('could not delete')]]);
    const app = new Agent({ name: 'files', instructions: 'You manage files.', model, mcpServers: [server] });
    const r = s.relay.startRun({ input: 'clean up' });
    const prepared = await r.prepare(app);
    const clone = prepared.agent.clone({ instructions: 'You manage files carefully.' });
    const result = await r.track(run(clone, prepared.input));
    expect(serverCalls().join('\n')).not.toContain('delete_all');
    expect(s.judged()).toEqual(['delete_all']);
    expect(result.finalOutput).toBe('could not delete');
  });

  it('SEAM-2 (I5) Agents-SDK a function tool pushed onto agent.tools after prepare(): judged at pre_tool_call, never run', async () => {
    const s = relay();
    const ran: string[] = [];
    const model = new ScriptedModel([[functionCall('delete_all', {}, { callId: 'd1' })], [assistantMessage('done')]]);
    const r = s.relay.startRun({ input: 'clean up' });
    const prepared = await r.prepare(new Agent({ name: 'files', instructions: 'x', model }));
    prepared.agent.tools.push(deleteAll(ran));
    await r.track(run(prepared.agent, prepared.input));
    expect(ran).toEqual([]);
    expect(s.judged()).toEqual(['delete_all']);
  });

  it('SEAM-2 (I5) Agents-SDK resumed from RunState.fromString(appAgent, saved) with the interruption approved: r.resume judges the approved delete_all (denied, never run)', async () => {
    const s = relay();
    const ran: string[] = [];
    const model = new ScriptedModel([[functionCall('delete_all', {}, { callId: 'd1' })], [assistantMessage('done')]]);
    const app = new Agent({ name: 'files', instructions: 'x', model, tools: [deleteAll(ran, true)] });
    const r1 = s.relay.startRun({ input: 'clean up' });
    const first = await r1.runAgent(app);
    expect(first.interruptions).toHaveLength(1); // delete_all waits for approval
    const saved = first.state.toString();

    const state = await RunState.fromString(app, saved); // the app's own agent object, not a prepared one
    state.approve(state.getInterruptions()[0]!);
    const r2 = s.relay.startRun({ input: 'clean up' });
    const resumed = await r2.resume(app, state);
    expect(ran).toEqual([]);
    expect(s.judged()).toEqual(['delete_all']);
    expect(resumed.finalOutput).toBe('done');
  });

  it("SEAM-2 (I5) Agents-SDK the same RunState handed to the SDK's own run() with the app's prepared agent (no hookrelay run): the run rejects with UninterceptedToolError, delete_all never runs", async () => {
    const s = relay();
    const ran: string[] = [];
    const model = new ScriptedModel([[functionCall('delete_all', {}, { callId: 'd1' })], [assistantMessage('done')]]);
    const app = new Agent({ name: 'files', instructions: 'x', model, tools: [deleteAll(ran, true)] });
    const first = await s.relay.startRun({ input: 'clean up' }).runAgent(app);
    const state = await RunState.fromString(app, first.state.toString());
    state.approve(state.getInterruptions()[0]!);
    const refused = await run(app, state).then(
      () => undefined,
      (err: unknown) => err,
    );
    // The SDK wraps a tool's throw in its ToolCallError (the run rejects); the cause is hookrelay's refusal.
    const cause = refused instanceof ToolCallError ? refused.error : refused;
    expect(cause).toBeInstanceOf(UninterceptedToolError);
    expect((cause as UninterceptedToolError).kind).toBe('ungoverned_turn');
    expect(ran).toEqual([]);
  });

  it('SEAM-2 (I5) Agents-SDK a clone given another model: the turn is refused (UninterceptedToolError), its model never called', async () => {
    const s = relay();
    const raw = new ScriptedModel([[assistantMessage('unjudged')]]);
    const r = s.relay.startRun({ input: 'hi' });
    const prepared = await r.prepare(new Agent({ name: 'files', instructions: 'x', model: new ScriptedModel([[assistantMessage('judged')]]) }));
    await expect(r.track(run(prepared.agent.clone({ model: raw }), prepared.input))).rejects.toBeInstanceOf(UninterceptedToolError);
    expect(raw.calls).toHaveLength(0);
  });

  it('SEAM-4 (I5) Agents-SDK a prepared agent prepared again by another run is refused (AgentHooksInstallError): one bundle judges a run', async () => {
    const a = relay();
    const b = relay();
    const r1 = a.relay.startRun({ input: 'x' });
    const prepared = await r1.prepare(new Agent({ name: 'files', instructions: 'x', model: new ScriptedModel([[assistantMessage('ok')]]) }));
    const r2 = b.relay.startRun({ input: 'x' });
    await expect(r2.prepare(prepared.agent)).rejects.toBeInstanceOf(AgentHooksInstallError);
    await expect(r2.prepare(prepared.agent.clone({ instructions: 'y' }))).rejects.toBeInstanceOf(AgentHooksInstallError);
    expect(await r1.prepare(prepared.agent)).toMatchObject({ agent: prepared.agent }); // the same run: as it is
    await r1.end({ status: 'completed' });
    await r2.end({ status: 'completed' });
  });
});
