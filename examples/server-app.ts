/**
 * A minimal server app using hookrelay: register hooks for an agent operation with a queue-mode
 * dispatcher, dispatch lifecycle events (enqueued, delivered by the worker), and ask a decision
 * webhook before a tool call.
 *
 *   DATABASE_URL=… REDIS_URL=… NOTIFY_URL=https://… POLICY_URL=https://… npx tsx examples/server-app.ts
 *   curl -X POST localhost:3000/runs -d '{"tool":"shell/exec","args":{"cmd":"ls"}}'
 *
 * It imports hookrelay by its package name, as an app that installed it does; inside this
 * repository the name resolves to the package itself (package.json `exports` → dist/), so run
 * `npm run build` after changing src/.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { HookDispatcher, buildToolCallHookContext, CriticalHookDeliveryError } from 'hookrelay';
import { createHookProducer } from 'hookrelay/queue';

export type ServerAppOptions = {
  port?: number;
  databaseUrl?: string;
  redisUrl?: string;
  queueName?: string;
  /** Receives the lifecycle notifications (through the worker). */
  notifyUrl: string;
  /** Answers `{"decision":"allow"|"deny"}` before each tool call. */
  policyUrl: string;
  allowedCidrs?: string;
};

export async function startServerApp(options: ServerAppOptions) {
  const producer = createHookProducer({ databaseUrl: options.databaseUrl, redisUrl: options.redisUrl, queueName: options.queueName });
  const hooks = new HookDispatcher({ mode: 'queue', producer, allowedCidrs: options.allowedCidrs });
  let runs = 0;

  async function run(body: { tool?: string; args?: Record<string, unknown> }) {
    const operationId = `op_${Date.now()}_${++runs}`;
    hooks.register(operationId, [
      { id: 'notify-steps', type: 'afterStep', webhook: { url: options.notifyUrl } },
      { id: 'notify-done', type: 'onComplete', webhook: { url: options.notifyUrl, fallback: 'none' } },
      { id: 'policy', type: 'beforeToolCall', webhook: { url: options.policyUrl, responseHandling: 'toolCall', onError: 'block' } },
    ]);
    try {
      await hooks.dispatch(operationId, 'beforeStep', { operationId, stepIndex: 0 });
      const [identifier = 'tool', apiName = 'call'] = (body.tool ?? 'search/web').split('/');
      const context = buildToolCallHookContext({
        toolCall: { id: 'call_1', identifier, apiName, arguments: body.args ?? {} },
        assistantMessageId: 'msg_1',
        operationId,
        callIndex: 0,
        stepIndex: 0,
      });
      const decision = await hooks.evaluateToolCall(operationId, context);
      const toolResult =
        decision.status === 'allow'
          ? { content: `ran ${identifier}/${apiName}`, success: true }
          : decision.status === 'blocked'
            ? decision.result
            : { content: 'cancelled', success: false };
      await hooks.dispatch(operationId, 'afterStep', { operationId, stepIndex: 0, content: toolResult.content });
      await hooks.dispatch(operationId, 'onComplete', { operationId, reason: 'done' });
      return { operationId, decision: decision.status, toolResult };
    } finally {
      hooks.unregister(operationId);
    }
  }

  const server = http.createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/runs') {
      res.writeHead(404).end();
      return;
    }
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d));
    req.on('end', () => {
      let body: { tool?: string; args?: Record<string, unknown> };
      try {
        body = raw ? (JSON.parse(raw) as typeof body) : {};
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"body must be JSON"}');
        return;
      }
      run(body).then(
        (out) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out)),
        (err: unknown) => {
          // A critical delivery could not even be recorded: tell the caller to retry the run.
          const status = err instanceof CriticalHookDeliveryError ? 503 : 500;
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: err instanceof Error ? err.name : 'error' }));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 3000, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await hooks.close();
      await producer.close();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const notifyUrl = process.env.NOTIFY_URL;
  const policyUrl = process.env.POLICY_URL;
  if (!notifyUrl || !policyUrl) {
    process.stderr.write('set NOTIFY_URL and POLICY_URL (and DATABASE_URL / REDIS_URL) to run the example\n');
    process.exit(2);
  }
  const app = await startServerApp({ notifyUrl, policyUrl, port: Number(process.env.PORT ?? 3000), allowedCidrs: process.env.HOOKRELAY_ALLOWED_CIDRS });
  process.stdout.write(`server app listening on ${app.url}; POST /runs\n`);
  const stop = () => void app.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
