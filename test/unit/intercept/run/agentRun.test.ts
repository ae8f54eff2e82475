/**
 * The AGENT-HOOKS-0.1 run adapter (issue 15, seed 003): `createAgentHooks().startRun()` wraps one
 * agent run — the eight points in order, transforms applied to the native values the loop uses,
 * buffered and incremental streaming, verdict-gated persistence, one installation per agent.
 * Interceptors are in-process functions; the model and tools are scripted.
 */
import { describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../../src/dispatch/hookDispatcher.ts';
import {
  AgentContextBuilder,
  AgentHooksInstallError,
  AgentRunStateError,
  InterceptionBlocked,
  InterceptionEmitter,
  ToolError,
  Verdict,
  createAgentHooks,
  type AgentContext,
  type AgentHooksOptions,
  type Interceptor,
  type InterceptionRecord,
  type ModelStreamPart,
  type PersistEntry,
} from '../../../../src/intercept/index.ts';
import { silentLogger } from '../../../../src/observability/logger.ts';

type Seen = { point: string; sequence: number; session: string; target: unknown };

/** Records every context an interceptor saw, then answers with `decide` (default allow). */
function observer(decide: (ctx: AgentContext) => Verdict = () => Verdict.allow()) {
  const seen: Seen[] = [];
  const interceptor: Interceptor = (ctx) => {
    seen.push({ point: ctx.interception_point, sequence: ctx.sequence, session: ctx.session.id, target: structuredClone(ctx.target) });
    return decide(ctx);
  };
  return { seen, interceptor, points: () => seen.map((s) => s.point) };
}

function bundle(decide?: (ctx: AgentContext) => Verdict, extra: Partial<AgentHooksOptions> = {}) {
  const o = observer(decide);
  const records: InterceptionRecord[] = [];
  const persisted: PersistEntry[] = [];
  const hooks = createAgentHooks({
    interceptors: [o.interceptor],
    agentId: 'support-agent',
    framework: 'test-app',
    tools: ['search'],
    recordSink: (r) => {
      records.push(r);
    },
    persist: (e) => {
      persisted.push(structuredClone(e));
    },
    ...extra,
  });
  return { hooks, ...o, records, persisted };
}

async function* streamOf(chunks: string[], opts: { truncated?: boolean; finish?: string } = {}): AsyncGenerator<ModelStreamPart> {
  for (const c of chunks) yield { type: 'text-delta', text: c };
  if (opts.truncated) throw new Error('connection reset');
  yield { type: 'finish', finishReason: opts.finish ?? 'stop' };
}

const TOOL_CALL = { id: 'tc-1', name: 'search', args: { q: 'weather' } };

/** The loop every test drives: one tool round, then the answer. */
async function toolUsingRun(
  hooks: ReturnType<typeof bundle>['hooks'],
  answer: () => ReturnType<typeof streamOf> | { content: string },
  released: string[] = [],
) {
  const run = hooks.startRun({ input: 'what is the weather?', onRelease: (t) => void released.push(t) });
  try {
    const input = await run.ready;
    const messages = [{ role: 'user', content: input.content }];
    const first = await run.modelCall(messages, () => ({ content: null, toolCalls: [TOOL_CALL] }));
    const outcome = await run.toolCall(first.toolCalls[0], (args) => ({ forecast: `sunny for ${String(args.q)}` }));
    messages.push({ role: 'assistant', content: '' }, { role: 'tool', content: JSON.stringify(outcome.content) });
    const second = await run.modelCall(messages, answer);
    const output = await run.output(second.content);
    const end = await run.end();
    return { run, output, end, outcome };
  } finally {
    await run.end(); // idempotent: closes the session after a block too
  }
}

describe('run adapter: the eight points (seed 003)', () => {
  it('a tool-using run emits the eight points in the seed order with sequences 0…9 in one session', async () => {
    const b = bundle();
    const { output, end } = await toolUsingRun(b.hooks, () => ({ content: 'It is sunny.' }));
    expect(b.points()).toEqual([
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call',
      'post_tool_call',
      'pre_model_call',
      'post_model_call',
      'output',
      'agent_shutdown',
    ]);
    expect(b.seen.map((s) => s.sequence)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(new Set(b.seen.map((s) => s.session)).size).toBe(1);
    expect(b.records.map((r) => r.interception_point)).toEqual(b.points());
    expect(b.seen[0].target).toEqual({ tools_registered: ['search'] });
    expect(b.seen[9].target).toEqual({ reason: 'completed' });
    expect(output).toBe('It is sunny.');
    expect(end).toEqual({ outcome: 'completed', released: 'It is sunny.' });
  });

  it('transforms rewrite the values the run actually uses: input, messages sent, tool args, tool result, response, final content', async () => {
    const b = bundle((ctx) => {
      switch (ctx.interception_point) {
        case 'input':
          return Verdict.transform('$target.content', 'weather in Kyoto?');
        case 'pre_model_call':
          return Verdict.transform('$target[0].content', 'REDACTED-PROMPT');
        case 'pre_tool_call':
          return Verdict.transform('$target.q', 'weather safe:on');
        case 'post_tool_call':
          return Verdict.transform('$target.forecast', 'scrubbed');
        case 'post_model_call':
          return ctx.sequence > 5 ? Verdict.transform('$target.content', 'model says: sunny') : Verdict.allow();
        case 'output':
          return Verdict.transform('$target.content', 'Final: sunny');
        default:
          return Verdict.allow();
      }
    });
    const run = b.hooks.startRun({ input: 'weather?' });
    expect(await run.ready).toEqual({ content: 'weather in Kyoto?', role: 'user' });
    const sentTo: unknown[] = [];
    const first = await run.modelCall([{ role: 'user', content: 'weather in Kyoto?' }], (messages) => {
      sentTo.push(messages);
      return { toolCalls: [TOOL_CALL] };
    });
    expect(sentTo[0]).toEqual([{ role: 'user', content: 'REDACTED-PROMPT' }]);
    expect(first.sent).toEqual([{ role: 'user', content: 'REDACTED-PROMPT' }]);
    const argsSeen: unknown[] = [];
    const outcome = await run.toolCall(first.toolCalls[0], (args) => {
      argsSeen.push(args);
      return { forecast: 'RAW-TOOL-OUTPUT' };
    });
    expect(argsSeen).toEqual([{ q: 'weather safe:on' }]);
    expect(outcome).toMatchObject({ status: 'completed', args: { q: 'weather safe:on' }, result: { forecast: 'scrubbed' }, content: { forecast: 'scrubbed' } });
    // post_tool_call echoes the args as sent.
    expect(b.seen.find((s) => s.point === 'post_tool_call')?.target).toEqual({ forecast: 'RAW-TOOL-OUTPUT' });
    const second = await run.modelCall([{ role: 'user', content: 'again' }], () => ({ content: 'raw model text' }));
    expect(second.content).toBe('model says: sunny');
    expect(await run.output(second.content)).toBe('Final: sunny');
    await run.end();
    expect(b.persisted).toHaveLength(1);
    expect(JSON.stringify(b.persisted)).not.toContain('RAW-TOOL-OUTPUT');
    expect(JSON.stringify(b.persisted)).not.toContain('raw model text');
  });

  it('a transform the run cannot use fails closed: tool args turned into a string → transform_invalid, the tool never runs', async () => {
    const b = bundle((ctx) => (ctx.interception_point === 'pre_tool_call' ? Verdict.transform('$target', 'rm -rf /') : Verdict.allow()));
    const run = b.hooks.startRun({ input: 'go' });
    await run.ready;
    let ran = false;
    const err = await run
      .toolCall(TOOL_CALL, () => {
        ran = true;
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InterceptionBlocked);
    expect((err as InterceptionBlocked).record.verdict.reason).toBe('host_error:transform_invalid');
    expect(ran).toBe(false);
    // terminate (the default): the run is closed to every later point.
    await expect(run.modelCall([], () => ({ content: 'x' }))).rejects.toBeInstanceOf(InterceptionBlocked);
    expect(await run.end()).toMatchObject({ outcome: 'blocked' });
    expect(b.points().at(-1)).toBe('agent_shutdown');
    expect(b.seen.at(-1)?.target).toEqual({ reason: 'error' });
  });

  it('a policy deny at the tool seam hands the model a control error without the payload and the loop goes on', async () => {
    const b = bundle((ctx) =>
      ctx.interception_point === 'post_tool_call' ? Verdict.deny({ reason: 'policy.tainted', message: 'result withheld' }) : Verdict.allow(),
    );
    const { outcome, end } = await toolUsingRun(b.hooks, () => ({ content: 'done' }));
    expect(outcome).toEqual({
      status: 'blocked',
      at: 'post_tool_call',
      reason: 'policy.tainted',
      message: 'result withheld',
      content: { error: 'tool call blocked by policy', reason: 'policy.tainted', message: 'result withheld' },
    });
    expect(JSON.stringify(outcome)).not.toContain('sunny');
    expect(end.outcome).toBe('completed');
  });

  it('a tool that throws is a tool failure the policy sees (is_error); a ToolError carries its structured result', async () => {
    const b = bundle();
    const run = b.hooks.startRun({ input: 'go' });
    await run.ready;
    const plain = await run.toolCall(TOOL_CALL, () => {
      throw new Error('upstream 503');
    });
    const structured = await run.toolCall(TOOL_CALL, () => {
      throw new ToolError({ code: 'not_found' });
    });
    expect(plain).toMatchObject({ status: 'completed', isError: true, result: 'upstream 503' });
    expect(structured).toMatchObject({ status: 'completed', isError: true, result: { code: 'not_found' } });
    await run.end();
  });

  it('an input deny blocks before any model call; a startup deny is followed only by agent_shutdown(error)', async () => {
    const denyInput = bundle((ctx) => (ctx.interception_point === 'input' ? Verdict.deny('policy.input') : Verdict.allow()));
    const run = denyInput.hooks.startRun({ input: 'bad' });
    await expect(run.ready).rejects.toBeInstanceOf(InterceptionBlocked);
    await expect(run.modelCall([], () => ({ content: 'x' }))).rejects.toBeInstanceOf(InterceptionBlocked);
    await run.end();
    expect(denyInput.points()).toEqual(['agent_startup', 'input', 'agent_shutdown']);
    expect(denyInput.seen.at(-1)?.target).toEqual({ reason: 'error' });

    const denyStartup = bundle((ctx) => (ctx.interception_point === 'agent_startup' ? Verdict.deny('policy.startup') : Verdict.allow()));
    const run2 = denyStartup.hooks.startRun({ input: 'hi' });
    await expect(run2.ready).rejects.toMatchObject({ record: { verdict: { reason: 'policy.startup' } } });
    await run2.end('completed');
    expect(denyStartup.points()).toEqual(['agent_startup', 'agent_shutdown']);
    expect(denyStartup.seen.at(-1)?.target).toEqual({ reason: 'error' });
  });

  it('an integer beyond 2^53 in the model’s tool args is rejected as context_invalid, never rounded, and the tool never runs (vectors 090/091)', async () => {
    const b = bundle();
    const run = b.hooks.startRun({ input: 'transfer' });
    await run.ready;
    await expect(
      run.modelCall([], () => ({ toolCalls: [{ id: 't', name: 'wire', args: { id: 9007199254740993n as unknown as number } }] })),
    ).rejects.toMatchObject({
      record: { interception_point: 'post_model_call', verdict: { reason: 'host_error:context_invalid' }, input_identity: null },
    });
    expect(b.points()).not.toContain('post_model_call'); // rejected before any interceptor saw it
    expect(b.records.at(-1)?.verdict.message).toMatch(/2\^53/);
    await run.end();
  });

  it('output(response) with the result modelCall returned judges its content', async () => {
    const b = bundle();
    const released: string[] = [];
    const run = b.hooks.startRun({ input: 'hi', onRelease: (t) => void released.push(t) });
    const r = await run.modelCall([{ role: 'user', content: 'hi' }], () => ({ content: 'hello there' }));
    expect(await run.output(r)).toBe('hello there');
    expect(b.seen.find((s) => s.point === 'output')?.target).toEqual({ content: 'hello there' });
    expect(released).toEqual(['hello there']);
    await run.end();
  });

  it('misuse is a clear error: output twice, any call after end()', async () => {
    const b = bundle();
    const run = b.hooks.startRun({ input: 'hi' });
    await run.output('a');
    await expect(run.output('b')).rejects.toBeInstanceOf(AgentRunStateError);
    await run.end();
    await expect(run.modelCall([], () => ({ content: 'x' }))).rejects.toThrow(/run has ended/);
    expect(() => createAgentHooks({} as AgentHooksOptions)).toThrow(/needs `interceptors`/);
    expect(() => createAgentHooks({ interceptors: [], streaming: 'chunked' as 'buffered' })).toThrow(/streaming must be one of/);
    expect(() => createAgentHooks({ interceptors: [], framework: 'My App' })).toThrow(/framework must match/);
  });
});

describe('run adapter: buffered streaming', () => {
  it('a streamed answer reaches the caller only after post_model_call and output permitted it, as the original chunks', async () => {
    const released: string[] = [];
    const order: string[] = [];
    const b = bundle((ctx) => {
      order.push(`${ctx.interception_point}@${released.length}`);
      return Verdict.allow();
    });
    await toolUsingRun(b.hooks, () => streamOf(['It ', 'is ', 'sunny.']), released);
    expect(released).toEqual(['It ', 'is ', 'sunny.']);
    // Nothing was released before the output verdict: every emission saw zero released chunks.
    expect(order.filter((o) => o.startsWith('post_model_call') || o.startsWith('output'))).toEqual(['post_model_call@0', 'post_model_call@0', 'output@0']);
  });

  it('a denied streamed answer releases zero chunks — at post_model_call and at output', async () => {
    for (const at of ['post_model_call', 'output'] as const) {
      const released: string[] = [];
      const b = bundle((ctx) =>
        ctx.interception_point === at && JSON.stringify(ctx.target).includes('SECRET') ? Verdict.deny('policy.secret') : Verdict.allow(),
      );
      const err = await toolUsingRun(b.hooks, () => streamOf(['the code is ', 'SECRET-42', ' ok']), released).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InterceptionBlocked);
      expect(released).toEqual([]);
      expect(b.persisted).toEqual([]);
    }
  });

  it('an output transform is what the caller receives (one chunk, the transformed content)', async () => {
    const released: string[] = [];
    const b = bundle((ctx) => (ctx.interception_point === 'output' ? Verdict.transform('$target.content', '[removed by policy]') : Verdict.allow()));
    const { output } = await toolUsingRun(b.hooks, () => streamOf(['SECRET ', 'answer']), released);
    expect(output).toBe('[removed by policy]');
    expect(released).toEqual(['[removed by policy]']);
  });

  it('a stream that dies mid-way fails closed: streaming_unsupported over what arrived, nothing released, nothing persisted', async () => {
    const released: string[] = [];
    const b = bundle();
    const err = await toolUsingRun(b.hooks, () => streamOf(['partial ', 'answ'], { truncated: true }), released).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InterceptionBlocked);
    const last = b.records.filter((r) => r.interception_point === 'post_model_call').at(-1);
    expect(last?.verdict).toMatchObject({ decision: 'deny', reason: 'host_error:streaming_unsupported' });
    expect(released).toEqual([]);
    expect(b.persisted).toEqual([]);
  });
});

describe('run adapter: incremental streaming (the exception to buffering, opt-in)', () => {
  it('segments are released under covering verdicts; a deny withholds the denied segment and everything behind it and stops the stream', async () => {
    const released: string[] = [];
    let consumed = 0;
    const b = bundle(
      (ctx) =>
        ctx.interception_point === 'post_model_call' && JSON.stringify(ctx.target).includes('SECRET') ? Verdict.deny('policy.secret') : Verdict.allow(),
      { streaming: 'incremental', persistence: 'per_model_call' },
    );
    const run = b.hooks.startRun({ input: 'go', onRelease: (t) => void released.push(t) });
    async function* model(): AsyncGenerator<ModelStreamPart> {
      for (const c of ['public, ', 'more public, ', 'SECRET', ' tail', ' never read']) {
        consumed++;
        yield c;
      }
    }
    await expect(run.modelCall([{ role: 'user', content: 'go' }], () => model())).rejects.toBeInstanceOf(InterceptionBlocked);
    expect(released).toEqual(['public, ', 'more public, ']);
    expect(consumed).toBe(4); // the deny stopped consumption: the fifth chunk was never pulled
    const posts = b.seen.filter((s) => s.point === 'post_model_call').map((s) => s.target as { content: string; finish_reason: string });
    expect(posts.map((p) => p.finish_reason)).toEqual(['incremental', 'incremental', 'incremental']);
    expect(posts.map((p) => p.content)).toEqual(['public, ', 'public, more public, ', 'public, more public, SECRET']);
    expect(b.persisted).toEqual([]); // a denied model call is never persisted
    await run.end();
  });

  it('a fully permitted stream: each segment released on its verdict, the final one carries the finish reason, output releases no duplicate', async () => {
    const released: string[] = [];
    const b = bundle(undefined, { streaming: 'incremental' });
    const run = b.hooks.startRun({ input: 'go', onRelease: (t) => void released.push(t) });
    const r = await run.modelCall([], () => streamOf(['the quick ', 'brown fox']));
    expect(r.content).toBe('the quick brown fox');
    expect(released).toEqual(['the quick ', 'brown fox']);
    expect(await run.output(r.content)).toBe('the quick brown fox');
    expect(released.join('')).toBe('the quick brown fox');
    const finishes = b.seen.filter((s) => s.point === 'post_model_call').map((s) => (s.target as { finish_reason: string }).finish_reason);
    expect(finishes).toEqual(['incremental', 'stop']);
    await run.end();
  });

  it('a segment transform that would rewrite already released text fails closed', async () => {
    const released: string[] = [];
    const b = bundle(
      (ctx) =>
        ctx.interception_point === 'post_model_call' && (ctx.target as { content: string }).content.length > 6
          ? Verdict.transform('$target.content', 'rewritten')
          : Verdict.allow(),
      { streaming: 'incremental' },
    );
    const run = b.hooks.startRun({ input: 'go', onRelease: (t) => void released.push(t) });
    await expect(run.modelCall([], () => streamOf(['hello ', 'world', '!']))).rejects.toMatchObject({
      record: { verdict: { reason: 'host_error:transform_invalid' } },
    });
    expect(released).toEqual(['hello ']);
    await run.end();
  });
});

describe('run adapter: verdict-gated persistence', () => {
  it('after_output (default): persist runs once, after the output verdict, with the output as transformed; a denied output persists nothing', async () => {
    const b = bundle((ctx) => (ctx.interception_point === 'output' ? Verdict.transform('$target.content', 'clean answer') : Verdict.allow()));
    const recordsAtPersist: number[] = [];
    const hooks = createAgentHooks({
      interceptors: [b.interceptor],
      recordSink: (r) => void b.records.push(r),
      persist: (e) => {
        recordsAtPersist.push(b.records.length);
        b.persisted.push(structuredClone(e));
      },
    });
    await toolUsingRun(hooks, () => ({ content: 'raw answer' }));
    expect(b.persisted).toHaveLength(1);
    const entry = b.persisted[0];
    expect(entry).toMatchObject({ kind: 'run', input: { content: 'what is the weather?', role: 'user' }, output: 'clean answer' });
    expect(entry.kind === 'run' && entry.history.map((h) => h.role)).toEqual(['assistant', 'tool', 'assistant']);
    // Persisted only after the output record existed (records 0..8 = startup … output).
    expect(recordsAtPersist).toEqual([9]);
    expect(b.records[8].interception_point).toBe('output');

    const denied = bundle((ctx) => (ctx.interception_point === 'output' ? Verdict.deny('policy.egress') : Verdict.allow()));
    await expect(toolUsingRun(denied.hooks, () => ({ content: 'secret' }))).rejects.toBeInstanceOf(InterceptionBlocked);
    expect(denied.persisted).toEqual([]);
  });

  it('per_model_call: each exchange persists right after its post_model_call permit; a later output deny does not roll them back', async () => {
    const timeline: string[] = [];
    const hooks = createAgentHooks({
      interceptors: [
        (ctx) => {
          timeline.push(ctx.interception_point);
          return ctx.interception_point === 'output' ? Verdict.deny('policy.egress') : Verdict.allow();
        },
      ],
      persistence: 'per_model_call',
      persist: (e) => void timeline.push(`persist:${e.kind}`),
    });
    await expect(toolUsingRun(hooks, () => ({ content: 'answer' }))).rejects.toBeInstanceOf(InterceptionBlocked);
    expect(timeline).toEqual([
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'persist:model_call',
      'pre_tool_call',
      'post_tool_call',
      'pre_model_call',
      'post_model_call',
      'persist:model_call',
      'output', // denied: no persist:output follows
      'agent_shutdown',
    ]);
  });
});

describe('run adapter: one installation per agent', () => {
  it('a second bundle on one dispatcher is refused; so is a bundle on a dispatcher built with its own emitter', () => {
    const dispatcher = new HookDispatcher({ logger: silentLogger() });
    createAgentHooks({ interceptors: [() => Verdict.allow()], dispatcher });
    expect(() => createAgentHooks({ interceptors: [() => Verdict.allow()], dispatcher })).toThrow(AgentHooksInstallError);
    const withEmitter = new HookDispatcher({
      logger: silentLogger(),
      interceptionPoints: 'tool-seam',
      emitter: new InterceptionEmitter({ interceptors: [() => Verdict.allow()] }),
    });
    expect(() => createAgentHooks({ interceptors: [() => Verdict.allow()], dispatcher: withEmitter })).toThrow(/already has an AGENT-HOOKS-0.1 emitter/);
  });

  it('a second bundle on one application session is refused', () => {
    const session = new AgentContextBuilder({ agentId: 'a', framework: 'app', sessionId: 'conversation-1' });
    createAgentHooks({ interceptors: [() => Verdict.allow()], session });
    expect(() => createAgentHooks({ interceptors: [() => Verdict.allow()], session })).toThrow(AgentHooksInstallError);
  });

  it('a nested agent must bring its own bundle: the parent bundle is refused inside a tool, a sub-agent bundle runs as its own session', async () => {
    const parent = bundle();
    const child = bundle();
    const run = parent.hooks.startRun({ input: 'delegate' });
    await run.ready;
    const refused = await run.toolCall(TOOL_CALL, () => parent.hooks.startRun({ input: 'sub-task' })).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AgentHooksInstallError);
    const ok = await run.toolCall(TOOL_CALL, async () => {
      const sub = child.hooks.startRun({ input: 'sub-task' });
      const answer = await sub.output('sub answer');
      await sub.end();
      return answer;
    });
    expect(ok).toMatchObject({ status: 'completed', result: 'sub answer' });
    await run.end();
    expect(child.points()).toEqual(['agent_startup', 'input', 'output', 'agent_shutdown']);
    expect(new Set(child.seen.map((s) => s.session))).not.toContain(parent.seen[0].session);
  });

  it('two runs of one session at once are refused; sequential runs are fine', async () => {
    const session = new AgentContextBuilder({ agentId: 'a', framework: 'app', sessionId: 'conversation-2' });
    const b = bundle(undefined, { session });
    const first = b.hooks.startRun({ input: 'one' });
    expect(() => b.hooks.startRun({ input: 'two' })).toThrow(AgentRunStateError);
    await first.end();
    await b.hooks.startRun({ input: 'two' }).end();
  });
});

