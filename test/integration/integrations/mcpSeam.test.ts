/**
 * SEAM-1 (I5): hookrelay/mcp judges at the client's transport, on a snapshot of each JSON-RPC
 * message — not a proxy around the client — so every path onto the connection is judged, with
 * MCP SDK 1.x (`@modelcontextprotocol/sdk`) and 2.x (`@modelcontextprotocol/client`): a real MCP
 * server over an in-memory transport, a real policy denying `delete_all` at `pre_tool_call` and a
 * post-call policy denying any result carrying `sk-live-…`. Each variant walked around the old
 * `wrapClient` proxy (issue 47, measured 1).
 */
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentContext } from '../../../src/contract/agentHooks.ts';
import { UninterceptedToolError, AgentHooksInstallError, AgentRunStateError } from '../../../src/contract/errors.ts';
import { createMcpHooks } from '../../../src/integrations/mcp.ts';
import { guardTransport, McpSeam } from '../../../src/integrations/mcpGuard.ts';
import { RunBridge } from '../../../src/integrations/runBridge.ts';
import type { Interceptor } from '../../../src/intercept/interceptor.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import { type Major, SECRET, type ServerHandle, startServer } from './fixtures/mcpServers.ts';

type Ctx = AgentContext & { tool_call?: { name?: string }; tool_result?: unknown };

const servers: ServerHandle[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close().catch(() => undefined);
});

/** The policy of every test: no bulk deletes, no live secret in any tool output. */
function policyVerdict(c: Ctx) {
  if (c.interception_point === 'pre_tool_call' && c.tool_call?.name === 'delete_all') return Verdict.deny({ reason: 'policy.destructive' });
  if (c.interception_point === 'post_tool_call' && JSON.stringify(c.tool_result).includes('sk-live-')) return Verdict.deny({ reason: 'policy.secret' });
  return Verdict.allow();
}

function policyRun() {
  const seen: Ctx[] = [];
  const policy: Interceptor = (ctx) => {
    const c = ctx as Ctx;
    seen.push(structuredClone(c));
    return policyVerdict(c);
  };
  const hooks = createAgentHooks({ interceptors: { policy }, framework: 'mcp' });
  const run = createMcpHooks({ hooks }).startRun({ input: 'tidy up' });
  return { run, seen };
}

async function connected(major: Major) {
  const server = await startServer(major);
  servers.push(server);
  const { run, seen } = policyRun();
  // Each variant reaches for an API one major has and the other lacks.
  const client = run.wrapClient(server.client) as any;
  const errors: string[] = [];
  client.onerror = (e: Error) => errors.push(e.message);
  return { server, run, seen, client, errors };
}

/** Everything a variant got back — results, stream messages, errors — as text, to look for the secret. */
async function settle(p: Promise<unknown>): Promise<string> {
  try {
    return JSON.stringify(await p) ?? 'undefined';
  } catch (err) {
    return `error: ${(err as Error).message} ${JSON.stringify((err as { data?: unknown }).data ?? null)}`;
  }
}

async function drain(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const m of stream) out.push(m);
  return out;
}

const CreatedTask = z.looseObject({ task: z.looseObject({ taskId: z.string() }) });

type Variant = { name: string; majors: Major[]; attack(c: Awaited<ReturnType<typeof connected>>): Promise<string[]> };

