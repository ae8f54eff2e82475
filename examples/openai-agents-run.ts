/**
 * An OpenAI Agents SDK run wrapped once by `hookrelay/openai-agents`, runnable as is:
 *
 *   DATABASE_URL=… REDIS_URL=… NOTIFY_URL=https://… npx tsx examples/openai-agents-run.ts
 *   (and `hookrelay worker` with the same DATABASE_URL / REDIS_URL delivers the webhook)
 *
 * One `run()` of an agent with two function tools, on the SDK's scripted test model
 * (`@openai/agents/testing`: no network, no API key). What it shows:
 * - a policy webhook (`createRemoteInterceptor`) denying the `send_email` tool call: the model gets
 *   `{"error":"tool call blocked by policy","reason":…}` as the tool output, the tool never runs;
 * - a transform redacting the `apiKey` from the `get_weather` result before the model sees it;
 * - an `onComplete` webhook enqueued by a queue-mode dispatcher and delivered by the worker;
 * - every interception record stored in Postgres (`createStoreRecordSink`).
 *
 * The policy service is POLICY_URL, or a stand-in this example starts on 127.0.0.1. The queue is
 * HOOKRELAY_QUEUE (default `hookrelay`); OPERATION_ID names the run. It imports hookrelay by its
 * package name (package.json `exports` → dist/): run `npm run build` after changing src/.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { Agent, run, setTracingDisabled, tool } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { FetchTransport, HookDispatcher, Verdict, createAgentHooks, createRemoteInterceptor, type InterceptionRecord } from 'hookrelay';
import { createOpenAIAgentsHooks } from 'hookrelay/openai-agents';
import { createHookProducer } from 'hookrelay/queue';
import { createStoreRecordSink, openStore } from 'hookrelay/store';
import { z } from 'zod';

export type AgentsExampleOptions = {
  databaseUrl: string;
  redisUrl?: string;
  queueName?: string;
  /** Receives the `onComplete` webhook (through the worker). */
  notifyUrl: string;
  /** Answers AGENT-HOOKS-0.1 verdicts; default a stand-in started on 127.0.0.1. */
  policyUrl?: string;
  allowedCidrs?: string;
  operationId?: string;
};

