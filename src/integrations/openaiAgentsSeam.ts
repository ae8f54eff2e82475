import { AsyncLocalStorage } from 'node:async_hooks';
import type { Agent, Handoff, Tool } from '@openai/agents';
import { UninterceptedToolError } from '../contract/errors.ts';

/**
 * Where the Agents SDK's runner takes each turn's capabilities: at every turn it asks the agent it
 * is on — whichever object that is — for its tools (`getAllTools`: function tools, MCP server
 * tools, local shell / apply_patch) and its handoffs (`getEnabledHandoffs`), and runs only what
 * they return. hookrelay hooks those two methods of the SDK's `Agent` class once, so each turn's
 * list is re-derived and judged by the hookrelay run that governs the agent: a clone of a prepared
 * agent (`clone()` passes the run on), a tool pushed onto `agent.tools` later, a handoff added at
 * run time, every agent a run started with `runAgent()` / `resume()` reaches (a resumed `RunState`
 * is re-derived onto the run's clones). An agent no hookrelay run governs is left as the SDK made it,
 * unless it is an app agent hookrelay prepared: that one is refused outside a run.
 */

// biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
type AnyAgent = Agent<any, any>;

/** What a hookrelay run does with one turn of an agent it governs. */
export type TurnJudge = {
  turnTools(agent: AnyAgent, tools: Tool[]): Promise<Tool[]>;
  turnHandoffs(agent: AnyAgent, handoffs: Handoff[]): Promise<Handoff[]>;
};

/**
 * The app's own agents hookrelay has walked in `prepare()` (the originals, not the clones): the
 * app meant them to run judged. A turn of one of them with no governing run is the SDK running it
 * outside hookrelay — typically `RunState.fromString(appAgent, saved)` handed to the SDK's own
 * `run()` — and its tools and handoffs refuse to run (I5) rather than run as the SDK made them.
 */
const prepared = new WeakSet<object>();

export function markPrepared(agent: object): void {
  prepared.add(agent);
}

function ungovernedError(agent: AnyAgent, tool: string): UninterceptedToolError {
  return new UninterceptedToolError(
    typeof agent.name === 'string' ? agent.name : 'agent',
    tool,
    'ungoverned_turn',
    'this agent was prepared by hookrelay but the SDK is running it outside a hookrelay run (e.g. a RunState handed to run() directly): run it with r.runAgent(agent) or resume it with r.resume(agent, state)',
  );
}

/** The executors a local tool runs through (`shell`, `editor`, `computer`): every method refuses. */
const EXECUTORS = ['shell', 'editor', 'computer'] as const;

function refusingExecutor(executor: object, refuse: () => never): object {
  return new Proxy(executor, {
    get: (target, key) => (typeof Reflect.get(target, key) === 'function' ? refuse : Reflect.get(target, key)),
  });
}

/**
 * The tools of a prepared app agent reached with no governing run, made to refuse when run: the
 * SDK may still read them (`RunState.fromString(appAgent, saved)` maps the saved calls onto them,
 * and `r.resume()` then re-derives that state onto its judged clones), but calling one throws.
 */
function refusingTools(agent: AnyAgent, tools: Tool[]): Tool[] {
  return tools.map((t) => {
    const refuse = (): never => {
      throw ungovernedError(agent, t.name);
    };
    const copy = Object.assign(Object.create(Object.getPrototypeOf(t)) as Tool, t);
    if (t.type === 'function') Object.assign(copy, { invoke: async () => refuse() });
    for (const key of EXECUTORS) {
      const executor: unknown = Reflect.get(t, key);
      if (executor !== null && typeof executor === 'object') Reflect.set(copy, key, refusingExecutor(executor, refuse));
    }
    return copy;
  });
}

function refusingHandoffs(agent: AnyAgent, handoffs: Handoff[]): Handoff[] {
  return handoffs.map((h) =>
    Object.assign(Object.create(Object.getPrototypeOf(h)) as Handoff, h, {
      onInvokeHandoff: async () => {
        throw ungovernedError(agent, h.toolName);
      },
    }),
  );
}