describe('run adapter: an application-owned session across runs (seed 003 …_from_emitter)', () => {
  it('two runs join one session: the application emits startup and shutdown, sequences strictly increase across both runs', async () => {
    const o = observer();
    const emitter = new InterceptionEmitter({ interceptors: [o.interceptor] });
    const session = new AgentContextBuilder({ agentId: 'support-agent', framework: 'app', sessionId: 'conversation-42' });
    const hooks = createAgentHooks({ emitter, session });
    await emitter.emit(session.agentStartup({ toolsRegistered: [] }));
    for (const turn of ['First turn', 'Second turn']) {
      const run = hooks.startRun({ input: turn });
      const r = await run.modelCall([{ role: 'user', content: turn }], () => ({ content: `re: ${turn}` }));
      await run.output(r.content);
      await run.end();
    }
    await emitter.emit(session.agentShutdown({ reason: 'completed' }));
    expect(o.points()).toEqual([
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'output',
      'input',
      'pre_model_call',
      'post_model_call',
      'output',
      'agent_shutdown',
    ]);
    const seq = o.seen.map((s) => s.sequence);
    expect(seq.every((n, i) => i === 0 || n > seq[i - 1])).toBe(true);
    expect(new Set(o.seen.map((s) => s.session))).toEqual(new Set(['conversation-42']));
  });

  it('installed on a dispatcher, two runs of one operation in turn: each run’s evaluated tool calls join that run’s own session', async () => {
    const o = observer();
    const dispatcher = new HookDispatcher({ logger: silentLogger() });
    const hooks = createAgentHooks({ interceptors: [o.interceptor], dispatcher });
    const call = (id: string) => ({
      toolCallId: id,
      assistantMessageId: 'm',
      identifier: 'search',
      apiName: 'web',
      args: { q: id },
      callIndex: 0,
      stepIndex: 0,
      operationId: 'op-9',
      executor: 'server' as const,
    });
    for (const sessionId of ['turn-1', 'turn-2']) {
      const run = hooks.startRun({ input: sessionId, operationId: 'op-9', sessionId });
      await run.ready;
      if (sessionId === 'turn-1') dispatcher.register('op-9', []); // after startRun, as documented
      expect(await dispatcher.evaluateToolCall('op-9', call(sessionId))).toMatchObject({ status: 'allow' });
      await run.end();
    }
    dispatcher.unregister('op-9');
    await dispatcher.close();
    const tools = o.seen.filter((s) => s.point === 'pre_tool_call');
    expect(tools.map((t) => t.session)).toEqual(['turn-1', 'turn-2']);
    expect(tools.map((t) => t.sequence)).toEqual([2, 2]); // startup 0, input 1, the tool call 2 — in each run's session
  });

  it('installed on a dispatcher, the tool calls the dispatcher evaluates for a run’s operation join the run’s session', async () => {
    const o = observer((ctx) => (ctx.interception_point === 'pre_tool_call' ? Verdict.transform('$target.q', 'safe') : Verdict.allow()));
    const dispatcher = new HookDispatcher({ logger: silentLogger() });
    const hooks = createAgentHooks({ interceptors: [o.interceptor], dispatcher });
    const run = hooks.startRun({ input: 'search', operationId: 'op-7' });
    await run.ready;
    dispatcher.register('op-7', []);
    const decision = await dispatcher.evaluateToolCall('op-7', {
      toolCallId: 'call-1',
      assistantMessageId: 'm',
      identifier: 'search',
      apiName: 'web',
      args: { q: 'unsafe' },
      callIndex: 0,
      stepIndex: 0,
      operationId: 'op-7',
      executor: 'server',
    });
    expect(decision).toEqual({ status: 'allow', args: { q: 'safe' } });
    await run.output('done');
    await run.end();
    dispatcher.unregister('op-7');
    await dispatcher.close();
    expect(o.points()).toEqual(['agent_startup', 'input', 'pre_tool_call', 'output', 'agent_shutdown']);
    // One session, minted for this run of op-7 (`op-7/<uuid>`): the dispatcher's tool point joined it.
    expect(new Set(o.seen.map((s) => s.session))).toEqual(new Set([run.sessionId]));
    expect(run.sessionId).toMatch(/^op-7\/[0-9a-f-]{36}$/);
    expect(o.seen.map((s) => s.sequence)).toEqual([0, 1, 2, 3, 4]);
  });
});
