/**
 * hookrelay/openai-agents over every agent and tool a run can reach, against the real Agents SDK
 * (@openai/agents 0.20.0) with scripted models (no network): handoff targets (a cycle included),
 * a handoff returned at run time, agents used as tools, MCP server tools (a real stdio server from
 * @modelcontextprotocol/sdk), tools hookrelay cannot intercept (refused unless allowed), denials
 * and transforms in the lifecycle events, models given by name, and step numbering.
 */
import {
  Agent,
  Handoff,
  type MCPServerStdio,
  type Model,
  type ModelProvider,
  run,
  setDefaultModelProvider,
  setTraceProcessors,
  setTracingDisabled,
  type TracingProcessor,
  applyPatchTool,
  computerTool,
  shellTool,
  tool,
  webSearchTool,
} from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentContext, InterceptionRecord } from '../../../src/contract/agentHooks.ts';
import { HookrelayError, UninterceptedToolError } from '../../../src/contract/errors.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { startStdioFilesServer } from './fixtures/agentsMcpServer.ts';
import { createOpenAIAgentsHooks, InterceptionBlocked } from '../../../src/integrations/openaiAgents.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import type { Interceptor } from '../../../src/intercept/interceptor.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import { silentLogger } from '../../../src/observability/logger.ts';

type Ctx = AgentContext & {
  tool_call?: { name?: string };
  response?: { tool_calls?: Array<{ name: string }> };
  messages?: Array<{ role: string; content: unknown }>;
};
type Judge = (ctx: Ctx) => ReturnType<typeof Verdict.allow> | Promise<ReturnType<typeof Verdict.allow>>;

beforeAll(() => setTracingDisabled(true)); // no trace export: nothing leaves 127.0.0.1

function setup(judge: Judge = () => Verdict.allow()) {
  const records: InterceptionRecord[] = [];
  const seen: Ctx[] = [];
  const interceptor: Interceptor = async (ctx) => {
    seen.push(structuredClone(ctx) as Ctx);
    return judge(ctx as Ctx);
  };
  const hooks = createAgentHooks({ interceptors: { policy: interceptor }, recordSink: (r) => void records.push(r), framework: 'openai-agents' });
  const dispatcher = new HookDispatcher({ logger: silentLogger(), env: {} });
  const events: Array<{ type: string; event: Record<string, unknown> }> = [];
  const on = (type: string) => ({ id: `h-${type}`, type, handler: (event: Record<string, unknown>) => void events.push({ type, event }) });
  const relay = createOpenAIAgentsHooks({ hooks, dispatcher });
  const points = () => records.map((r) => (r.verdict.decision === 'allow' ? r.interception_point : `${r.interception_point}(${r.verdict.decision})`));
  /** The system prompt of each judged model call, in order: whose model the policy saw. */
  const modelCallsBy = () =>
    seen.filter((c) => c.interception_point === 'pre_model_call').map((c) => String(c.messages?.find((m) => m.role === 'system')?.content ?? ''));
  return { records, seen, relay, dispatcher, events, on, points, modelCallsBy };
}

const denyTool =
  (name: string): Judge =>
  (ctx) =>
    ctx.interception_point === 'pre_tool_call' && ctx.tool_call?.name === name ? Verdict.deny({ reason: 'policy.destructive' }) : Verdict.allow();

function deleteAll(log: string[]) {
  return tool({
    name: 'delete_all',
    description: 'Delete every file',
    parameters: z.object({}),
    execute: async () => {
      log.push('delete_all');
      return 'deleted';
    },
  });
}

/** The function-call outputs the model got in its call `index`, by call id. */
function toolOutputs(model: ScriptedModel, index: number): Record<string, string> {
  const input = model.calls[index]?.request.input;
  const out: Record<string, string> = {};
  if (Array.isArray(input))
    for (const item of input as Array<Record<string, unknown>>) {
      if (item.type === 'function_call_result') {
        const o = item.output as { text?: string } | string;
        out[item.callId as string] = typeof o === 'string' ? o : (o.text ?? JSON.stringify(o));
      }
    }
  return out;
}

