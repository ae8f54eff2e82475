import type { Agent, Handoff, InputGuardrail, Model, ModelProvider, OutputGuardrail, Tool } from '@openai/agents';
import { AgentHooksInstallError, UninterceptedToolError } from '../contract/errors.ts';
import { agentToolSource, type loadSdk } from './openaiAgentsSdk.ts';
import { hookClassOf, makerOf, markPrepared, registerMade, type TurnJudge } from './openaiAgentsSeam.ts';

/**
 * Every agent an Agents SDK run can reach, wrapped once per run: the agent itself, its handoff
 * targets (recursively; a cycle is wrapped once), the agents behind its `asTool()` tools, and
 * agents a handoff returns at run time. A wrapped agent is a clone (the original is untouched)
 * whose model, function tools and handoffs go through the run's interception. The same wrapping
 * is applied again at every turn (`turnTools`, `turnHandoffs`, called from the turn seam in
 * openaiAgentsSeam.ts) to what the agent offers then: MCP server tools, tools added later, clones.
 */

// biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
export type AnyAgent = Agent<any, any>;
/** `run`: an agent whose answer may end the run (the top agent, handoff targets); `nested`: an agent used as a tool. */
export type Role = 'run' | 'nested';
type Entry = { agent: AnyAgent; filled: Promise<void> };
/** The clones of one run, kept across its `prepare()` / `asTool()` calls, with the role each was made for and the handoffs made for them. */
export type Clones = {
  run: Map<AnyAgent, Entry>;
  nested: Map<AnyAgent, Entry>;
  ours: WeakSet<AnyAgent>;
  roles: WeakMap<AnyAgent, Role>;
  handoffs: WeakSet<Handoff>;
};

export function newClones(): Clones {
  return { run: new Map(), nested: new Map(), ours: new WeakSet(), roles: new WeakMap(), handoffs: new WeakSet() };
}

export type GraphDeps = {
  sdk: Awaited<ReturnType<typeof loadSdk>>;
  provider: ModelProvider;
  allow: ReadonlySet<string>;
  wrapModel(model: Model, role: Role, modelId: string | undefined): Model;
  wrapFunctionTool<T extends Tool>(tool: T): T;
  /** A local shell / apply_patch tool with its executor intercepted; undefined for a kind no wrapper can stop. */
  wrapLocalTool(tool: Tool): Tool | undefined;
  /** A tool this run already wrapped (or built with `run.asTool`). */
  isOurs(tool: Tool): boolean;
  guardrails: { input: InputGuardrail; output: OutputGuardrail };
  invokeHandoff(handoff: Handoff, ctx: unknown, args: string, owner: AnyAgent, next: (agent: AnyAgent) => Promise<AnyAgent>): Promise<AnyAgent>;
  clones: Clones;
  /** The run: its clones are registered to it (a clone of a clone too). */
  judge: TurnJudge;
  /** A model this run wrapped (a turn on an agent with any other model is refused). */
  isOurModel(model: unknown): boolean;
};

type FunctionToolFields = {
  type: 'function';
  name: string;
  description: string;
  parameters: unknown;
  needsApproval: unknown;
  isEnabled: unknown;
  on?: unknown;
};

/** The input schema `asTool()` gives a tool without `parameters`: `{ input: string }`. */
function isDefaultAgentToolSchema(parameters: unknown): boolean {
  const p = parameters as { type?: unknown; properties?: Record<string, { type?: unknown }> } | null;
  if (p === null || typeof p !== 'object' || p.type !== 'object' || p.properties === undefined) return false;
  const keys = Object.keys(p.properties);
  return keys.length === 1 && keys[0] === 'input' && p.properties.input?.type === 'string';
}

export class AgentGraph {
  readonly #d: GraphDeps;

  constructor(deps: GraphDeps) {
    this.#d = deps;
  }

  /** The agent's clone for this run (`model`: the caller's override for this agent only). */
  wrap(agent: AnyAgent, role: Role, model?: Model | string): Promise<AnyAgent> {
    return this.#wrap(agent, role, new Set(), model);
  }

