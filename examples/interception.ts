/**
 * AGENT-HOOKS-0.1 at the tool seam, runnable as is: `npx tsx examples/interception.ts`.
 * A local interceptor denies destructive shell commands; a remote interceptor (a policy
 * service, here started on 127.0.0.1) rewrites search queries. Records are printed.
 *
 * It imports hookrelay by its package name, as an app that installed it does; inside this
 * repository the name resolves to the package itself (package.json `exports` → dist/), so run
 * `npm run build` after changing src/.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FetchTransport, HookDispatcher, InterceptionEmitter, Verdict, createRemoteInterceptor, silentLogger, type InterceptionRecord } from 'hookrelay';

// A stand-in for a remote policy service: answers bare verdict objects.
const policy = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d: Buffer) => (body += d));
  req.on('end', () => {
    const ctx = JSON.parse(body) as { interception_point: string; tool_call?: { name: string } };
    const verdict =
      ctx.interception_point === 'pre_tool_call' && ctx.tool_call?.name === 'search/web'
        ? { decision: 'transform', transform: { path: '$target.q', value: 'weather safe:on' } }
        : { decision: 'allow' };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(verdict));
  });
});
await new Promise<void>((resolve) => policy.listen(0, '127.0.0.1', resolve));
const policyUrl = `http://127.0.0.1:${(policy.address() as AddressInfo).port}/verdict`;

const transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' }); // the policy service is on loopback
const records: InterceptionRecord[] = [];
const emitter = new InterceptionEmitter({
  interceptors: {
    'no-destructive-shell': (ctx) =>
      ctx.interception_point === 'pre_tool_call' && /rm -rf/.test(JSON.stringify(ctx.target))
        ? Verdict.deny({ reason: 'policy.destructive_shell' })
        : Verdict.allow(),
    'policy-service': createRemoteInterceptor(
      { url: policyUrl, headers: { authorization: 'Bearer ${POLICY_TOKEN}' }, allowedEnvVars: ['POLICY_TOKEN'] },
      // Templates read only the names the operator allows (HOOKRELAY_TEMPLATE_ENV, default none).
      { fetchTransport: transport, env: { POLICY_TOKEN: 'example-token' }, templateEnv: 'POLICY_TOKEN' },
    ),
  },
  recordSink: (r) => {
    records.push(r);
  },
});
// An emitter on the dispatcher covers the tool seam only (the run adapter, createAgentHooks, covers
// the whole run): say so explicitly, or the dispatcher refuses the incomplete boundary.
const hooks = new HookDispatcher({ emitter, interceptionPoints: 'tool-seam', env: {}, logger: silentLogger() });

const call = (toolCallId: string, identifier: string, apiName: string, args: Record<string, unknown>) => ({
  toolCallId,
  assistantMessageId: 'msg_1',
  identifier,
  apiName,
  args,
  callIndex: 0,
  stepIndex: 0,
  operationId: 'op_demo',
  executor: 'server' as const,
});

hooks.register('op_demo', []);
const search = await hooks.evaluateToolCall('op_demo', call('call_1', 'search', 'web', { q: 'weather' }));
console.log('search/web  →', JSON.stringify(search));
const shell = await hooks.evaluateToolCall('op_demo', call('call_2', 'shell', 'exec', { cmd: 'rm -rf /' }));
console.log('shell/exec  →', shell.status, shell.status === 'blocked' ? shell.reason : '');
hooks.unregister('op_demo', { reason: 'done' }); // agent_shutdown: summary.reason "completed"
await hooks.close(); // waits for the agent_shutdown record (emitted in the background)

for (const r of records)
  console.log(`record #${r.sequence} ${r.interception_point.padEnd(14)} ${r.verdict.decision}${r.verdict.reason ? ` (${r.verdict.reason})` : ''}`);
await transport.close();
policy.close();
