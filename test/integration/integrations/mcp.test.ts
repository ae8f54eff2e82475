/**
 * hookrelay/mcp against a real MCP server and client (@modelcontextprotocol/sdk, in-memory
 * transport, no network): every callTool goes through pre_tool_call / post_tool_call; a deny is an
 * MCP error result and the server's tool never runs; transforms rewrite the arguments and the
 * content. And the AI SDK's own MCP client (@ai-sdk/mcp): its tools are intercepted as function
 * tools are, through the AI SDK integration.
 */
import { createMCPClient } from '@ai-sdk/mcp';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { generateText, stepCountIs, type ToolSet } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentContext } from '../../../src/contract/agentHooks.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createAiSdkHooks } from '../../../src/integrations/aiSdk.ts';
import { createMcpHooks } from '../../../src/integrations/mcp.ts';
import { InterceptionBlocked } from '../../../src/contract/errors.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import type { Interceptor } from '../../../src/intercept/interceptor.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { mockModel, textResult, toolCallsResult } from '../../support/aiSdkMock.ts';

type Ctx = AgentContext & { tool_call?: { name?: string; args?: Record<string, unknown> }; tool_result?: { value: unknown; is_error: boolean } };
type Judge = (ctx: Ctx) => ReturnType<typeof Verdict.allow>;

const SECRET = 'sk-live-SECRET-123';
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An MCP server whose tools log what they were called with. */
async function server() {
  const calls: Array<{ name: string; args: unknown }> = [];
  const s = new McpServer({ name: 'files', version: '1.0.0' });
  s.registerTool('delete_all', { description: 'delete every file', inputSchema: { confirm: z.boolean() } }, async (args) => {
    calls.push({ name: 'delete_all', args });
    return { content: [{ type: 'text', text: 'deleted 42 files' }] };
  });
  s.registerTool('read_file', { description: 'read a file', inputSchema: { path: z.string() } }, async (args) => {
    calls.push({ name: 'read_file', args });
    return { content: [{ type: 'text', text: `contents of ${args.path}: token=${SECRET}` }] };
  });
  s.registerTool('broken', { description: 'always fails' }, async () => {
    calls.push({ name: 'broken', args: {} });
    return { content: [{ type: 'text', text: 'disk on fire' }], isError: true };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await s.connect(serverSide);
  closers.push(() => s.close());
  return { calls, clientSide };
}

async function sdkClient() {
  const { calls, clientSide } = await server();
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  closers.push(() => client.close());
  return { calls, client };
}

function setup(judge: Judge) {
  const seen: Ctx[] = [];
  const interceptor: Interceptor = async (ctx) => {
    seen.push(structuredClone(ctx) as Ctx);
    return judge(ctx as Ctx);
  };
  const hooks = createAgentHooks({ interceptors: { policy: interceptor }, framework: 'mcp' });
  const dispatcher = new HookDispatcher({ logger: silentLogger(), env: {} });
  const points = () => seen.map((c) => c.interception_point);
  return { seen, hooks, dispatcher, points };
}

const denyDelete: Judge = (ctx) =>
  ctx.interception_point === 'pre_tool_call' && ctx.tool_call?.name === 'delete_all'
    ? Verdict.deny({ reason: 'policy.destructive', message: 'delete_all is not allowed' })
    : Verdict.allow();

describe('MCP: hookrelay/mcp wraps an @modelcontextprotocol/sdk Client', () => {
  it('MCP pre_tool_call deny: the server tool is never called; callTool returns an MCP error result naming the reason', async () => {
    const { calls, client } = await sdkClient();
    const s = setup(denyDelete);
    const run = createMcpHooks({ hooks: s.hooks }).startRun({ input: 'clean up' });
    const wrapped = run.wrapClient(client);
    const result = await wrapped.callTool({ name: 'delete_all', arguments: { confirm: true } });
    expect(calls).toEqual([]);
    expect(result).toEqual({
      isError: true,
      content: [
        { type: 'text', text: JSON.stringify({ error: 'tool call blocked by policy', reason: 'policy.destructive', message: 'delete_all is not allowed' }) },
      ],
    });
    // The rest of the client is the client: listing tools is untouched, and an allowed call runs.
    expect((await wrapped.listTools()).tools.map((t) => t.name)).toEqual(['delete_all', 'read_file', 'broken']);
    await wrapped.callTool({ name: 'read_file', arguments: { path: 'a.txt' } });
    expect(calls.map((c) => c.name)).toEqual(['read_file']);
    await run.end();
    expect(s.points()).toEqual(['agent_startup', 'input', 'pre_tool_call', 'pre_tool_call', 'post_tool_call', 'agent_shutdown']);
  });

  it('MCP transforms: pre_tool_call rewrites the arguments the server gets, post_tool_call rewrites the content the caller gets', async () => {
    const { calls, client } = await sdkClient();
    const s = setup((ctx) => {
      if (ctx.interception_point === 'pre_tool_call') return Verdict.transform('$target.path', 'public/readme.txt');
      if (ctx.interception_point === 'post_tool_call')
        return Verdict.transform('$target.content[0].text', JSON.stringify(ctx.tool_result?.value).includes(SECRET) ? 'token=[redacted]' : 'ok');
      return Verdict.allow();
    });
    const run = createMcpHooks({ hooks: s.hooks }).startRun({ input: 'read it' });
    const result = await run.wrapClient(client).callTool({ name: 'read_file', arguments: { path: '/etc/secrets' } });
    expect(calls).toEqual([{ name: 'read_file', args: { path: 'public/readme.txt' } }]);
    expect(result.content).toEqual([{ type: 'text', text: 'token=[redacted]' }]);
    expect(JSON.stringify(result)).not.toContain(SECRET);
    const post = s.seen.find((c) => c.interception_point === 'post_tool_call')!;
    expect(post.tool_call?.args).toEqual({ path: 'public/readme.txt' }); // the arguments actually passed
    await run.end();
  });

  it('MCP post_tool_call deny withholds the result; an MCP error result is is_error at post_tool_call; a raw tools/call request is intercepted too', async () => {
    const { calls, client } = await sdkClient();
    const s = setup((ctx) =>
      ctx.interception_point === 'post_tool_call' && JSON.stringify(ctx.tool_result).includes(SECRET)
        ? Verdict.deny({ reason: 'policy.pii' })
        : Verdict.allow(),
    );
    const run = createMcpHooks({ hooks: s.hooks }).startRun({ input: 'read' });
    const wrapped = run.wrapClient(client);
    const denied = await wrapped.callTool({ name: 'read_file', arguments: { path: 'a' } });
    expect(denied.isError).toBe(true);
    expect(JSON.stringify(denied)).not.toContain(SECRET);
    expect(JSON.stringify(denied)).toContain('policy.pii');

    const failed = await wrapped.callTool({ name: 'broken' });
    expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'disk on fire' }] });
    expect(s.seen.filter((c) => c.interception_point === 'post_tool_call').at(-1)?.tool_result).toMatchObject({ is_error: true });

    const { CallToolResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const raw = await wrapped.request({ method: 'tools/call', params: { name: 'read_file', arguments: { path: 'b' } } }, CallToolResultSchema);
    expect(JSON.stringify(raw)).not.toContain(SECRET);
    expect(s.seen.filter((c) => c.interception_point === 'pre_tool_call')).toHaveLength(3);
    expect(calls.map((c) => c.name)).toEqual(['read_file', 'broken', 'read_file']);
    await run.end();
  });

  it("MCP a hook author's odd transforms: a post_tool_call result that is not { content } becomes one text item; pre_tool_call arguments that are not an object fail closed before the server is asked", async () => {
    const { calls, client } = await sdkClient();
    const s = setup((ctx) => (ctx.interception_point === 'post_tool_call' ? Verdict.transform('$target', 'summary only') : Verdict.allow()));
    const run = createMcpHooks({ hooks: s.hooks }).startRun({ input: 'x' });
    const result = await run.wrapClient(client).callTool({ name: 'read_file', arguments: { path: 'a' } });
    expect(result.content).toEqual([{ type: 'text', text: 'summary only' }]);
    expect(result.isError).toBeUndefined();
    await run.end();

    const bad = setup((ctx) => (ctx.interception_point === 'pre_tool_call' ? Verdict.transform('$target', 'rm -rf /') : Verdict.allow()));
    const run2 = createMcpHooks({ hooks: bad.hooks }).startRun({ input: 'x' });
    await expect(run2.wrapClient(client).callTool({ name: 'delete_all', arguments: { confirm: true } })).rejects.toBeInstanceOf(InterceptionBlocked);
    expect(calls.map((c) => c.name)).toEqual(['read_file']); // delete_all never reached the server
    await run2.end();
  });

  it('MCP bad input: wrapClient refuses a non-client, callTool a missing name (naming the field)', async () => {
    const s = setup(() => Verdict.allow());
    const run = createMcpHooks({ hooks: s.hooks }).startRun({ input: 'x' });
    expect(() => run.wrapClient({} as never)).toThrow(/callTool/);
    const { client } = await sdkClient();
    await expect(run.wrapClient(client).callTool({ name: '' })).rejects.toThrow(/params\.name/);
    await run.end();
  });
});