const variants: Variant[] = [
  {
    name: 'requestStream (not in the old list of unintercepted calls)',
    majors: ['v1'],
    attack: async ({ client }) => [
      await settle(drain(client.requestStream({ method: 'tools/call', params: { name: 'delete_all', arguments: {} } }, CallToolResultSchema))),
      await settle(drain(client.requestStream({ method: 'tools/call', params: { name: 'read_file', arguments: { path: 'a' } } }, CallToolResultSchema))),
    ],
  },
  {
    name: 'experimental.tasks.callToolStream (streamed, task-augmented)',
    majors: ['v1'],
    attack: async ({ client }) => [
      await settle(drain(client.experimental.tasks.callToolStream({ name: 'delete_all', arguments: {} }, CallToolResultSchema, { task: {} }))),
      await settle(drain(client.experimental.tasks.callToolStream({ name: 'vault_read', arguments: {} }, CallToolResultSchema, { task: { ttl: 60_000 } }))),
    ],
  },
  {
    name: 'callTool with the { task } option, then tasks/result by hand',
    majors: ['v1'],
    attack: async ({ client }) => {
      const denied = await settle(client.callTool({ name: 'delete_all', arguments: {} }, CallToolResultSchema, { task: {} }));
      const handle = await settle(client.callTool({ name: 'vault_read', arguments: {} }, CallToolResultSchema, { task: { ttl: 60_000 } }));
      const { tasks } = await client.experimental.tasks.listTasks();
      const fetched = await Promise.all(
        (tasks as Array<{ taskId: string }>).map((t) => settle(client.request({ method: 'tasks/result', params: { taskId: t.taskId } }, CallToolResultSchema))),
      );
      expect(fetched.length).toBeGreaterThan(0);
      return [denied, handle, ...fetched];
    },
  },
  {
    name: 'params.task (a task-augmented tools/call), then tasks/result twice',
    majors: ['v1'],
    attack: async ({ client }) => {
      const created = await settle(client.request({ method: 'tools/call', params: { name: 'vault_read', arguments: {}, task: { ttl: 60_000 } } }, CreatedTask));
      const out = [created, await settle(client.request({ method: 'tools/call', params: { name: 'delete_all', arguments: {}, task: {} } }, CreatedTask))];
      const taskId = /"taskId":"([^"]+)"/.exec(created)?.[1];
      if (taskId !== undefined) {
        for (let i = 0; i < 2; i++) out.push(await settle(client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema)));
      }
      return out;
    },
  },
  {
    name: 'a params.name getter (judged as read_file, sent as delete_all)',
    majors: ['v1', 'v2'],
    attack: async ({ client }) => {
      // Three reads answer read_file (what a wrapper checking the name reads), every later one delete_all.
      let reads = 0;
      const params = {
        get name() {
          reads++;
          return reads <= 3 ? 'read_file' : 'delete_all';
        },
        arguments: { path: 'a' },
      };
      return [await settle(client.callTool(params))];
    },
  },
  {
    name: 'a req.method getter (looks like tools/list, sent as tools/call)',
    majors: ['v1', 'v2'],
    attack: async ({ client }) => {
      let reads = 0;
      const req = {
        get method() {
          reads++;
          return reads <= 1 ? 'tools/list' : 'tools/call';
        },
        params: { name: 'delete_all', arguments: {} },
      };
      return [await settle(client.request(req, CallToolResultSchema))];
    },
  },
  {
    name: 'wrapped.transport.send (a raw JSON-RPC tools/call)',
    majors: ['v1', 'v2'],
    attack: async ({ client, errors }) => {
      const sends = [
        settle(client.transport.send({ jsonrpc: '2.0', id: 'raw-1', method: 'tools/call', params: { name: 'delete_all', arguments: {} } })),
        settle(client.transport.send({ jsonrpc: '2.0', id: 'raw-2', method: 'tools/call', params: { name: 'read_file', arguments: { path: 'a' } } })),
      ];
      const out = await Promise.all(sends);
      for (let i = 0; i < 50 && errors.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
      return [...out, ...errors]; // the protocol reports answers to ids it never sent: the judged answers, quoted
    },
  },
];