describe('Agents-SDK handoffs are intercepted', () => {
  it("Agents-SDK handoff reproduction: the helper's delete_all, denied at pre_tool_call, never runs; the policy sees the helper's model calls and its pre_tool_call (a handoff cycle is wrapped once)", async () => {
    const s = setup(denyTool('delete_all'));
    const ran: string[] = [];
    const helperModel = new ScriptedModel([[functionCall('delete_all', {}, { callId: 'del1' })], [assistantMessage('helper finished')]]);
    const helper = new Agent({ name: 'helper', instructions: 'You are the helper.', model: helperModel, tools: [deleteAll(ran)] });
    const top = new Agent({
      name: 'top',
      instructions: 'You are the top agent.',
      model: new ScriptedModel([[functionCall('transfer_to_helper', {}, { callId: 'h1' })]]),
      handoffs: [helper],
    });
    helper.handoffs = [top]; // a cycle: top ⇄ helper
    const r = s.relay.startRun({ input: 'clean up' });
    const { agent, input } = await r.prepare(top);
    const result = await r.track(run(agent, input));
    expect(ran).toEqual([]); // delete_all never ran
    expect(result.finalOutput).toBe('helper finished');
    expect(s.modelCallsBy()).toEqual(['You are the top agent.', 'You are the helper.', 'You are the helper.']);
    const preTools = s.seen.filter((c) => c.interception_point === 'pre_tool_call').map((c) => c.tool_call?.name);
    expect(preTools).toEqual(['transfer_to_helper', 'delete_all']);
    expect(s.points()).toContain('pre_tool_call(deny)');
    expect(new Set(s.records.map((x) => x.session_id))).toEqual(new Set([r.sessionId])); // one session across both agents
    expect(JSON.parse(toolOutputs(helperModel, 1).del1!)).toEqual({ error: 'tool call blocked by policy', reason: 'policy.destructive' });
    // The post_model_call of the top agent listed the handoff call with the function calls.
    expect(s.seen.find((c) => c.interception_point === 'post_model_call')?.response?.tool_calls?.map((c) => c.name)).toEqual(['transfer_to_helper']);
    expect(top.model).toBeInstanceOf(ScriptedModel); // the originals are untouched
    expect(helper.tools[0]).toBe(helper.tools[0]);
  });

  it("Agents-SDK handoff reproduction: a post_model_call deny of the helper's delete_all ends the run blocked before the tool runs", async () => {
    const s = setup((ctx) =>
      ctx.interception_point === 'post_model_call' && ctx.response?.tool_calls?.some((c) => c.name === 'delete_all')
        ? Verdict.deny({ reason: 'policy.destructive' })
        : Verdict.allow(),
    );
    const ran: string[] = [];
    const helper = new Agent({
      name: 'helper',
      model: new ScriptedModel([[functionCall('delete_all', {}, { callId: 'del1' })], [assistantMessage('helper finished')]]),
      tools: [deleteAll(ran)],
    });
    const top = new Agent({ name: 'top', model: new ScriptedModel([[functionCall('transfer_to_helper', {}, { callId: 'h1' })]]), handoffs: [helper] });
    const r = s.relay.startRun({ input: 'clean up' });
    const { agent, input } = await r.prepare(top);
    const err = await r.track(run(agent, input)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InterceptionBlocked);
    expect((err as InterceptionBlocked).record).toMatchObject({ interception_point: 'post_model_call', verdict: { reason: 'policy.destructive' } });
    expect(ran).toEqual([]);
    expect(s.seen.at(-1)).toMatchObject({ interception_point: 'agent_shutdown', summary: { reason: 'error' } });
  });

  it('Agents-SDK handoff reproduction, streamed run: the helper reached by the handoff is intercepted the same way', async () => {
    const s = setup(denyTool('delete_all'));
    const ran: string[] = [];
    const helper = new Agent({
      name: 'helper',
      instructions: 'You are the helper.',
      model: new ScriptedModel([[functionCall('delete_all', {}, { callId: 'del1' })], [assistantMessage('helper finished')]]),
      tools: [deleteAll(ran)],
    });
    const top = new Agent({ name: 'top', model: new ScriptedModel([[functionCall('transfer_to_helper', {}, { callId: 'h1' })]]), handoffs: [helper] });
    const r = s.relay.startRun({ input: 'clean up' });
    const { agent, input } = await r.prepare(top);
    const result = await r.track(run(agent, input, { stream: true }));
    expect(ran).toEqual([]);
    expect(result.finalOutput).toBe('helper finished');
    expect(s.modelCallsBy().filter((p) => p === 'You are the helper.')).toHaveLength(2);
    expect(s.points()).toContain('pre_tool_call(deny)');
  });

  it("Agents-SDK handoff denied: the helper never runs, its onHandoff is not called, and the top agent's model sees the deny as the handoff's output", async () => {
    const s = setup(denyTool('transfer_to_helper'));
    const helperModel = new ScriptedModel([[assistantMessage('never')]]);
    const helper = new Agent({ name: 'helper', model: helperModel });
    const topModel = new ScriptedModel([[functionCall('transfer_to_helper', {}, { callId: 'h1' })], [assistantMessage('I will do it myself.')]]);
    const handedOff: string[] = [];
    const { handoff } = await import('@openai/agents');
    const top = new Agent({ name: 'top', model: topModel, handoffs: [handoff(helper, { onHandoff: () => void handedOff.push('helper') })] });
    const r = s.relay.startRun({ input: 'q' });
    const { agent, input } = await r.prepare(top);
    const result = await r.track(run(agent, input));
    expect(result.finalOutput).toBe('I will do it myself.');
    expect(helperModel.calls).toHaveLength(0);
    expect(handedOff).toEqual([]);
    expect(JSON.parse(toolOutputs(topModel, 1).h1!)).toEqual({ error: 'tool call blocked by policy', reason: 'policy.destructive' });
  });

  it("Agents-SDK handoff returned at run time: an agent a Handoff's onInvokeHandoff returns is wrapped too (its model judged, its denied tool never runs)", async () => {
    const s = setup(denyTool('delete_all'));
    const ran: string[] = [];
    const late = new Agent({
      name: 'late',
      instructions: 'Chosen at run time.',
      model: new ScriptedModel([[functionCall('delete_all', {}, { callId: 'd1' })], [assistantMessage('late done')]]),
      tools: [deleteAll(ran)],
    });
    const placeholder = new Agent({ name: 'router', model: new ScriptedModel([]) });
    const dynamic = new Handoff(placeholder, async () => late); // picks its agent when invoked
    const top = new Agent({ name: 'top', model: new ScriptedModel([[functionCall('transfer_to_router', {}, { callId: 'h1' })]]), handoffs: [dynamic] });
    const r = s.relay.startRun({ input: 'q' });
    const { agent, input } = await r.prepare(top);
    const result = await r.track(run(agent, input));
    expect(result.finalOutput).toBe('late done');
    expect(ran).toEqual([]);
    expect(s.modelCallsBy().filter((p) => p === 'Chosen at run time.')).toHaveLength(2);
  });
});