describe('MCP: the AI SDK MCP client (@ai-sdk/mcp)', () => {
  it('MCP AI SDK MCP-client tools are intercepted like function tools: a denied tool never runs on the server, the model gets the error result', async () => {
    const { calls, clientSide } = await server();
    const mcp = await createMCPClient({ transport: clientSide, protocolVersionDiscovery: false });
    closers.push(() => mcp.close());
    // @ai-sdk/mcp pins its own @ai-sdk/provider-utils patch release: the same tools, a nominally different type.
    const tools = (await mcp.tools()) as unknown as ToolSet;
    const s = setup(denyDelete);
    const relay = createAiSdkHooks({ hooks: s.hooks, dispatcher: s.dispatcher });
    const model = mockModel({
      generate: [
        toolCallsResult([
          { id: 'c1', name: 'delete_all', args: { confirm: true } },
          { id: 'c2', name: 'read_file', args: { path: 'notes.txt' } },
        ]),
        textResult('Could not delete; read the notes.'),
      ],
    });
    const run = relay.startRun({ input: 'clean up' });
    const result = await run.track(generateText({ ...(await run.settings({ model, tools })), stopWhen: stepCountIs(3), toolCallConcurrency: 1 }));
    expect(result.text).toBe('Could not delete; read the notes.');
    expect(calls.map((c) => c.name)).toEqual(['read_file']);
    expect(s.points().filter((p) => p.endsWith('tool_call'))).toEqual(['pre_tool_call', 'pre_tool_call', 'post_tool_call']);
    const sent = model.doGenerateCalls[1]!.prompt.flatMap((m) => (m.role === 'tool' ? m.content : []));
    expect(JSON.stringify(sent.find((p) => p.type === 'tool-result' && p.toolCallId === 'c1'))).toContain('policy.destructive');
  });
});
