import { AsyncLocalStorage } from 'node:async_hooks';
import type { LanguageModelMiddleware, ToolSet } from 'ai';
import { AgentHooksInstallError, UninterceptedToolError } from '../contract/errors.ts';

/**
 * What the AI SDK middleware can see of the tools, at the one call every step passes (the model
 * call): the tools it offers the model and the tool results the prompt carries back. A tool no
 * `wrapTools` wrapped, or a result no wrapped `execute` produced (a tool of the same name swapped
 * in), is refused before the model sees it — never run silently. And a hookrelay middleware inside
 * another one's model call is a stacked bundle (AGENT-HOOKS one-bundle rule): refused.
 */

type CallOptions = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0]['params'];

/** Tool names `wrapTools` saw: `execute` (hookrelay runs it under pre/post_tool_call) or `caller` (no `execute`: the caller runs it, its call judged at post_model_call). */
export type ToolNames = Map<string, 'execute' | 'caller'>;

export function registerTools(names: ToolNames, tools: ToolSet): void {
  for (const [name, t] of Object.entries(tools)) names.set(name, typeof (t as { execute?: unknown }).execute === 'function' ? 'execute' : 'caller');
}

const WRAP_TOOLS =
  'pass every tool through relay.wrapTools(tools) (or run.settings({ tools }) / run.wrapTools for one run): hookrelay judges only the execute it wrapped';

/** The tool-result parts of the prompt's trailing tool messages (the calls the last step answered). */
function answered(prompt: CallOptions['prompt']): Array<{ toolCallId: string; toolName: string }> {
  const out: Array<{ toolCallId: string; toolName: string }> = [];
  for (let i = prompt.length - 1; i >= 0 && prompt[i]!.role === 'tool'; i--) {
    for (const p of (prompt[i] as { content: Array<{ type: string; toolCallId?: string; toolName?: string }> }).content)
      if (p.type === 'tool-result' && typeof p.toolCallId === 'string') out.push({ toolCallId: p.toolCallId, toolName: String(p.toolName) });
  }
  return out;
}

/**
 * Refuses a model call that offers a tool `wrapTools` never saw, or that carries back the result of
 * a call this run asked for (`asked`) which no wrapped `execute` ran (`claimed`). Consumed ids leave both sets.
 */
export function refuseUnseen(params: CallOptions, names: ToolNames, asked: Set<string>, claimed: Set<string>): void {
  for (const t of params.tools ?? []) {
    if (!names.has(t.name)) throw new UninterceptedToolError('ai-sdk', t.name, t.type === 'function' ? 'function' : 'provider', WRAP_TOOLS);
  }
  for (const r of answered(params.prompt)) {
    if (!asked.has(r.toolCallId)) continue;
    asked.delete(r.toolCallId);
    const ran = claimed.delete(r.toolCallId);
    if (!ran && names.get(r.toolName) !== 'caller')
      throw new UninterceptedToolError(
        'ai-sdk',
        r.toolName,
        'function',
        `the result of call ${r.toolCallId} came from an execute hookrelay did not wrap (a tool of the same name replaced the wrapped one), so it is withheld from the model: ${WRAP_TOOLS}`,
      );
  }
}

/** The model call a hookrelay middleware is judging (its async context). */
const judging = new AsyncLocalStorage<true>();

/** Runs one judged model call; inside another hookrelay middleware's model call it is a stacked bundle, refused. */
export function judgeModelCall<T>(call: () => Promise<T>): Promise<T> {
  if (judging.getStore() === true)
    return Promise.reject(
      new AgentHooksInstallError(
        'two hookrelay middlewares judge one model call (wrapLanguageModel with relay.middleware() twice, or a model wrapped by one run wrapped again): install one AGENT-HOOKS-0.1 bundle per model — stacked bundles are refused',
      ),
    );
  return judging.run(true, call);
}