describe('Agents-SDK agents used as tools', () => {
  it("Agents-SDK asTool agent intercepted: the nested agent's model calls and its denied tool are judged in the run's session; its answer is a tool result, not the run's output", async () => {
    const s = setup(denyTool('delete_all'));
    const ran: string[] = [];
    const worker = new Agent({
      name: 'janitor',
      instructions: 'You are the janitor.',
      model: new ScriptedModel([[functionCall('delete_all', {}, { callId: 'd1' })], [assistantMessage('janitor could not delete')]]),
      tools: [deleteAll(ran)],
    });
    const topModel = new ScriptedModel([[functionCall('ask_janitor', { input: 'clean' }, { callId: 't1' })], [assistantMessage('all done')]]);
    const top = new Agent({
      name: 'top',
      instructions: 'You are the top agent.',
      model: topModel,
      tools: [worker.asTool({ toolName: 'ask_janitor', toolDescription: 'cleans' })],
    });
    const r = s.relay.startRun({ input: 'q' });
    const { agent, input } = await r.prepare(top);
    const result = await r.track(run(agent, input));
    expect(ran).toEqual([]);
    expect(result.finalOutput).toBe('all done');
    expect(s.modelCallsBy()).toEqual(['You are the top agent.', 'You are the janitor.', 'You are the janitor.', 'You are the top agent.']);
    expect(s.seen.filter((c) => c.interception_point === 'pre_tool_call').map((c) => c.tool_call?.name)).toEqual(['ask_janitor', 'delete_all']);
    expect(s.points().filter((p) => p.startsWith('output'))).toEqual(['output']); // once, over the top agent's answer
    expect(r.output).toBe('all done');
    expect(toolOutputs(topModel, 1).t1).toBe('janitor could not delete');
  });

  it('Agents-SDK run.asTool keeps asTool options prepare() cannot read back (customOutputExtractor) and intercepts the agent', async () => {
    const s = setup();
    const worker = new Agent({ name: 'w', instructions: 'nested', model: new ScriptedModel([[assistantMessage('raw answer')]]) });
    const r = s.relay.startRun({ input: 'q' });
    const askWorker = await r.asTool(worker, { toolName: 'ask_w', toolDescription: 'w', customOutputExtractor: () => 'extracted' });
    const topModel = new ScriptedModel([[functionCall('ask_w', { input: 'go' }, { callId: 't1' })], [assistantMessage('ok')]]);
    const { agent, input } = await r.prepare(new Agent({ name: 'top', model: topModel, tools: [askWorker] }));
    await r.track(run(agent, input));
    expect(toolOutputs(topModel, 1).t1).toBe('extracted');
    expect(s.modelCallsBy()).toContain('nested');
  });
});

