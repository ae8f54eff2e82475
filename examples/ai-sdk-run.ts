/**
 * A Vercel AI SDK tool loop wrapped once by `hookrelay/ai-sdk`, runnable as is:
 *
 *   DATABASE_URL=… REDIS_URL=… NOTIFY_URL=https://… npx tsx examples/ai-sdk-run.ts
 *   (and `hookrelay worker` with the same DATABASE_URL / REDIS_URL delivers the webhook)
 *
 * One `generateText` call with two tools, on the AI SDK's own mock model (`ai/test`: no network,
 * no API key). What it shows:
 * - a policy webhook (`createRemoteInterceptor`) denying the `send_email` tool call: the model gets
 *   an error result naming the reason, the tool never runs, the loop goes on;
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
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { FetchTransport, HookDispatcher, Verdict, createAgentHooks, createRemoteInterceptor, type InterceptionRecord } from 'hookrelay';
import { createAiSdkHooks } from 'hookrelay/ai-sdk';
import { createHookProducer } from 'hookrelay/queue';
import { createStoreRecordSink, openStore } from 'hookrelay/store';

export type AiSdkExampleOptions = {
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

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** The scripted model: first asks for both tools, then answers with the tool results it was given. */
function scriptedModel(): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const results = prompt.flatMap((m) => (m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-result') : []));
      if (results.length === 0) {
        return {
          content: [
            { type: 'tool-call', toolCallId: 'call_weather', toolName: 'get_weather', input: '{"city":"Kyoto"}' },
            { type: 'tool-call', toolCallId: 'call_email', toolName: 'send_email', input: '{"to":"boss@example.com","body":"Kyoto is sunny"}' },
          ],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      const seen = results.map((r) => {
        const o = r.output;
        return `${r.toolName} → ${o.type === 'text' || o.type === 'error-text' ? o.value : JSON.stringify(o.type === 'json' ? o.value : o)}`;
      });
      return { content: [{ type: 'text', text: `I saw: ${seen.join('; ')}` }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
    },
  });
}

export async function runAiSdkExample(options: AiSdkExampleOptions) {
  const operationId = options.operationId ?? `op_ai_${Date.now()}`;
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
        // A result never shows the model a credential.
        'redact-secrets': (ctx) =>
          ctx.interception_point === 'post_tool_call' && typeof ctx.target === 'object' && ctx.target !== null && 'apiKey' in ctx.target
            ? Verdict.transform('$target.apiKey', '[redacted]', { reason: 'policy.redact_secret' })
            : Verdict.allow(),
      },
      framework: 'ai-sdk',
      tools: ['get_weather', 'send_email'],
      recordSink: async (r) => {
        seen.push(r);
        await records.sink(r); // Postgres: interception_records, one row per record
      },
    });
    const relay = createAiSdkHooks({ hooks, dispatcher });
    dispatcher.register(operationId, [{ id: 'notify-done', type: 'onComplete', webhook: { url: options.notifyUrl } }]);

    const tools = {
      get_weather: tool({
        description: 'Current weather for a city',
        inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
        execute: async ({ city }) => ({ city, forecast: 'sunny', apiKey: 'sk-live-weather-123' }),
      }),
      send_email: tool({
        description: 'Send an email',
        inputSchema: jsonSchema<{ to: string; body: string }>({ type: 'object', properties: { to: { type: 'string' }, body: { type: 'string' } } }),
        execute: async ({ to }) => {
          emails.push(to);
          return 'sent';
        },
      }),
    };

    // The one wrap: the run hands generateText the wrapped model, tools, prompt and callbacks.
    const run = relay.startRun({ input: 'Weather in Kyoto? Email it to my boss.', operationId });
    const result = await run.track(
      generateText({ ...(await run.settings({ model: scriptedModel(), tools })), stopWhen: stepCountIs(3), toolCallConcurrency: 1 }),
    );
    dispatcher.unregister(operationId);
    return { operationId, sessionId: run.sessionId, answer: result.text, emailsSent: emails.length, records: seen };
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
  const out = await runAiSdkExample({
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
