import {
  AgentContextBuilder,
  InterceptionBlocked,
  InterceptionEmitter,
  createIdentityProvider,
  parseTransformPath,
  applyTransformPath,
  type AgentContext,
  type ApprovalResolver,
  type CompositionConfig,
  type EnforcementMode,
  type IdentityProviderOption,
  type Interceptor,
  type JsonValue,
  type Message,
} from '../../src/interception/index.ts';
import { writeTarget } from '../../src/interception/points.ts';
import type { Json, JsonObj, RunRecord } from './ctkEngine.ts';
import { deepEqual } from './miniSchema.ts';

/**
 * The reference host the CTK drives (HARNESS.md): a minimal agent loop over
 * the vector's mocked model and tools, wired to the hookrelay emitter at all
 * eight interception points. Buffered output, sequential tool calls.
 */

/** Declared surface (§13.1). */
export const CAPABILITIES: readonly string[] = ['model_calls', 'tool_calls', 'buffered_output'];
/** Declared postures (§13.1): a tool-seam deny, host_error included, surfaces to the model and the loop goes on. */
export const POSTURES: Readonly<Record<string, string>> = { tool_seam_host_error: 'continue' };

export type HarnessSetup = {
  scenario: JsonObj;
  interceptors: Interceptor[];
  resolver: ApprovalResolver | null;
  mode: EnforcementMode;
  composition: CompositionConfig;
  identityProvider: 'jcs-sha256' | 'ctk-fault' | null;
  redactForApproval: string[];
};

const MODEL_ID = 'mock';

function providerOf(declared: HarnessSetup['identityProvider']): IdentityProviderOption {
  if (declared !== 'ctk-fault') return declared;
  return createIdentityProvider('ctk-fault', () => {
    throw new Error('ctk scripted provider fault');
  });
}

/** §9 redaction seam as the vector grammar defines it: each listed path becomes "[redacted]", mirrored per §4.3. */
function redactorFor(paths: string[]): ((ctx: AgentContext) => AgentContext) | undefined {
  if (paths.length === 0) return undefined;
  return (ctx) => {
    for (const p of paths) {
      const parsed = parseTransformPath(p);
      if (!parsed.ok) continue;
      const applied = applyTransformPath(ctx.target, parsed.segments, '[redacted]');
      if (applied.ok) writeTarget(ctx, applied.target);
    }
    return ctx;
  };
}

type ToolResult = { value: JsonValue; isError: boolean };

function invokeMockTool(tools: JsonObj[], name: string, args: JsonObj): ToolResult {
  const tool = tools.find((t) => t.name === name);
  if (tool === undefined) return { value: `unknown tool ${name}`, isError: true };
  const behavior = Array.isArray(tool.behavior) ? (tool.behavior as JsonObj[]) : [];
  const clause = behavior.find((c) => c.when_args === undefined || deepEqual(c.when_args, args));
  if (clause === undefined) return { value: 'no matching behavior', isError: true };
  return { value: clause.return ?? null, isError: clause.is_error === true };
}

function blockedReason(err: InterceptionBlocked): string {
  return `blocked: ${err.record.verdict.reason ?? 'denied'}`;
}

/** One session over the scenario; returns the RunRecord the assertions consume. */
export async function runScenario(setup: HarnessSetup): Promise<RunRecord> {
  const s = setup.scenario;
  const tools = Array.isArray(s.tools) ? (s.tools as JsonObj[]) : [];
  const modelScript = Array.isArray(s.model_script) ? (s.model_script as JsonObj[]) : [];
  const input = s.input as JsonObj;
  const toolLog: Json[] = [];

  const emitter = new InterceptionEmitter({
    mode: setup.mode,
    composition: setup.composition,
    identityProvider: providerOf(setup.identityProvider),
    interceptors: setup.interceptors,
    resolver: setup.resolver,
    approvalRedactor: redactorFor(setup.redactForApproval),
  });
  const b = new AgentContextBuilder({ agentId: 'ref-agent', framework: 'hookrelay-ctk' });

  let outcome: RunRecord['outcome'] = 'completed';
  let final: JsonValue = null;
  try {
    await emitter.emit(b.agentStartup({ toolsRegistered: tools.map((t) => String(t.name)).sort() }));
    const inputCtx = b.input({ content: input.content ?? null, role: input.role as 'user' | 'system' | 'external' });
    await emitter.emit(inputCtx);
    const admitted = inputCtx.input as JsonObj; // post-transform (§4.3)
    let messages: Message[] = [{ role: String(admitted.role), content: admitted.content ?? null }];
    let answered = false;
    for (const step of modelScript) {
      const respond = step.respond as JsonObj;
      const pre = b.preModelCall({ modelId: MODEL_ID, messages });
      await emitter.emit(pre);
      messages = structuredClone(pre.messages as Message[]);
      const post = b.postModelCall({
        modelId: MODEL_ID,
        content: respond.content ?? null,
        toolCalls: (respond.tool_calls as JsonObj[]).map((t) => ({ id: String(t.id), name: String(t.name), args: t.args as JsonObj })),
        finishReason: String(respond.finish_reason),
      });
      await emitter.emit(post);
      const response = post.response as JsonObj; // post-transform
      const toolCalls = (response.tool_calls as JsonObj[]) ?? [];
      if (toolCalls.length === 0) {
        final = response.content ?? null;
        answered = true;
        break;
      }
      for (const tc of toolCalls) {
        try {
          const preTool = b.preToolCall({ id: String(tc.id), name: String(tc.name), args: structuredClone(tc.args as JsonObj) });
          await emitter.emit(preTool);
          const args = structuredClone((preTool.tool_call as JsonObj).args as JsonObj); // as actually passed
          const result = invokeMockTool(tools, String(tc.name), args);
          toolLog.push({ name: String(tc.name), args: structuredClone(args) });
          const postTool = b.postToolCall({ id: String(tc.id), name: String(tc.name), args, value: result.value, isError: result.isError });
          await emitter.emit(postTool);
          messages.push({ role: 'tool', content: (postTool.tool_result as JsonObj).value ?? null });
        } catch (err) {
          if (!(err instanceof InterceptionBlocked)) throw err;
          // §6.2: continue as if the action failed; the result is not incorporated (§6.1).
          messages.push({ role: 'tool', content: blockedReason(err) });
        }
      }
      messages.push({ role: 'assistant', content: response.content ?? '' });
    }
    if (answered && final !== null) {
      const out = b.output({ content: final });
      await emitter.emit(out);
      final = (out.output as JsonObj).content ?? null; // the verdicted content is what is released
    }
  } catch (err) {
    outcome = err instanceof InterceptionBlocked ? 'blocked' : 'error';
    final = null;
  }
  await emitter.emitUnchecked(b.agentShutdown({ reason: outcome === 'completed' ? 'completed' : 'error' }));

  const records = JSON.parse(JSON.stringify(emitter.records)) as JsonObj[];
  return {
    outcome,
    final_output: final,
    tool_invocations: toolLog,
    identities: records.map((r) => ({
      input_identity: (r.input_identity as string | null) ?? null,
      enforced_identity: (r.enforced_identity as string | null) ?? null,
    })),
    records,
    postures: { ...POSTURES },
  };
}
