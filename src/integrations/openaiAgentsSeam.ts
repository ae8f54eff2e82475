import { AsyncLocalStorage } from 'node:async_hooks';
import type { Agent, Handoff, Tool } from '@openai/agents';

/**
 * Where the Agents SDK's runner takes each turn's capabilities: at every turn it asks the agent it
 * is on — whichever object that is — for its tools (`getAllTools`: function tools, MCP server
 * tools, local shell / apply_patch) and its handoffs (`getEnabledHandoffs`), and runs only what
 * they return. hookrelay hooks those two methods of the SDK's `Agent` class once, so each turn's
 * list is re-derived and judged by the hookrelay run that governs the agent: a clone of a prepared
 * agent (`clone()` passes the run on), a tool pushed onto `agent.tools` later, a handoff added at
 * run time, every agent a run started with `runAgent()` / `resume()` reaches (a resumed `RunState`
 * is re-derived onto the run's clones). An agent no hookrelay run governs is left as the SDK made it.
 */

// biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
type AnyAgent = Agent<any, any>;

/** What a hookrelay run does with one turn of an agent it governs. */
export type TurnJudge = {
  turnTools(agent: AnyAgent, tools: Tool[]): Promise<Tool[]>;
  turnHandoffs(agent: AnyAgent, handoffs: Handoff[]): Promise<Handoff[]>;
};

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
        return judge === undefined ? tools : judge.turnTools(this, tools);
      },
      writable: true,
      configurable: true,
    },
    getEnabledHandoffs: {
      value: async function (this: AnyAgent, ...args: unknown[]) {
        const judge = judgeOf(this);
        const handoffs = await getEnabledHandoffs.apply(this, args);
        return judge === undefined ? handoffs : judge.turnHandoffs(this, handoffs);
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
