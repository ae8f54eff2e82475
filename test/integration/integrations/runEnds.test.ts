/**
 * The integrations' sessions and run endings (issue 29 items 4 and 5), against the real framework
 * packages with their mock models and the real Postgres record sink:
 * - each run mints its own session `<operationId>/<uuid>` (as the run adapter does), so two
 *   bridges (or processes) running the same operation never collide on (session_id, sequence);
 * - an error in the user's loop outside the run's methods (a thrown `generateText`, a stream error
 *   reported through `onError`, a thrown or failed streamed Agents SDK run) ends the run `error`:
 *   agent_shutdown `error`, then `onError` and `onComplete` (`reason: 'error'`).
 */
import { Agent, run as agentsRun, setTracingDisabled } from '@openai/agents';
import { assistantMessage, modelError, ScriptedModel } from '@openai/agents-core/testing';
import { generateText, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentContext } from '../../../src/contract/agentHooks.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createAiSdkHooks } from '../../../src/integrations/aiSdk.ts';
import { createOpenAIAgentsHooks } from '../../../src/integrations/openaiAgents.ts';
import { createAgentHooks } from '../../../src/intercept/run/bundle.ts';
import { Verdict } from '../../../src/intercept/verdict.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createStoreRecordSink } from '../../../src/store/interceptionRecordSink.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { mockModel, textResult } from '../../support/aiSdkMock.ts';