describe('Agents-SDK tools hookrelay cannot intercept are refused', () => {
  it('Agents-SDK hosted tool refused without allowUninterceptedTools (a typed error with a code); allowed by name, its call appears in post_model_call tool_calls', async () => {
    const s = setup();
    const search = webSearchTool();
    const helper = new Agent({ name: 'helper', model: new ScriptedModel([[assistantMessage('x')]]), tools: [search] });
    const top = new Agent({ name: 'top', model: new ScriptedModel([[assistantMessage('x')]]), handoffs: [helper] });
    const r = s.relay.startRun({ input: 'q' });
    const err = await r.prepare(top).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UninterceptedToolError);
    expect(err).toBeInstanceOf(HookrelayError);
    expect(err).toMatchObject({ code: 'HOOKRELAY_TOOL_NOT_INTERCEPTED', agent: 'helper', tool: search.name, kind: 'hosted_tool' });
    expect((err as Error).message).toContain('allowUninterceptedTools');

    const computer = computerTool({ computer: { environment: 'linux', dimensions: [800, 600] } as never });
    const r2 = s.relay.startRun({ input: 'q' });
    await expect(r2.prepare(new Agent({ name: 'ops', model: new ScriptedModel([]), tools: [computer] }))).rejects.toMatchObject({ kind: 'computer' });

    const a = setup();
    const model = new ScriptedModel([
      [{ type: 'hosted_tool_call', id: 'ws_1', name: 'web_search_call', status: 'completed' } as never, assistantMessage('found it')],
    ]);
    const r3 = a.relay.startRun({ input: 'q' });
    const { agent, input } = await r3.prepare(new Agent({ name: 'searcher', model, tools: [search] }), { allowUninterceptedTools: [search.name] });
    const result = await r3.track(run(agent, input));
    expect(result.finalOutput).toBe('found it');
    expect(a.seen.find((c) => c.interception_point === 'post_model_call')?.response?.tool_calls).toEqual([
      expect.objectContaining({ name: 'web_search_call' }),
    ]);
    await expect(a.relay.startRun({ input: 'q' }).prepare(top, { allowUninterceptedTools: [1 as never] })).rejects.toThrow(/allowUninterceptedTools/);
  });
});

