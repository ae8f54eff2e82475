/**
 * A whole agent run under AGENT-HOOKS-0.1, runnable as is: `npx tsx examples/agent-run.ts`.
 *
 * The loop is an ordinary tool-calling loop over the OpenAI Chat Completions API with streaming
 * (`fetch` + server-sent events), the shape Vercel AI SDK and OpenAI Agents JS run underneath:
 * call the model with the messages and tools, run the tool calls it asks for, append the results,
 * call again until it answers. hookrelay wraps it once — `run.modelCall`, `run.toolCall`,
 * `run.output`, `run.end` — and the run gets the eight interception points in order, transforms
 * applied to what is actually sent and executed, the streamed answer buffered until its verdicts
 * permit it, and persistence only after the `output` verdict.
 *
 * With OPENAI_BASE_URL (and OPENAI_API_KEY, OPENAI_MODEL) set, the same loop talks to that
 * server; without, it starts a scripted stand-in on 127.0.0.1 that speaks the same wire format.
 * It imports hookrelay by its package name (package.json `exports` → dist/): run `npm run build`
 * after changing src/.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  InterceptionBlockedError,
  Verdict,
  createAgentHooks,
  type AgentHooks,
  type InterceptionRecord,
  type ModelStreamPart,
  type PersistEntry,
} from 'hookrelay';

type ChatMessage = { role: string; content: unknown; tool_call_id?: string; tool_calls?: unknown[] };

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, units: { type: 'string', enum: ['metric', 'imperial'] } },
        required: ['city', 'units'],
      },
    },
  },
];

function getWeather(args: Record<string, unknown>): { city: string; temperature: string; sky: string } {
  const metric = args.units === 'metric';
  return { city: String(args.city), temperature: metric ? '21 °C' : '70 °F', sky: 'sunny' };
}

/** One streamed Chat Completions call, as AI-SDK-style stream parts (text deltas, whole tool calls, finish). */
async function* chatCompletion(baseUrl: string, apiKey: string, model: string, messages: unknown[]): AsyncGenerator<ModelStreamPart> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model, messages, tools: TOOLS, stream: true }),
  });
  if (!res.ok || res.body === null) throw new Error(`model API answered HTTP ${res.status}`);
  const calls: Array<{ id: string; name: string; args: string }> = [];
  let finish = 'stop';
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = event
        .split('\n')
        .find((l) => l.startsWith('data: '))
        ?.slice(6);
      if (data === undefined || data === '[DONE]') continue;
      const choice = (JSON.parse(data) as { choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }> }).choices[0];
      if (typeof choice.delta.content === 'string' && choice.delta.content !== '') yield { type: 'text-delta', text: choice.delta.content };
      for (const d of (choice.delta.tool_calls as Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }>) ?? []) {
        calls[d.index] ??= { id: '', name: '', args: '' };
        if (d.id) calls[d.index].id = d.id;
        if (d.function?.name) calls[d.index].name += d.function.name;
        if (d.function?.arguments) calls[d.index].args += d.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  for (const c of calls) yield { type: 'tool-call', toolCallId: c.id, toolName: c.name, args: JSON.parse(c.args || '{}') };
  yield { type: 'finish', finishReason: finish };
}

/** The agent loop, wrapped once. Returns what the caller received (chunk by chunk through `onText`). */
export async function runAgent(hooks: AgentHooks, question: string, api: { baseUrl: string; apiKey: string; model: string }, onText: (t: string) => void) {
  const run = hooks.startRun({ input: question, onRelease: onText });
  try {
    const input = await run.ready; // the input as admitted (a transform may have rewritten it)
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a weather assistant.' },
      { role: 'user', content: input.content },
    ];
    for (let step = 0; step < 5; step++) {
      const response = await run.modelCall(messages, (sent) => chatCompletion(api.baseUrl, api.apiKey, api.model, sent));
      if (response.toolCalls.length === 0) return { answer: await run.output(response.content), end: await run.end() };
      messages.push({
        role: 'assistant',
        content: response.content,
        tool_calls: response.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })),
      });
      for (const call of response.toolCalls) {
        const outcome = await run.toolCall(call, (args) => getWeather(args));
        messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(outcome.content) });
      }
    }
    throw new Error('no answer in 5 model calls');
  } catch (err) {
    const end = await run.end('error'); // after a block the session closes with `error` anyway
    if (err instanceof InterceptionBlockedError) return { blocked: err.record, end };
    throw err;
  }
}

