import type { RunEnd } from '../intercept/run/agentRun.ts';
import { InterceptionBlocked, InterceptionBlockedError } from '../contract/errors.ts';
import { guardTransport, McpSeam } from './mcpGuard.ts';
import { BridgedRun, checkIntegrationOptions, type IntegrationOptions, type IntegrationRunOptions, RunBridge, type RunFinish } from './runBridge.ts';

/**
 * `hookrelay/mcp`: the tools of an MCP server under AGENT-HOOKS-0.1, whatever runtime calls them.
 * `run.wrapClient(client)` guards the connection of an `@modelcontextprotocol/sdk` (1.x) or
 * `@modelcontextprotocol/client` (2.x) `Client`: every JSON-RPC message it writes is judged at its
 * transport (mcpGuard.ts), on a snapshot, whichever API wrote it. A `tools/call` goes through
 * `pre_tool_call` (a transform rewrites the arguments the server gets; a deny means the server is
 * never asked) and `post_tool_call` over the tool's output (a transform rewrites the content; a
 * deny withholds it) — for a task-augmented call, over the result `tasks/result` fetches. A deny
 * is an MCP error result, `{ isError: true, content: [{ type: 'text', text }] }`, whose text is
 * `{ error, reason, message? }` — never the blocked arguments or result. A method the guard does
 * not know is refused (`UninterceptedToolError`) unless named in `allowMethods`.
 * Structural: loads no MCP SDK itself.
 */

export type { IntegrationOptions as McpHooksOptions, IntegrationRunOptions as McpRunOptions, LifecycleDispatcher, RunFinish } from './runBridge.ts';
export type { McpCallToolResult } from './mcpWire.ts';

/** A `tools/call` request's params, as `Client.callTool` takes them. */
export type McpCallToolParams = { name: string; arguments?: Record<string, unknown>; [key: string]: unknown };

/** What `wrapClient` needs of a client: `callTool` and the transport it is connected over (the SDK's `Client` of either major). */
export type McpToolClient = {
  callTool(params: McpCallToolParams, ...rest: never[]): Promise<unknown>;
  readonly transport?: unknown;
};

export type WrapClientOptions = {
  /** Methods the guard does not know that may pass unjudged (a vendor extension you vouch for), by name. `tools/call` and `tasks/result` are always judged. */
  allowMethods?: readonly string[];
};

/** One seam per client: the run binding is the client's, whichever transport it is connected over. */
const seams = new WeakMap<object, McpSeam>();

/**
 * The guard follows the client's connection: both majors keep it in `_transport`, set by
 * `connect()`; a reconnect over a new transport is guarded before the first message is written.
 */
function followConnection(client: object, seam: McpSeam): void {
  const own = Object.getOwnPropertyDescriptor(client, '_transport');
  if (own === undefined || !own.configurable) return;
  let current: unknown = own.get ? own.get.call(client) : own.value;
  Object.defineProperty(client, '_transport', {
    get: () => current,
    set: (transport: unknown) => {
      if (transport !== null && typeof transport === 'object') guardTransport(transport, seam);
      current = transport;
    },
    enumerable: own.enumerable ?? true,
    configurable: false,
  });
}

/** One run whose MCP tool calls are judged: see `createMcpHooks`. */
export class McpRun extends BridgedRun {
  readonly #bridge: RunBridge;
  readonly #seams = new Set<McpSeam>();

  constructor(bridge: RunBridge) {
    super(bridge);
    this.#bridge = bridge;
  }

  /**
   * Guards the client's connection for this run and returns the client itself: its tool calls —
   * and those of every other path onto the same connection — are judged until `end()`; after it,
   * tool calls are refused until another run wraps the client. One open run judges a client at a
   * time (a second is refused with `AgentHooksInstallError`). Connect the client first.
   */
  wrapClient<C extends McpToolClient>(client: C, options: WrapClientOptions = {}): C {
    if (client === null || typeof client !== 'object' || typeof client.callTool !== 'function')
      throw new TypeError('wrapClient(client): client must be an MCP Client (an object with callTool)');
    if (options === null || typeof options !== 'object') throw new TypeError('wrapClient(client, options): options must be an object');
    const allow = options.allowMethods ?? [];
    if (!Array.isArray(allow) || allow.some((m) => typeof m !== 'string' || m === ''))
      throw new TypeError('wrapClient(client, options): allowMethods must be an array of JSON-RPC method names (strings)');
    const transport = client.transport;
    if (transport === null || typeof transport !== 'object')
      throw new TypeError('wrapClient(client): connect the client first (await client.connect(transport)): the guard sits on its transport');
    let seam = seams.get(client);
    if (seam === undefined) {
      seam = new McpSeam();
      seams.set(client, seam);
      followConnection(client, seam);
    }
    guardTransport(transport, seam);
    seam.bind(this.#bridge, new Set(allow.filter((m) => m !== 'tools/call' && m !== 'tasks/result')));
    this.#seams.add(seam);
    return client;
  }

  /** End the run (idempotent; the first ending wins): calls in flight settle, then agent_shutdown, onError, onComplete. */
  override async end(how: RunFinish = { status: 'completed' }): Promise<RunEnd> {
    await Promise.all([...this.#seams].map((s) => s.release(this.#bridge)));
    return super.end(how);
  }
}

/** A bundle of MCP runs sharing one AGENT-HOOKS-0.1 bundle and one dispatcher. */
export class McpHooks {
  readonly #options: IntegrationOptions;
  constructor(options: IntegrationOptions) {
    checkIntegrationOptions(options, 'createMcpHooks');
    this.#options = options;
  }

  /** Start one run: `agent_startup` and `input` are emitted at once; its tool calls wait for them. */
  startRun(options: IntegrationRunOptions): McpRun {
    return new McpRun(new RunBridge(this.#options, options));
  }
}

/** The MCP integration: `createMcpHooks({ hooks, dispatcher }).startRun({ input }).wrapClient(client)`. */
export function createMcpHooks(options: IntegrationOptions): McpHooks {
  return new McpHooks(options);
}

export { InterceptionBlockedError, InterceptionBlocked };