describe('Agents-SDK what prepare() cannot rebuild or the SDK reports', () => {
  it('Agents-SDK an asTool() tool with its own parameters is refused (kind agent_tool) unless allowed; run.asTool builds it intercepted', async () => {
    const s = setup();
    const worker = new Agent({ name: 'w', model: new ScriptedModel([]) });
    const custom = worker.asTool({ toolName: 'ask_w', toolDescription: 'w', parameters: z.object({ question: z.string() }) });
    const top = new Agent({ name: 'top', model: new ScriptedModel([]), tools: [custom] });
    await expect(s.relay.startRun({ input: 'q' }).prepare(top)).rejects.toMatchObject({
      code: 'HOOKRELAY_TOOL_NOT_INTERCEPTED',
      tool: 'ask_w',
      kind: 'agent_tool',
    });
    await expect(s.relay.startRun({ input: 'q' }).prepare(top, { allowUninterceptedTools: ['ask_w'] })).resolves.toBeDefined();
    await expect(s.relay.startRun({ input: 'q' }).prepare(top, { model: 42 as never })).rejects.toThrow(/model must be a Model or a model name/);
  });

  it('Agents-SDK a handoff whose onHandoff throws fails the run as the SDK does (not taken for a deny)', async () => {
    const s = setup();
    const { handoff } = await import('@openai/agents');
    const helper = new Agent({ name: 'helper', model: new ScriptedModel([[assistantMessage('never')]]) });
    const broken = handoff(helper, {
      onHandoff: () => {
        throw new Error('handoff hook exploded');
      },
    });
    const top = new Agent({ name: 'top', model: new ScriptedModel([[functionCall('transfer_to_helper', {}, { callId: 'h1' })]]), handoffs: [broken] });
    const r = s.relay.startRun({ input: 'q' });
    const { agent, input } = await r.prepare(top);
    await expect(r.track(run(agent, input))).rejects.toThrow(/handoff hook exploded/);
    expect(s.seen.find((c) => c.interception_point === 'post_tool_call')).toMatchObject({ tool_result: { is_error: true } });
  });
});

describe('Agents-SDK local shell and apply_patch tools are intercepted', () => {
  it('Agents-SDK shell and apply_patch: the SDK-run executors go through pre_tool_call — a denied command and a denied delete never run, the model sees the failure; an allowed patch runs', async () => {
    const s = setup((ctx) => {
      if (ctx.interception_point !== 'pre_tool_call') return Verdict.allow();
      const args = JSON.stringify((ctx as { tool_call?: { args?: unknown } }).tool_call?.args);
      return args.includes('rm -rf') || args.includes('delete_file') ? Verdict.deny({ reason: 'policy.destructive' }) : Verdict.allow();
    });
    const ran: string[] = [];
    const shell = shellTool({
      shell: {
        run: async (action) => {
          ran.push(`shell ${action.commands.join(' ')}`);
          return { output: [{ stdout: 'ok', stderr: '', outcome: { type: 'exit', exitCode: 0 } }] };
        },
      },
    });
    const editor = {
      createFile: async (op: { path: string }) => void ran.push(`create ${op.path}`),
      updateFile: async (op: { path: string }) => void ran.push(`update ${op.path}`),
      deleteFile: async (op: { path: string }) => void ran.push(`delete ${op.path}`),
    };
    const patch = applyPatchTool({ editor: editor as never });
    const model = new ScriptedModel([
      [{ type: 'shell_call', callId: 's1', status: 'completed', action: { commands: ['rm -rf /srv'] } } as never],
      [
        { type: 'apply_patch_call', callId: 'p1', status: 'completed', operation: { type: 'delete_file', path: 'a.txt' } } as never,
        { type: 'apply_patch_call', callId: 'p2', status: 'completed', operation: { type: 'create_file', path: 'b.txt', diff: '+hi' } } as never,
      ],
      [assistantMessage('done')],
    ]);
    const r = s.relay.startRun({ input: 'q' });
    const { agent, input } = await r.prepare(new Agent({ name: 'ops', model, tools: [shell, patch] }));
    const result = await r.track(run(agent, input));
    expect(result.finalOutput).toBe('done');
    expect(ran).toEqual(['create b.txt']);
    const pre = s.seen.filter((c) => c.interception_point === 'pre_tool_call');
    expect(pre.map((c) => [c.tool_call?.name, (c as { tool_call?: { id?: string } }).tool_call?.id])).toEqual([
      ['shell', 's1'],
      ['apply_patch', 'p1'],
      ['apply_patch', 'p2'],
    ]);
    const shellOut = (model.calls[1]!.request.input as Array<Record<string, unknown>>).find((i) => i.type === 'shell_call_output');
    expect(JSON.stringify(shellOut)).toContain('tool call blocked by policy');
    const patchOut = (model.calls[2]!.request.input as Array<Record<string, unknown>>).find((i) => i.type === 'apply_patch_call_output' && i.callId === 'p1');
    expect(patchOut).toMatchObject({ status: 'failed' });
  });
});

