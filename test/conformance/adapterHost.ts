import {
  InterceptionBlocked,
  ToolError,
  applyTransformPath,
  createAgentHooks,
  createIdentityProvider,
  parseTransformPath,
  type AgentContext,
  type ApprovalResolver,
  type CompositionConfig,
  type EnforcementMode,
  type IdentityProviderOption,
  type Interceptor,
  type JsonValue,
  type Message,
  type ModelStreamPart,
  type Persistence,
  type Streaming,
  type ToolSeamHostError,
} from '../../src/intercept/index.ts';
import { writeTarget } from '../../src/intercept/points.ts';
import type { Json, JsonObj, RunRecord } from './ctkEngine.ts';
import { deepEqual } from './miniSchema.ts';

/**
 * The CTK harness (HARNESS.md): the vector's mocked model and tools, driven through the run
 * adapter users call — `createAgentHooks().startRun()` with `modelCall` / `toolCall` / `output`
 * / `end` — so every vector exercises the product's own loop wrapper, not a test-only host.
 *
 * Two declared host surfaces, one per streaming mode of the adapter:
 * - `buffered` (the default): output buffered until `output` permits (`buffered_output`),
 *   persistence after `output`;
 * - `incremental` (the exception to buffered output): `buffered_output: false`, post_model_call mediated per
 *   segment with watermark-gated release (`incremental_output`), persistence after each
 *   post_model_call — the stricter durability setting, so `persisted_must_not_contain` has
 *   something to search.
 * Both read vectors with a lossless JSON parser (`int64_json`, `bigint_json`).
 */

export type HostSurface = {
  name: string;
  streaming: Streaming;
  persistence: Persistence;
  capabilities: readonly string[];
};

export const HOST_SURFACES: readonly HostSurface[] = [
  {
    name: 'buffered',
    streaming: 'buffered',
    persistence: 'after_output',
    capabilities: ['model_calls', 'tool_calls', 'buffered_output', 'int64_json', 'bigint_json'],
  },
  {
    name: 'incremental',
    streaming: 'incremental',
    persistence: 'per_model_call',
    capabilities: ['model_calls', 'tool_calls', 'incremental_output', 'int64_json', 'bigint_json'],
  },
];

/**
 * Declared posture: `continue` — a `host_error:*` deny at a tool point surfaces to the
 * model as a blocked tool result and the loop goes on. The adapter's default, `terminate`, ends
 * the run on infrastructure host errors but lets `transform_conflict` and
 * `composition_disagreement` (policy outcomes, agent-framework #7561) continue, which is neither
 * CTK posture exactly (AH-CTK-085/087 expect `blocked` under `terminate`); so the claim is made
 * for the `continue` configuration, where every host error continues.
 */
export const TOOL_SEAM_HOST_ERROR: ToolSeamHostError = 'continue';
export const POSTURES: Readonly<Record<string, string>> = { tool_seam_host_error: TOOL_SEAM_HOST_ERROR };

export type HarnessSetup = {
  surface: HostSurface;
  scenario: JsonObj;
  interceptors: Interceptor[];
  resolver: ApprovalResolver | null;
  mode: EnforcementMode;
  composition: CompositionConfig;
  identityProvider: 'jcs-sha256' | 'ctk-fault' | null;
  redactForApproval: string[];
};

function providerOf(declared: HarnessSetup['identityProvider']): IdentityProviderOption {
  if (declared !== 'ctk-fault') return declared;
  return createIdentityProvider('ctk-fault', () => {
    throw new Error('ctk scripted provider fault');
  });
}

/** The approval redaction seam as the vector grammar defines it: each listed path becomes "[redacted]", also in the field the target aliases. */
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

/** The mocked tool: first matching `behavior` clause; `is_error` fails with the scripted value. */
function mockTool(tools: JsonObj[], name: string, args: JsonObj): JsonValue {
  const tool = tools.find((t) => t.name === name);
  if (tool === undefined) throw new ToolError(`unknown tool ${name}`);
  const behavior = Array.isArray(tool.behavior) ? (tool.behavior as JsonObj[]) : [];
  const clause = behavior.find((c) => c.when_args === undefined || deepEqual(c.when_args, args));
  if (clause === undefined) throw new ToolError('no matching behavior');
  if (clause.is_error === true) throw new ToolError(clause.return ?? null);
  return clause.return ?? null;
}