describe('SEAM-1 (I5): MCP judged at the protocol, every path onto the connection, SDK 1.x and 2.x', () => {
  for (const v of variants)
    for (const major of v.majors)
      it(`SEAM-1 (I5) MCP ${major}: ${v.name} — delete_all never ran, no sk-live secret came back`, async () => {
        const c = await connected(major);
        const got = await v.attack(c);
        expect(c.server.calls).not.toContain('delete_all');
        expect(got.join('\n')).not.toContain(SECRET);
        expect(c.errors.join('\n')).not.toContain(SECRET);
        // What reached the server was judged first: one pre_tool_call per tool run, naming it.
        const judged = c.seen.filter((s) => s.interception_point === 'pre_tool_call').map((s) => s.tool_call?.name);
        for (const ran of c.server.calls) expect(judged).toContain(ran);
        await c.run.end();
      });

  it('SEAM-1 (I5) MCP v2: the 2.x client has no requestStream nor experimental tasks; tasks/result for a task no judged call created is refused unsent', async () => {
    const c = await connected('v2');
    expect(c.client.requestStream).toBeUndefined();
    expect(c.client.experimental).toBeUndefined();
    const err = await c.client.request({ method: 'tasks/result', params: { taskId: 'task-1' } }, CallToolResultSchema).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UninterceptedToolError);
    expect((err as UninterceptedToolError).kind).toBe('mcp_task');
    await c.run.end();
  });

  it('SEAM-1 (I5) MCP v1: a task result is judged once and every fetch gets the judged answer; a task no judged call created is refused', async () => {
    const c = await connected('v1');
    const created = await c.client.request({ method: 'tools/call', params: { name: 'vault_read', arguments: {}, task: {} } }, CreatedTask);
    const a = await c.client.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema);
    const b = await c.client.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema);
    expect(a).toEqual(b);
    expect(a.isError).toBe(true);
    expect(JSON.stringify(a)).toContain('policy.secret');
    expect(c.seen.filter((s) => s.interception_point === 'post_tool_call')).toHaveLength(1);
    await expect(c.client.request({ method: 'tasks/result', params: { taskId: 'made-up' } }, CallToolResultSchema)).rejects.toBeInstanceOf(
      UninterceptedToolError,
    );
    await c.run.end();
  });

  for (const major of ['v1', 'v2'] as const) {
    it(`SEAM-1 (I5) MCP ${major}: a method the guard does not know is refused unsent (UninterceptedToolError), unless allowed by name`, async () => {
      const c = await connected(major);
      const Any = z.looseObject({});
      const err = await c.client.request({ method: 'vendor/run_tool', params: { name: 'delete_all' } }, Any).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UninterceptedToolError);
      expect((err as UninterceptedToolError).message).toContain('allowMethods');
      const allowed = createMcpHooks({ hooks: createAgentHooks({ interceptors: { ok: () => Verdict.allow() }, framework: 'mcp' }) }).startRun({ input: 'x' });
      await c.run.end();
      allowed.wrapClient(c.server.client, { allowMethods: ['vendor/run_tool'] });
      // Sent now: the server answers it does not know the method (it never got the first one either).
      await expect(c.client.request({ method: 'vendor/run_tool', params: {} }, Any)).rejects.toThrow(/not found/i);
      await allowed.end();
    });

    it(`SEAM-1 (I5) MCP ${major}: the client closed and connected again over a new transport stays guarded (delete_all denied, the secret withheld)`, async () => {
      const c = await connected(major);
      await c.server.reconnect();
      const denied = await c.client.callTool({ name: 'delete_all', arguments: {} });
      const read = await c.client.callTool({ name: 'read_file', arguments: { path: 'a' } });
      expect(c.server.calls).toEqual(['read_file']);
      expect(JSON.stringify([denied, read])).not.toContain(SECRET);
      expect(JSON.stringify(denied)).toContain('policy.destructive');
      await c.run.end();
    });

    it(`SEAM-4 (I5) MCP ${major}: a second open run on one client is refused (one bundle judges a connection); after end() tool calls are refused until a run wraps it again`, async () => {
      const c = await connected(major);
      const second = policyRun();
      expect(() => second.run.wrapClient(c.server.client)).toThrow(AgentHooksInstallError);
      await c.run.end();
      await expect(c.client.callTool({ name: 'read_file', arguments: { path: 'a' } })).rejects.toBeInstanceOf(AgentRunStateError);
      second.run.wrapClient(c.server.client);
      const r = await c.client.callTool({ name: 'read_file', arguments: { path: 'a' } });
      expect(JSON.stringify(r)).not.toContain(SECRET);
      expect(c.server.calls).toEqual(['read_file']);
      await second.run.end();
    });
  }

  it('SEAM-1 (I5) MCP 2026-07-28 input_required: the retried leg continues the judged call (one pre_tool_call), post_tool_call judges the final answer and withholds the secret', async () => {
    const points: string[] = [];
    const policy: Interceptor = (ctx) => {
      points.push(ctx.interception_point);
      return policyVerdict(ctx as Ctx);
    };
    const bridge = new RunBridge({ hooks: createAgentHooks({ interceptors: { policy }, framework: 'mcp' }) }, { input: 'x' });
    // A transport as the client sees it: what it writes goes to `wire`; the test answers as a 2026-07-28 server.
    const wire: Array<Record<string, unknown>> = [];
    const received: Array<Record<string, unknown>> = [];
    const transport = { send: async (m: Record<string, unknown>) => void wire.push(m), onmessage: undefined as unknown };
    const seam = new McpSeam();
    guardTransport(transport, seam);
    seam.bind(bridge, new Set());
    transport.onmessage = (m: Record<string, unknown>) => void received.push(m);
    const inbound = (m: Record<string, unknown>) => (transport.onmessage as (m: unknown) => void)(m);
    const until = async (f: () => boolean) => {
      for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 5));
    };
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'a' } } });
    await until(() => wire.length === 1);
    inbound({
      jsonrpc: '2.0',
      id: 1,
      result: { resultType: 'input_required', inputRequests: { q: { method: 'elicitation/create', params: {} } }, requestState: 's1' },
    });
    await until(() => received.length === 1);
    expect(received[0]).toMatchObject({ id: 1, result: { resultType: 'input_required' } }); // the client answers it
    await transport.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'read_file', arguments: { path: 'a' }, inputResponses: { q: { action: 'accept' } }, requestState: 's1' },
    });
    expect(wire).toHaveLength(2);
    inbound({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: `vault db=${SECRET}` }] } });
    await until(() => received.length === 2);
    expect(received[1]).toMatchObject({ id: 2, result: { isError: true } });
    expect(JSON.stringify(received)).not.toContain(SECRET);
    expect(points.filter((p) => p.endsWith('tool_call'))).toEqual(['pre_tool_call', 'post_tool_call']);
    await seam.release(bridge);
    await bridge.finish({ status: 'completed' });
  });
});