describe('Agents-SDK MCP server tools', () => {
  let server: MCPServerStdio;
  let serverCalls: () => string[];
  beforeAll(async () => {
    ({ server, calls: serverCalls } = await startStdioFilesServer());
  }, 30_000);
  afterAll(async () => {
    await server?.close();
  });

  it('Agents-SDK MCP server tool denied never called: delete_all on a stdio MCP server is denied at pre_tool_call and never reaches the server; list_files is judged and runs', async () => {
    const s = setup(denyTool('delete_all'));
    const model = new ScriptedModel([
      [functionCall('list_files', { dir: '/srv' }, { callId: 'l1' })],
      [functionCall('delete_all', { dir: '/srv' }, { callId: 'd1' })],
      [assistantMessage('kept your files')],
    ]);
    const r = s.relay.startRun({ input: 'q' });
    const { agent, input } = await r.prepare(new Agent({ name: 'files', model, mcpServers: [server] }));
    const result = await r.track(run(agent, input));
    expect(result.finalOutput).toBe('kept your files');
    const calls = serverCalls();
    expect(calls).toEqual(['list_files /srv']);
    expect(s.seen.filter((c) => c.interception_point === 'pre_tool_call').map((c) => c.tool_call?.name)).toEqual(['list_files', 'delete_all']);
    expect(s.points()).toContain('post_tool_call');
    expect(JSON.parse(toolOutputs(model, 2).d1!)).toEqual({ error: 'tool call blocked by policy', reason: 'policy.destructive' });
  }, 30_000);
});