let t: TestStore;
let n = 0;
const nextOp = (label: string) => `ends-${label}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  setTracingDisabled(true); // no trace export: nothing leaves 127.0.0.1
  t = await createTestStore('integ_ends');
});
afterAll(async () => {
  await t?.cleanup();
});

/** A bundle with its own Postgres record sink (its own sequence counters, as a second process would have). */
function storedBundle(framework: string, seen: AgentContext[] = []) {
  const sink = createStoreRecordSink(t.store.db);
  return createAgentHooks({
    interceptors: { allow: (ctx) => (seen.push(structuredClone(ctx)), Verdict.allow()) },
    recordSink: sink.sink,
    framework,
  });
}

const rowsOf = async (op: string) =>
  (
    await t.store.pool!.query<{ session_id: string; sequence: number; point: string }>(
      "select session_id, sequence, point from interception_records where session_id like $1 || '/%' order by session_id, sequence",
      [op],
    )
  ).rows;

const ANSWER_ONLY = ['agent_startup', 'input', 'pre_model_call', 'post_model_call', 'output', 'agent_shutdown'];

function lifecycle(dispatcher: HookDispatcher, op: string) {
  const events: Array<{ type: string; event: Record<string, unknown> }> = [];
  dispatcher.register(
    op,
    ['onError', 'onComplete'].map((type) => ({
      id: `h-${type}`,
      type,
      handler: (event: Record<string, unknown>) => void events.push({ type, event }),
    })) as never,
  );
  return events;
}

describe('AI-SDK / Agents-SDK sessions: one per run, stored without a duplicate key', () => {
  it('AI-SDK two bridges in one process run the same operation: two sessions <op>/<uuid>, both runs stored in Postgres, no sink failure', async () => {
    const op = nextOp('ai');
    const bundles = [storedBundle('ai-sdk'), storedBundle('ai-sdk')];
    const ids: string[] = [];
    for (const [i, hooks] of bundles.entries()) {
      const run = createAiSdkHooks({ hooks }).startRun({ input: `question ${i}`, operationId: op });
      ids.push(run.sessionId);
      await run.track(generateText({ ...(await run.settings({ model: mockModel({ generate: [textResult(`answer ${i}`)] }) })) }));
    }
    expect(bundles.map((b) => b.emitter.sinkFailures)).toEqual([0, 0]);
    expect(ids[0]).not.toBe(ids[1]);
    for (const id of ids) expect(id).toMatch(new RegExp(`^${op}/[0-9a-f-]{36}$`));
    const rows = await rowsOf(op);
    expect(rows).toHaveLength(12);
    for (const id of ids) expect(rows.filter((r) => r.session_id === id).map((r) => r.point)).toEqual(ANSWER_ONLY);
  });

  it('Agents-SDK two bridges and a second run of the same operation: three sessions, every record stored, no sink failure', async () => {
    const op = nextOp('agents');
    const bundles = [storedBundle('openai-agents'), storedBundle('openai-agents')];
    const ids: string[] = [];
    for (const hooks of [bundles[0]!, bundles[1]!, bundles[0]!]) {
      const r = createOpenAIAgentsHooks({ hooks }).startRun({ input: 'q', operationId: op });
      ids.push(r.sessionId);
      const { agent, input } = await r.prepare(new Agent({ name: 'a', model: new ScriptedModel([[assistantMessage('done')]]) }));
      await r.track(agentsRun(agent, input));
    }
    expect(bundles.map((b) => b.emitter.sinkFailures)).toEqual([0, 0]);
    expect(new Set(ids).size).toBe(3);
    const rows = await rowsOf(op);
    expect(rows).toHaveLength(18);
    for (const id of ids) expect(rows.filter((r) => r.session_id === id).map((r) => r.point)).toEqual(ANSWER_ONLY);
  });
});

describe('AI-SDK / Agents-SDK: an error in the user loop ends the run error', () => {
  it('AI-SDK a thrown generateText (the model fails): agent_shutdown error, onError with the message, onComplete reason error', async () => {
    const op = nextOp('ai-throw');
    const seen: AgentContext[] = [];
    const dispatcher = new HookDispatcher({ logger: silentLogger(), env: {} });
    const events = lifecycle(dispatcher, op);
    const model = mockModel({});
    model.doGenerate = async () => {
      throw new Error('provider 500');
    };
    const run = createAiSdkHooks({ hooks: storedBundle('ai-sdk', seen), dispatcher }).startRun({ input: 'q', operationId: op });
    const err = await run.track(generateText({ ...(await run.settings({ model })), maxRetries: 0 })).catch((e: unknown) => e);
    expect((err as Error).message).toContain('provider 500');
    expect(seen.at(-1)).toMatchObject({ interception_point: 'agent_shutdown', summary: { reason: 'error' } });
    expect(events.map((e) => e.type)).toEqual(['onError', 'onComplete']);
    expect(events[0]!.event.errorMessage).toContain('provider 500');
    expect(events[1]!.event).toMatchObject({ operationId: op, reason: 'error', status: 'error' });
    expect((await rowsOf(op)).map((r) => r.point)).toEqual(['agent_startup', 'input', 'pre_model_call', 'agent_shutdown']); // a model call that threw has no post_model_call
  });

  it('AI-SDK streamText with the settings: a model stream that fails reaches onError and the run ends error (no track)', async () => {
    const op = nextOp('ai-stream');
    const seen: AgentContext[] = [];
    const dispatcher = new HookDispatcher({ logger: silentLogger(), env: {} });
    const events = lifecycle(dispatcher, op);
    const model = mockModel({});
    model.doStream = async () => {
      throw new Error('stream refused');
    };
    const run = createAiSdkHooks({ hooks: storedBundle('ai-sdk', seen), dispatcher }).startRun({ input: 'q', operationId: op });
    const result = streamText({ ...(await run.settings({ model })), maxRetries: 0 });
    const chunks: string[] = [];
    for await (const c of result.textStream) chunks.push(c);
    // onError is called by the SDK; the run ends once its callbacks ran (bounded wait, no clock).
    for (let i = 0; i < 200 && events.length < 2; i++) await new Promise((r) => setImmediate(r));
    expect(chunks).toEqual([]);
    expect(seen.at(-1)).toMatchObject({ interception_point: 'agent_shutdown', summary: { reason: 'error' } });
    expect(events.map((e) => e.type)).toEqual(['onError', 'onComplete']);
    expect(events[1]!.event).toMatchObject({ reason: 'error' });
  });

  it('Agents-SDK a thrown run (the model fails): agent_shutdown error, onError then onComplete reason error', async () => {
    const op = nextOp('agents-throw');
    const seen: AgentContext[] = [];
    const dispatcher = new HookDispatcher({ logger: silentLogger(), env: {} });
    const events = lifecycle(dispatcher, op);
    const r = createOpenAIAgentsHooks({ hooks: storedBundle('openai-agents', seen), dispatcher }).startRun({ input: 'q', operationId: op });
    const { agent, input } = await r.prepare(new Agent({ name: 'a', model: new ScriptedModel([modelError(new Error('provider 500'))]) }));
    const err = await r.track(agentsRun(agent, input)).catch((e: unknown) => e);
    expect(String((err as Error).message)).toContain('provider 500');
    expect(seen.at(-1)).toMatchObject({ interception_point: 'agent_shutdown', summary: { reason: 'error' } });
    expect(events.map((e) => e.type)).toEqual(['onError', 'onComplete']);
    expect(events[0]!.event.errorMessage).toContain('provider 500');
    expect(events[1]!.event).toMatchObject({ reason: 'error', status: 'error' });
  });

  it('Agents-SDK a streamed run: track waits for the stream to complete, and a stream that fails ends the run error, never completed', async () => {
    const op = nextOp('agents-stream');
    const seen: AgentContext[] = [];
    const dispatcher = new HookDispatcher({ logger: silentLogger(), env: {} });
    const events = lifecycle(dispatcher, op);
    const r = createOpenAIAgentsHooks({ hooks: storedBundle('openai-agents', seen), dispatcher }).startRun({ input: 'q', operationId: op });
    const { agent, input } = await r.prepare(new Agent({ name: 'a', model: new ScriptedModel([modelError(new Error('stream 500'))]) }));
    const tracked = r.track(agentsRun(agent, input, { stream: true }));
    const err = await tracked.then(
      async (result) => {
        for await (const _ of result) void _; // the caller consumes the stream
        return result.error;
      },
      (e: unknown) => e,
    );
    expect(String((err as Error | undefined)?.message)).toContain('stream 500');
    expect(seen.at(-1)).toMatchObject({ interception_point: 'agent_shutdown', summary: { reason: 'error' } });
    expect(events.map((e) => e.type)).toEqual(['onError', 'onComplete']);
    expect(events[1]!.event).toMatchObject({ reason: 'error' });

    // And a streamed run that succeeds ends completed with the answer, after the stream finished.
    const op2 = nextOp('agents-stream-ok');
    const events2 = lifecycle(dispatcher, op2);
    const r2 = createOpenAIAgentsHooks({ hooks: storedBundle('openai-agents'), dispatcher }).startRun({ input: 'q', operationId: op2 });
    const p2 = await r2.prepare(new Agent({ name: 'a', model: new ScriptedModel([[assistantMessage('streamed answer')]]) }));
    const result2 = await r2.track(agentsRun(p2.agent, p2.input, { stream: true }));
    expect(result2.finalOutput).toBe('streamed answer');
    expect(events2.map((e) => e.type)).toEqual(['onComplete']);
    expect(events2[0]!.event).toMatchObject({ reason: 'done', status: 'completed', lastAssistantContent: 'streamed answer' });
  });
});