/** The run whose `run()` / `resume()` is executing (its async context). */
const current = new AsyncLocalStorage<TurnJudge>();
/** Agents a run made (its clones, and clones of them): governed by that run for their life. */
const madeBy = new WeakMap<object, TurnJudge>();
/** The run that judges this agent's turns: the run executing (`runAgent` / `resume`), else the run that made the agent. */
function judgeOf(agent: object): TurnJudge | undefined {
  return current.getStore() ?? madeBy.get(agent);
}

/** The run a clone belongs to (`undefined` for an agent no run made). */
export function makerOf(agent: object): TurnJudge | undefined {
  return madeBy.get(agent);
}

export function registerMade(agent: object, judge: TurnJudge): void {
  madeBy.set(agent, judge);
}

/** Runs `fn` (an SDK run) as this run: every agent's turns inside it are judged by it. */
export function withinRun<T>(judge: TurnJudge, fn: () => Promise<T>): Promise<T> {
  return current.run(judge, fn);
}

const SEAM = Symbol.for('hookrelay.agentsTurnSeam');

type AgentProto = {
  getAllTools: (...args: unknown[]) => Promise<Tool[]>;
  getEnabledHandoffs: (...args: unknown[]) => Promise<Handoff[]>;
  clone: (...args: unknown[]) => AnyAgent;
  [SEAM]?: true;
};

function hook(proto: AgentProto): void {
  if (proto[SEAM] === true) return;
  const getAllTools = proto.getAllTools;
  const getEnabledHandoffs = proto.getEnabledHandoffs;
  const clone = proto.clone;
  if (typeof getAllTools !== 'function' || typeof getEnabledHandoffs !== 'function' || typeof clone !== 'function')
    throw new TypeError('hookrelay/openai-agents: this @openai/agents has no Agent.getAllTools / getEnabledHandoffs / clone: use @openai/agents 0.20');
  Object.defineProperties(proto, {
    getAllTools: {
      value: async function (this: AnyAgent, ...args: unknown[]) {
        const judge = judgeOf(this);
        const tools = await getAllTools.apply(this, args);
        if (judge !== undefined) return judge.turnTools(this, tools);
        return prepared.has(this) ? refusingTools(this, tools) : tools;
      },
      writable: true,
      configurable: true,
    },
    getEnabledHandoffs: {
      value: async function (this: AnyAgent, ...args: unknown[]) {
        const judge = judgeOf(this);
        const handoffs = await getEnabledHandoffs.apply(this, args);
        if (judge !== undefined) return judge.turnHandoffs(this, handoffs);
        return prepared.has(this) ? refusingHandoffs(this, handoffs) : handoffs;
      },
      writable: true,
      configurable: true,
    },
    clone: {
      value: function (this: AnyAgent, ...args: unknown[]) {
        const copy = clone.apply(this, args);
        const maker = madeBy.get(this);
        if (maker !== undefined) madeBy.set(copy, maker); // a clone of a governed agent is governed by the same run
        return copy;
      },
      writable: true,
      configurable: true,
    },
    [SEAM]: { value: true },
  });
}

/** Hooks the SDK's `Agent` class (the ESM build hookrelay loads), once per process: the runner calls these methods at every turn of every run. */
export function installTurnSeam(agentClass: { prototype: object }): void {
  hook(agentClass.prototype as AgentProto);
}

/**
 * Hooks the class of this agent too: an app on the SDK's CommonJS build has another `Agent` class
 * than the ESM one hookrelay loads. The class that defines `getAllTools` in its prototype chain.
 */
export function hookClassOf(agent: object): void {
  for (let proto = Object.getPrototypeOf(agent); proto !== null && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    if (Object.hasOwn(proto, 'getAllTools')) {
      hook(proto as AgentProto);
      return;
    }
  }
}