/** A stand-in policy service: denies sending email, allows the rest (bare verdict objects). */
export async function startPolicyService(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => {
      const ctx = JSON.parse(body) as { interception_point: string; tool_call?: { name?: string } };
      const verdict =
        ctx.interception_point === 'pre_tool_call' && ctx.tool_call?.name === 'send_email'
          ? { decision: 'deny', reason: 'policy.no_email', message: 'this agent may not send email' }
          : { decision: 'allow' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(verdict));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/judge`, close: () => new Promise((r) => server.close(() => r())) };
}

/** The scripted model: asks for the weather, then to send an email, then answers with the tool outputs it was given. */
function scriptedModel(): ScriptedModel {
  return new ScriptedModel([
    // One tool per step: the SDK runs a step's tool calls in parallel, and the records read best in order.
    [functionCall('get_weather', { city: 'Kyoto' }, { callId: 'call_weather' })],
    [functionCall('send_email', { to: 'boss@example.com', body: 'Kyoto is sunny' }, { callId: 'call_email' })],
    modelResponder((call) => {
      const items = Array.isArray(call.request.input) ? (call.request.input as Array<Record<string, unknown>>) : [];
      const names = new Map(items.filter((i) => i.type === 'function_call').map((i) => [i.callId, i.name]));
      const seen = items
        .filter((i) => i.type === 'function_call_result')
        .map((i) => {
          const output = i.output as string | { text?: string };
          return `${String(names.get(i.callId) ?? i.name)} → ${typeof output === 'string' ? output : (output.text ?? JSON.stringify(output))}`;
        });
      return [assistantMessage(`I saw: ${seen.join('; ')}`)];
    }),
  ]);
}

export async function runAgentsExample(options: AgentsExampleOptions) {
  setTracingDisabled(true); // the scripted model needs no OpenAI account: export no traces either
  const operationId = options.operationId ?? `op_agents_${Date.now()}`;
  const standIn = options.policyUrl === undefined ? await startPolicyService() : undefined;
  const store = await openStore({ databaseUrl: options.databaseUrl });
  const producer = createHookProducer({ databaseUrl: options.databaseUrl, redisUrl: options.redisUrl, queueName: options.queueName });
  const dispatcher = new HookDispatcher({ mode: 'queue', producer, allowedCidrs: options.allowedCidrs });
  const transport = new FetchTransport({ allowedCidrs: options.allowedCidrs });
  const records = createStoreRecordSink(store.db);
  const seen: InterceptionRecord[] = [];
  const emails: string[] = [];
  try {
    const hooks = createAgentHooks({
      interceptors: {
        policy: createRemoteInterceptor({ url: options.policyUrl ?? (standIn as { url: string }).url }, { fetchTransport: transport }),
        // A result never shows the model a credential (function tools return strings: redact inside).
        'redact-secrets': (ctx) =>
          ctx.interception_point === 'post_tool_call' && typeof ctx.target === 'string' && ctx.target.includes('"apiKey"')
            ? Verdict.transform('$target', ctx.target.replace(/"apiKey":"[^"]*"/, '"apiKey":"[redacted]"'), { reason: 'policy.redact_secret' })
            : Verdict.allow(),
      },
      framework: 'openai-agents',
      tools: ['get_weather', 'send_email'],
      recordSink: async (r) => {
        seen.push(r);
        await records.sink(r); // Postgres: interception_records, one row per record
      },
    });
    const relay = createOpenAIAgentsHooks({ hooks, dispatcher });
    dispatcher.register(operationId, [{ id: 'notify-done', type: 'onComplete', webhook: { url: options.notifyUrl } }]);

    const getWeather = tool({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => JSON.stringify({ city, forecast: 'sunny', apiKey: 'sk-live-weather-123' }),
    });
    const sendEmail = tool({
      name: 'send_email',
      description: 'Send an email',
      parameters: z.object({ to: z.string(), body: z.string() }),
      execute: async ({ to }) => {
        emails.push(to);
        return 'sent';
      },
    });
    const agent = new Agent({ name: 'weather', instructions: 'Answer briefly.', tools: [getWeather, sendEmail], model: scriptedModel() });

    // The one wrap: a clone of the agent with its model, tools and guardrails wrapped.
    const r = relay.startRun({ input: 'Weather in Kyoto? Email it to my boss.', operationId });
    const prepared = await r.prepare(agent);
    const result = await r.track(run(prepared.agent, prepared.input));
    dispatcher.unregister(operationId);
    return { operationId, sessionId: r.sessionId, answer: String(result.finalOutput), emailsSent: emails.length, records: seen };
  } finally {
    await dispatcher.close();
    await producer.close();
    await transport.close();
    await store.close();
    await standIn?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const databaseUrl = process.env.DATABASE_URL;
  const notifyUrl = process.env.NOTIFY_URL;
  if (!databaseUrl || !notifyUrl) {
    process.stderr.write('set DATABASE_URL and NOTIFY_URL (and REDIS_URL, POLICY_URL) to run the example\n');
    process.exit(2);
  }
  const out = await runAgentsExample({
    databaseUrl,
    notifyUrl,
    redisUrl: process.env.REDIS_URL,
    queueName: process.env.HOOKRELAY_QUEUE,
    policyUrl: process.env.POLICY_URL,
    allowedCidrs: process.env.HOOKRELAY_ALLOWED_CIDRS,
    operationId: process.env.OPERATION_ID,
  });
  console.log(`operation ${out.operationId}, session ${out.sessionId}`);
  console.log(`answer: ${out.answer}`);
  console.log(`emails sent: ${out.emailsSent}`);
  const line = out.records.map((r) =>
    r.verdict.decision === 'allow' ? r.interception_point : `${r.interception_point}(${r.verdict.decision} ${r.verdict.reason})`,
  );
  console.log(`records stored: ${line.join(' ')}`);
  console.log('onComplete enqueued: the worker delivers it');
}