describe('UX-5 Agents-SDK framework conventions', () => {
  it('UX-5 Agents-SDK a denied tool call emits afterToolCall with the verdict; a transformed one carries decision transform; the first step is stepIndex 0', async () => {
    const s = setup((ctx) => {
      if (ctx.interception_point !== 'pre_tool_call') return Verdict.allow();
      return ctx.tool_call?.name === 'delete_all'
        ? Verdict.deny({ reason: 'policy.destructive', message: 'not here' })
        : Verdict.transform('$target.dir', '/tmp');
    });
    s.dispatcher.register('op-ux5', [s.on('afterToolCall'), s.on('beforeStep')] as never);
    const ran: string[] = [];
    const list = tool({ name: 'list_files', description: 'ls', parameters: z.object({ dir: z.string() }), execute: async ({ dir }) => `files in ${dir}` });
    const model = new ScriptedModel([
      [functionCall('delete_all', {}, { callId: 'd1' }), functionCall('list_files', { dir: '/srv' }, { callId: 'l1' })],
      [assistantMessage('done')],
    ]);
    const r = s.relay.startRun({ input: 'q', operationId: 'op-ux5' });
    const { agent, input } = await r.prepare(new Agent({ name: 'a', model, tools: [deleteAll(ran), list] }));
    await r.track(run(agent, input));
    expect(ran).toEqual([]);
    const after = s.events.filter((e) => e.type === 'afterToolCall').map((e) => e.event);
    const denied = after.find((e) => e.toolCallId === 'd1');
    expect(denied).toMatchObject({
      apiName: 'delete_all',
      stepIndex: 0,
      result: { success: false, content: { error: 'tool call blocked by policy', reason: 'policy.destructive', message: 'not here' } },
      verdict: { decision: 'deny', interceptionPoint: 'pre_tool_call', reason: 'policy.destructive', message: 'not here' },
    });
    expect(after.find((e) => e.toolCallId === 'l1')).toMatchObject({
      stepIndex: 0,
      args: { dir: '/tmp' },
      verdict: { decision: 'transform', changed: ['args'] },
    });
    expect(s.events.filter((e) => e.type === 'beforeStep').map((e) => e.event.stepIndex)).toEqual([0, 1]);
  });

  it("UX-5 Agents-SDK named model with a mock provider: 'gpt-4o' and the default model of a handoff target resolve through the provider (given, or the SDK's default)", async () => {
    const asked: string[] = [];
    const models: Record<string, Model> = {
      'gpt-4o': new ScriptedModel([[functionCall('transfer_to_helper', {}, { callId: 'h1' })]]),
      '': new ScriptedModel([[assistantMessage('answered by the default model')]]),
    };
    const provider: ModelProvider = {
      getModel: (name) => {
        asked.push(name ?? '');
        return models[name ?? '']!;
      },
    };
    const s = setup();
    const helper = new Agent({ name: 'helper' }); // no model: the default
    const r = s.relay.startRun({ input: 'q' });
    const { agent, input } = await r.prepare(new Agent({ name: 'top', model: 'gpt-4o', handoffs: [helper] }), { modelProvider: provider });
    const result = await r.track(run(agent, input));
    expect(result.finalOutput).toBe('answered by the default model');
    expect(asked).toEqual(['gpt-4o', '']);
    expect(s.records.find((x) => x.interception_point === 'pre_model_call')).toBeDefined();
    expect(s.seen.find((c) => c.interception_point === 'pre_model_call')).toMatchObject({ model: expect.objectContaining({ id: 'gpt-4o' }) });

    // No modelProvider: the SDK's own default provider (setDefaultModelProvider) resolves the name, as a Runner would.
    asked.length = 0;
    models['gpt-4o'] = new ScriptedModel([[assistantMessage('from the default provider')]]);
    setDefaultModelProvider(provider);
    const r2 = s.relay.startRun({ input: 'q' });
    const p2 = await r2.prepare(new Agent({ name: 'top', model: 'gpt-4o' }));
    expect((await r2.track(run(p2.agent, p2.input))).finalOutput).toBe('from the default provider');
    expect(asked).toEqual(['gpt-4o']);
  });

  it("UX-5 Agents-SDK hookrelay spans join the SDK trace: each judged call is a hookrelay.* span under the SDK's own span for it, with the session id and the verdict (no arguments)", async () => {
    type Ended = { traceId: string; spanId: string; parentId: string | null; data: { type: string; name?: string; data?: Record<string, unknown> } };
    const ended: Ended[] = [];
    const traces: string[] = [];
    const collector: TracingProcessor = {
      onTraceStart: async (t) => void traces.push(t.traceId),
      onTraceEnd: async () => undefined,
      onSpanStart: async () => undefined,
      onSpanEnd: async (span) => void ended.push({ traceId: span.traceId, spanId: span.spanId, parentId: span.parentId, data: span.spanData as Ended['data'] }),
      shutdown: async () => undefined,
      forceFlush: async () => undefined,
    };
    const s = setup(denyTool('delete_all'));
    const model = new ScriptedModel([[functionCall('delete_all', { folder: '/srv/secret-folder' }, { callId: 'd1' })], [assistantMessage('no')]]);
    setTraceProcessors([collector]); // replaces the exporter: nothing leaves the process
    setTracingDisabled(false);
    let sessionId = '';
    try {
      const r = s.relay.startRun({ input: 'q' });
      sessionId = r.sessionId;
      const { agent, input } = await r.prepare(new Agent({ name: 'a', model, tools: [deleteAll([])] }));
      await r.track(run(agent, input));
    } finally {
      setTracingDisabled(true);
      setTraceProcessors([]);
    }
    const ours = ended.filter((e) => e.data.type === 'custom' && e.data.name?.startsWith('hookrelay.'));
    const denied = ours.find((e) => e.data.name === 'hookrelay.tool_call');
    expect(denied?.data.data).toMatchObject({ session_id: sessionId, tool: 'delete_all', tool_call_id: 'd1', decision: 'deny', reason: 'policy.destructive' });
    expect(traces).toHaveLength(1);
    expect(denied?.traceId).toBe(traces[0]);
    expect(ended.find((e) => e.spanId === denied?.parentId)?.data.type).toBe('function'); // under the SDK's span for the tool call
    expect(ours.filter((e) => e.data.name === 'hookrelay.model_call').map((e) => e.data.data?.step)).toEqual([0, 1]);
    expect(JSON.stringify(ours)).not.toContain('secret-folder');
  });
});