/** `respond.stream`: the chunks in order, then the tool calls and the finish — or, truncated, an abnormal end after the chunks. */
async function* mockStream(respond: JsonObj): AsyncGenerator<ModelStreamPart> {
  for (const chunk of respond.stream as string[]) yield chunk;
  if (respond.stream_truncated === true) throw new Error('mock stream truncated');
  for (const t of (respond.tool_calls as JsonObj[]) ?? [])
    yield { type: 'tool-call', toolCallId: String(t.id), toolName: String(t.name), args: t.args as JsonObj };
  yield { type: 'finish', finishReason: String(respond.finish_reason) };
}

function mockResponse(respond: JsonObj) {
  if (Array.isArray(respond.stream)) return mockStream(respond);
  return {
    content: respond.content ?? null,
    toolCalls: ((respond.tool_calls as JsonObj[]) ?? []).map((t) => ({ id: String(t.id), name: String(t.name), args: t.args as JsonObj })),
    finishReason: String(respond.finish_reason),
  };
}

/** One session over the scenario, through the run adapter; returns the RunRecord the assertions consume. */
export async function runScenario(setup: HarnessSetup): Promise<RunRecord> {
  const s = setup.scenario;
  const tools = Array.isArray(s.tools) ? (s.tools as JsonObj[]) : [];
  const modelScript = Array.isArray(s.model_script) ? (s.model_script as JsonObj[]) : [];
  const input = s.input as JsonObj;
  const toolLog: Json[] = [];
  const released: string[] = [];
  const persisted: string[] = [];

  const hooks = createAgentHooks({
    interceptors: setup.interceptors,
    mode: setup.mode,
    composition: setup.composition,
    identityProvider: providerOf(setup.identityProvider),
    resolver: setup.resolver,
    approvalRedactor: redactorFor(setup.redactForApproval),
    agentId: 'ref-agent',
    framework: 'hookrelay-ctk',
    modelId: 'mock',
    tools: tools.map((t) => String(t.name)).sort(),
    streaming: setup.surface.streaming,
    persistence: setup.surface.persistence,
    toolSeamHostError: TOOL_SEAM_HOST_ERROR,
    persist: (entry) => {
      persisted.push(JSON.stringify(entry, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
    },
  });
  const run = hooks.startRun({
    input: { content: input.content ?? null, role: input.role as 'user' | 'system' | 'external' },
    onRelease: (text) => {
      released.push(text);
    },
  });

  let outcome: RunRecord['outcome'] = 'completed';
  let final: JsonValue = null;
  try {
    const admitted = await run.ready;
    let messages: Message[] = [{ role: admitted.role, content: admitted.content }];
    let answered = false;
    for (const step of modelScript) {
      const respond = step.respond as JsonObj;
      const response = await run.modelCall(messages, () => mockResponse(respond));
      messages = structuredClone(response.sent);
      if (response.toolCalls.length === 0) {
        final = response.content;
        answered = true;
        break;
      }
      for (const tc of response.toolCalls) {
        const result = await run.toolCall({ id: tc.id, name: tc.name, args: tc.args }, (args) => {
          toolLog.push({ name: tc.name, args: structuredClone(args) });
          return mockTool(tools, tc.name, args as JsonObj);
        });
        messages.push({ role: 'tool', content: result.content });
      }
      messages.push({ role: 'assistant', content: response.content ?? '' });
    }
    if (answered && final !== null) final = await run.output(final);
  } catch (err) {
    outcome = err instanceof InterceptionBlocked ? 'blocked' : 'error';
    final = null;
  }
  await run.end(outcome === 'completed' ? 'completed' : 'error');

  const records = JSON.parse(JSON.stringify(hooks.emitter.records)) as JsonObj[];
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
    released_output: released.join(''),
    persisted: persisted.join('\n'),
  };
}
