import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import type { AdmittedInput, AgentRun, RunEnd } from '../interception/run/agentRun.ts';
import { InterceptionBlocked, InterceptionBlockedError, ToolError } from '../interception/errors.ts';
import { checkIntegrationOptions, type IntegrationOptions, type IntegrationRunOptions, RunBridge, type RunFinish } from './runBridge.ts';

/**
 * `hookrelay/mcp`: the tools of an MCP server under AGENT-HOOKS-0.1, whatever runtime calls them.
 * `run.wrapClient(client)` hands back the `@modelcontextprotocol/sdk` `Client` (or anything with
 * its `callTool`) with every `callTool` — and every raw `request({ method: 'tools/call' })` —
 * put through `pre_tool_call` (a transform rewrites the arguments the server gets; a deny means
 * the server is never called) and `post_tool_call` (a transform rewrites the result's content; a
 * deny withholds it). A deny is an MCP error result, `{ isError: true, content: [{ type: 'text',
 * text }] }`, whose text is `{ error, reason, message? }` — never the blocked arguments or result.
 * Structural: loads no MCP SDK itself.
 */

export type { IntegrationOptions as McpHooksOptions, IntegrationRunOptions as McpRunOptions, LifecycleDispatcher, RunFinish } from './runBridge.ts';

/** A `tools/call` request's params, as `Client.callTool` takes them. */
export type McpCallToolParams = { name: string; arguments?: Record<string, unknown>; [key: string]: unknown };

/** A `tools/call` result, as `Client.callTool` returns it. */
export type McpCallToolResult = { content?: unknown[]; structuredContent?: unknown; isError?: boolean; [key: string]: unknown };

/** What `wrapClient` needs of a client: `callTool` (the SDK's `Client` has it; `request` is wrapped too when present). */
export type McpToolClient = {
  callTool(params: McpCallToolParams, ...rest: never[]): Promise<unknown>;
};

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The judged value of a result: its content and structured content (not `_meta`, not `isError`, which is `is_error`). */
function judgedValue(result: McpCallToolResult): JsonObject {
  const value: JsonObject = { content: (result.content ?? []) as JsonValue };
  if (result.structuredContent !== undefined) value.structuredContent = result.structuredContent as JsonValue;
  return value;
}

/** A verdicted value back as a result: `{ content, structuredContent? }` as left, anything else as one text item. */
function resultOf(value: JsonValue, original: McpCallToolResult | undefined, isError: boolean): McpCallToolResult {
  const base: McpCallToolResult = { ...(original ?? {}) };
  delete base.structuredContent;
  if (isObject(value) && Array.isArray(value.content)) {
    base.content = value.content;
    if (value.structuredContent !== undefined) base.structuredContent = value.structuredContent;
  } else {
    base.content = [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }];
  }
  if (isError) base.isError = true;
  else delete base.isError;
  return base;
}

function deniedResult(content: JsonValue): McpCallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(content) }], isError: true };
}

/** One run whose MCP tool calls are judged: see `createMcpHooks`. */
export class McpRun {
  readonly #bridge: RunBridge;
  readonly #wrapped = new WeakMap<object, object>();

  constructor(bridge: RunBridge) {
    this.#bridge = bridge;
  }

  get operationId(): string {
    return this.#bridge.operationId;
  }

  get sessionId(): string {
    return this.#bridge.sessionId;
  }

  /** The underlying run adapter run (records, `blocked`). */
  get run(): AgentRun {
    return this.#bridge.run;
  }

  /** `agent_startup` + `input` permitted: the input as admitted. Tool calls wait for it. */
  get ready(): Promise<AdmittedInput> {
    return this.#bridge.ready;
  }

  /**
   * The client with its tool calls intercepted (the same object underneath: connection, listTools,
   * resources and prompts are untouched). Calling through the original client is not intercepted.
   */
  wrapClient<C extends McpToolClient>(client: C): C {
    if (client === null || typeof client !== 'object' || typeof client.callTool !== 'function')
      throw new TypeError('wrapClient(client): client must be an MCP Client (an object with callTool)');
    const known = this.#wrapped.get(client);
    if (known !== undefined) return known as C;
    const callTool = (params: McpCallToolParams, ...rest: unknown[]) =>
      this.#callTool(params, (p) => (client.callTool as (...a: unknown[]) => Promise<unknown>).call(client, p, ...rest));
    const request = (req: unknown, ...rest: unknown[]) => {
      const raw = (client as unknown as { request: (...a: unknown[]) => Promise<unknown> }).request;
      if (!isObject(req) || req.method !== 'tools/call' || !isObject(req.params)) return raw.call(client, req, ...rest);
      return this.#callTool(req.params as McpCallToolParams, (p) => raw.call(client, { ...req, params: p }, ...rest));
    };
    const proxy = new Proxy(client, {
      get(target, prop, receiver) {
        if (prop === 'callTool') return callTool;
        if (prop === 'request' && typeof (target as { request?: unknown }).request === 'function') return request;
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    this.#wrapped.set(client, proxy);
    return proxy;
  }

  async #callTool(params: McpCallToolParams, send: (params: McpCallToolParams) => Promise<unknown>): Promise<McpCallToolResult> {
    if (!isObject(params) || typeof params.name !== 'string' || params.name === '')
      throw new TypeError('callTool(params): params.name must be the tool name (a non-empty string)');
    if (params.arguments !== undefined && !isObject(params.arguments)) throw new TypeError('callTool(params): params.arguments must be an object');
    let original: McpCallToolResult | undefined;
    let thrown: unknown;
    const r = await this.#bridge.toolCall({ name: params.name, args: params.arguments ?? {} }, async (admitted) => {
      let result: unknown;
      try {
        result = await send({ ...params, arguments: admitted });
      } catch (err) {
        thrown = err;
        throw err;
      }
      original = isObject(result) ? (result as McpCallToolResult) : { content: [] };
      // An MCP error result is the tool's failure: post_tool_call sees is_error with the result.
      if (original.isError === true) throw new ToolError(judgedValue(original), 'MCP tool returned an error result');
      return judgedValue(original);
    });
    if (r.kind === 'result') return resultOf(r.value, original, false);
    if (r.reason !== undefined) return deniedResult(r.content);
    // The call failed: a protocol or transport error post_tool_call left as it was is the caller's to see.
    if (thrown instanceof Error && original === undefined && r.message === thrown.message) throw thrown;
    return resultOf(r.content, original, true);
  }

  /** End the run (idempotent; the first ending wins): agent_shutdown, onError, onComplete. */
  end(how: RunFinish = { status: 'completed' }): Promise<RunEnd> {
    return this.#bridge.finish(how);
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