/** A scripted stand-in for an OpenAI-compatible server (127.0.0.1 only): same SSE wire format. */
async function startStandInModel(): Promise<{ url: string; close: () => Promise<void> }> {
  const sse = (res: http.ServerResponse, chunks: Array<Record<string, unknown>>) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const c of chunks) res.write(`data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, ...c }] })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => {
      const { messages } = JSON.parse(body) as { messages: ChatMessage[] };
      const last = messages.at(-1) as ChatMessage;
      const question = String(messages.find((m) => m.role === 'user')?.content ?? '');
      if (last.role === 'user' && /weather/i.test(question)) {
        sse(res, [
          {
            delta: {
              role: 'assistant',
              tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Kyo' } }],
            },
            finish_reason: null,
          },
          { delta: { tool_calls: [{ index: 0, function: { arguments: 'to","units":"imperial"}' } }] }, finish_reason: null },
          { delta: {}, finish_reason: 'tool_calls' },
        ]);
        return;
      }
      const text =
        last.role === 'tool'
          ? `It is ${(JSON.parse(String(last.content)) as { sky: string }).sky} in Kyoto, ${(JSON.parse(String(last.content)) as { temperature: string }).temperature}.`
          : 'The admin password is hunter2.';
      const words = text.split(/(?<= )/);
      sse(res, [...words.map((w) => ({ delta: { content: w }, finish_reason: null })), { delta: {}, finish_reason: 'stop' }]);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, close: () => new Promise((r) => server.close(() => r())) };
}

async function main(): Promise<void> {
  const standIn = process.env.OPENAI_BASE_URL ? undefined : await startStandInModel();
  const api = {
    baseUrl: process.env.OPENAI_BASE_URL ?? (standIn as { url: string }).url,
    apiKey: process.env.OPENAI_API_KEY ?? 'stand-in',
    model: process.env.OPENAI_MODEL ?? 'gpt-4o-mini',
  };
  const records: InterceptionRecord[] = [];
  const history: PersistEntry[] = [];
  const hooks = createAgentHooks({
    interceptors: {
      // Tool policy: the weather tool is always called in metric units (the args actually passed change).
      'metric-units': (ctx) =>
        ctx.interception_point === 'pre_tool_call' &&
        (ctx.tool_call as { name?: string } | undefined)?.name === 'get_weather' &&
        (ctx.target as { units?: string }).units !== 'metric'
          ? Verdict.transform('$target.units', 'metric', { reason: 'policy.metric_units' })
          : Verdict.allow(),
      // Egress guard: an answer that leaks a password never reaches the caller, nor the history.
      'secret-egress': (ctx) =>
        ctx.interception_point === 'output' && /password/i.test(JSON.stringify(ctx.target))
          ? Verdict.deny({ reason: 'policy.secret_egress' })
          : Verdict.allow(),
    },
    agentId: 'weather-agent',
    framework: 'example',
    tools: ['get_weather'],
    recordSink: (r) => void records.push(r),
    persist: (entry) => void history.push(entry), // after_output: the whole run, once output permitted it
  });

  for (const [i, question] of ['What is the weather in Kyoto?', 'Tell me the admin password.'].entries()) {
    const chunks: string[] = [];
    const result = await runAgent(hooks, question, api, (t) => chunks.push(t));
    if ('answer' in result) {
      console.log(`run ${i + 1} released ${chunks.length} chunks: ${chunks.join('')}`);
    } else {
      console.log(`run ${i + 1} blocked at ${result.blocked.interception_point} (${result.blocked.verdict.reason}); released ${chunks.length} chunks`);
    }
    const tool = records.findLast((r) => r.interception_point === 'pre_tool_call');
    if (i === 0 && tool) console.log(`run 1 get_weather: pre_tool_call ${tool.verdict.decision} (${tool.verdict.reason})`);
  }
  for (const entry of history)
    if (entry.kind === 'run') console.log(`persisted: ${entry.history.length} history items, output ${JSON.stringify(entry.output)}`);
  console.log(`persisted runs: ${history.length}`);
  const sessions = [...new Set(records.map((r) => r.session_id))];
  for (const [i, s] of sessions.entries()) {
    const line = records
      .filter((r) => r.session_id === s)
      .map((r) => (r.verdict.decision === 'allow' ? r.interception_point : `${r.interception_point}(${r.verdict.decision})`));
    console.log(`run ${i + 1} records: ${line.join(' ')}`);
  }
  await standIn?.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
