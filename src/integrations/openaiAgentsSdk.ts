import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Agent, ModelProvider, Tool } from '@openai/agents';

/**
 * What `prepare()` needs of the Agents SDK at run time, loaded on first use (the entry itself
 * imports only the SDK's types): handoff helpers, the default model provider (the one a `Runner`
 * without `modelProvider` uses), and the link from an `agent.asTool()` tool to its agent.
 */

type Sdk = typeof import('@openai/agents');
// biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
type AnyAgent = Agent<any, any>;
type SourceOf = (tool: Tool) => AnyAgent | undefined;

let sdk: Promise<Sdk> | undefined;
let sources: Promise<SourceOf[]> | undefined;

export function loadSdk(): Promise<Sdk> {
  sdk ??= import('@openai/agents');
  return sdk;
}

/** The provider the SDK's `Runner` resolves a model name (or the default model, `''`) with when none is configured. */
export async function defaultModelProvider(): Promise<ModelProvider> {
  const { Runner } = await loadSdk();
  return new Runner().config.modelProvider;
}

/**
 * The SDK keeps the agent behind an `asTool()` tool in a module-level registry it does not
 * export; both builds (ESM and CommonJS) of the installed core are asked, since the caller may
 * have loaded either. Undefined when the tool is no agent tool or the registry cannot be read.
 */
export async function agentToolSource(tool: Tool): Promise<AnyAgent | undefined> {
  sources ??= (async () => {
    const found: SourceOf[] = [];
    try {
      const require = createRequire(import.meta.url);
      const core = createRequire(require.resolve('@openai/agents')).resolve('@openai/agents-core');
      const dist = path.dirname(core);
      const esm = (await import(pathToFileURL(path.join(dist, 'agentToolSourceRegistry.mjs')).href)) as { getAgentToolSourceAgent?: SourceOf };
      if (typeof esm.getAgentToolSourceAgent === 'function') found.push(esm.getAgentToolSourceAgent);
      const cjs = createRequire(core)(path.join(dist, 'agentToolSourceRegistry.js')) as { getAgentToolSourceAgent?: SourceOf };
      if (typeof cjs.getAgentToolSourceAgent === 'function') found.push(cjs.getAgentToolSourceAgent);
    } catch {
      // another layout of the SDK: agent tools are then refused by prepare(), never let through
    }
    return found;
  })();
  for (const sourceOf of await sources) {
    const agent = sourceOf(tool);
    if (agent !== undefined) return agent;
  }
  return undefined;
}