  async #known(agent: AnyAgent, role: Role, visiting: ReadonlySet<AnyAgent>): Promise<AnyAgent | undefined> {
    const entry = this.#d.clones[role].get(agent);
    if (entry === undefined) return undefined;
    // Inside the walk that is filling it (a cycle): the clone as it is; otherwise once it is complete.
    if (!visiting.has(agent)) await entry.filled;
    return entry.agent;
  }

  async #wrap(agent: AnyAgent, role: Role, visiting: Set<AnyAgent>, override?: Model | string): Promise<AnyAgent> {
    if (agent === null || typeof agent !== 'object' || typeof agent.clone !== 'function')
      throw new TypeError('prepare(agent): agent must be an Agents SDK Agent (new Agent({ name, ... }))');
    if (this.#d.clones.ours.has(agent)) return agent;
    hookClassOf(agent);
    const maker = makerOf(agent);
    if (maker === this.#d.judge) return agent; // a clone of one of this run's clones
    if (maker !== undefined)
      throw new AgentHooksInstallError(
        `agent "${agent.name}" was prepared by another hookrelay run: prepare the app's own agent — one AGENT-HOOKS-0.1 bundle judges a run (stacked bundles are refused)`,
      );
    markPrepared(agent);
    const known = await this.#known(agent, role, visiting);
    if (known !== undefined) return known;
    const { model, modelId } = await this.#modelFor(agent, override);
    const raced = await this.#known(agent, role, visiting);
    if (raced !== undefined) return raced;
    const clone = agent.clone({
      model: this.#d.wrapModel(model, role, modelId),
      // The input guardrail runs for the first agent only, the output guardrail for whichever agent answers last.
      ...(role === 'run'
        ? { inputGuardrails: [this.#d.guardrails.input, ...agent.inputGuardrails], outputGuardrails: [this.#d.guardrails.output, ...agent.outputGuardrails] }
        : {}),
    });
    this.#d.clones.ours.add(clone);
    this.#d.clones.roles.set(clone, role);
    registerMade(clone, this.#d.judge);
    visiting.add(agent);
    const filled = (async () => {
      clone.tools = await this.#tools(agent, agent.tools as Tool[], visiting);
      clone.handoffs = await this.#handoffs(agent.handoffs, clone, role, visiting);
    })();
    this.#d.clones[role].set(agent, { agent: clone, filled });
    try {
      await filled;
    } catch (err) {
      this.#d.clones[role].delete(agent);
      throw err;
    }
    return clone;
  }

  /** The agent's model as the SDK's `Runner` resolves it: a Model as is, a name (or `''`, the default model) through the provider. */
  async #modelFor(agent: AnyAgent, override: Model | string | undefined): Promise<{ model: Model; modelId: string | undefined }> {
    const chosen: unknown = override ?? agent.model;
    if (chosen !== null && typeof chosen === 'object') return { model: chosen as Model, modelId: undefined };
    const name = typeof chosen === 'string' ? chosen : '';
    const model = await this.#d.provider.getModel(name);
    if (model === null || typeof model !== 'object' || typeof model.getResponse !== 'function')
      throw new TypeError(
        `prepare(agent): the model provider returned no Model for ${name === '' ? 'the default model' : `"${name}"`} (agent "${agent.name}")`,
      );
    return { model, modelId: name === '' ? undefined : name };
  }

  /**
   * One turn of an agent the run governs, as the SDK derived it: the agent's model must be one this
   * run wrapped, and each tool (MCP server tools, tools added since `prepare()`) is wrapped or
   * refused as `prepare()` does.
   */
  async turnTools(agent: AnyAgent, tools: Tool[]): Promise<Tool[]> {
    if (!this.#d.isOurModel(agent.model))
      throw new UninterceptedToolError(
        agent.name,
        typeof agent.model === 'string' && agent.model !== '' ? agent.model : 'model',
        'model',
        'its model calls would not be judged (a model set after prepare(), or an agent no prepare() wrapped): prepare() the agent, or run it with r.runAgent(agent)',
      );
    return this.#tools(agent, tools, new Set());
  }

  /** One turn's handoffs: each goes through `pre_tool_call` before the SDK's handoff runs, its target wrapped. */
  async turnHandoffs(owner: AnyAgent, handoffs: Handoff[]): Promise<Handoff[]> {
    if (handoffs.every((h) => this.#d.clones.handoffs.has(h))) return handoffs;
    return (await this.#handoffs(handoffs, owner, this.#d.clones.roles.get(owner) ?? 'run', new Set())) as Handoff[];
  }

  async #tools(agent: AnyAgent, tools: readonly Tool[], visiting: Set<AnyAgent>): Promise<Tool[]> {
    const out: Tool[] = [];
    for (const tool of tools) out.push(await this.#tool(agent, tool, visiting));
    return out;
  }

  async #tool(agent: AnyAgent, tool: Tool, visiting: Set<AnyAgent>): Promise<Tool> {
    if (this.#d.isOurs(tool)) return this.#d.wrapFunctionTool(tool);
    if (tool.type !== 'function') {
      const local = this.#d.wrapLocalTool(tool);
      if (local !== undefined) return local;
      // Hosted tools (a hosted shell too) run at the provider; the computer tool's actions have no seam to judge one call by.
      if (!this.#d.allow.has(tool.name)) throw new UninterceptedToolError(agent.name, tool.name, tool.type);
      return tool;
    }
    const source = await agentToolSource(tool);
    const fields = tool as unknown as FunctionToolFields;
    if (source === undefined && typeof fields.on !== 'function') return this.#d.wrapFunctionTool(tool);
    if (source === undefined || !isDefaultAgentToolSchema(fields.parameters)) {
      // An agent tool hookrelay cannot rebuild around the wrapped agent: its own call is judged, its agent's calls would not be.
      if (!this.#d.allow.has(tool.name)) throw new UninterceptedToolError(agent.name, tool.name, 'agent_tool');
      return this.#d.wrapFunctionTool(tool);
    }
    if (makerOf(source) === this.#d.judge) return this.#d.wrapFunctionTool(tool); // built around one of this run's clones already
    const nested = await this.#wrap(source, 'nested', visiting);
    const rebuilt = nested.asTool({
      toolName: fields.name,
      toolDescription: fields.description,
      needsApproval: fields.needsApproval as never,
      isEnabled: fields.isEnabled as never,
    }) as unknown as Tool;
    return this.#d.wrapFunctionTool(rebuilt);
  }

  async #handoffs(entries: AnyAgent['handoffs'], owner: AnyAgent, role: Role, visiting: Set<AnyAgent>): Promise<AnyAgent['handoffs']> {
    const out: AnyAgent['handoffs'] = [];
    for (const entry of entries) {
      if (this.#d.clones.handoffs.has(entry as Handoff)) {
        out.push(entry);
        continue;
      }
      const handoff = this.#d.sdk.getHandoff(entry);
      const target = await this.#wrap(handoff.agent, role, visiting);
      // An agent a handoff returns at run time (its own onInvokeHandoff) is wrapped when it is returned.
      const next = (produced: AnyAgent) => this.#wrap(produced, role, new Set());
      const judged = handoff.clone({ agent: target, onInvokeHandoff: (ctx, args) => this.#d.invokeHandoff(handoff, ctx, args, owner, next) });
      this.#d.clones.handoffs.add(judged);
      out.push(judged);
    }
    return out;
  }
}
