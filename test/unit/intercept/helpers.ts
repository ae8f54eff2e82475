import { AgentContextBuilder, type AgentContext } from '../../../src/intercept/index.ts';

export function builder(sessionId = 'sess-1'): AgentContextBuilder {
  return new AgentContextBuilder({ agentId: 'agent-1', framework: 'unit', sessionId });
}

export function toolCtx(args: Record<string, string | number> = { url: 'https://evil' }, b = builder()): AgentContext {
  return b.preToolCall({ id: 'tc-1', name: 'http_get', args });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
