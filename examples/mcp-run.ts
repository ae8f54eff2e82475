/**
 * An MCP client's tool calls under hookrelay policy (`hookrelay/mcp`), runnable as is:
 *
 *   DATABASE_URL=… REDIS_URL=… NOTIFY_URL=https://… npx tsx examples/mcp-run.ts
 *   (and `hookrelay worker` with the same DATABASE_URL / REDIS_URL delivers the webhooks)
 *
 * The example starts examples/mcp-files-server.ts over stdio (a real MCP server in its own
 * process, serving a scratch folder of two files) and calls its tools through a guarded `Client`
 * of either MCP SDK major: `@modelcontextprotocol/sdk` 1.x (default) or, with MCP_SDK=2,
 * `@modelcontextprotocol/client` / `@modelcontextprotocol/server` 2.x. What it shows:
 * - a policy webhook (`createRemoteInterceptor`; a stand-in on 127.0.0.1 unless POLICY_URL)
 *   denying `delete_all`: the server is never asked, the caller gets an MCP error result naming
 *   the reason, and the files are still there;
 * - a transform redacting a token from `read_file`'s content before the caller sees it;
 * - `afterToolCall` (with each call's verdict, the denial included) and `onComplete` webhooks
 *   enqueued by a queue-mode dispatcher and delivered by the worker;
 * - every interception record stored in Postgres (`createStoreRecordSink`).
 *
 * It imports hookrelay by its package name (package.json `exports` → dist/): run `npm run build`
 * after changing src/.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { FetchTransport, HookDispatcher, Verdict, createAgentHooks, createRemoteInterceptor, type InterceptionRecord } from 'hookrelay';
import { createMcpHooks } from 'hookrelay/mcp';
import { createHookProducer } from 'hookrelay/queue';
import { createStoreRecordSink, openStore } from 'hookrelay/store';

export type McpExampleOptions = {
  databaseUrl: string;
  redisUrl?: string;
  queueName?: string;
  /** Receives the `afterToolCall` and `onComplete` webhooks (through the worker). */
  notifyUrl: string;
  /** Answers AGENT-HOOKS-0.1 verdicts; default a stand-in started on 127.0.0.1. */
  policyUrl?: string;
  allowedCidrs?: string;
  operationId?: string;
  /** The MCP SDK major of the client and the server: 1 (`@modelcontextprotocol/sdk`, default) or 2 (`@modelcontextprotocol/client`). */
  sdk?: 1 | 2;
};

/** A client of the chosen major connected over stdio to the files server (same major), as a host starts one. */
async function connectFilesServer(sdk: 1 | 2, folder: string) {
  const params = {
    command: process.execPath,
    args: ['--import', 'tsx', path.join(import.meta.dirname, 'mcp-files-server.ts')],
    env: { PATH: process.env.PATH ?? '', FILES_DIR: folder, MCP_SDK: String(sdk) },
    stderr: 'inherit' as const,
  };
  if (sdk === 2) {
    const { Client } = await import('@modelcontextprotocol/client');
    const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
    const client = new Client({ name: 'hookrelay-example', version: '1.0.0' });
    await client.connect(new StdioClientTransport(params));
    return client;
  }
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const client = new Client({ name: 'hookrelay-example', version: '1.0.0' });
  await client.connect(new StdioClientTransport(params));
  return client;
}

/** A stand-in policy service: denies `delete_all`, allows the rest (bare verdict objects, `{ decision, reason?, message? }`). */
async function startPolicyService(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => {
      const ctx = JSON.parse(body) as { interception_point: string; tool_call?: { name?: string } };
      const verdict =
        ctx.interception_point === 'pre_tool_call' && ctx.tool_call?.name === 'delete_all'
          ? { decision: 'deny', reason: 'policy.destructive', message: 'no bulk deletes' }
          : { decision: 'allow' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(verdict));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/judge`, close: () => new Promise((r) => server.close(() => r())) };
}

const TOKEN = /tok_live_[A-Za-z0-9]+/g;

export async function runMcpExample(options: McpExampleOptions) {
  const operationId = options.operationId ?? `op_mcp_${Date.now()}`;
  const folder = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-mcp-files-'));
  writeFileSync(path.join(folder, 'q3.txt'), 'Q3 revenue up 12%. Upload with tok_live_8f2a9c.\n');
  writeFileSync(path.join(folder, 'q4.txt'), 'Q4 plan.\n');
  const standIn = options.policyUrl === undefined ? await startPolicyService() : undefined;
  const store = await openStore({ databaseUrl: options.databaseUrl });
  const producer = createHookProducer({ databaseUrl: options.databaseUrl, redisUrl: options.redisUrl, queueName: options.queueName });
  const dispatcher = new HookDispatcher({ mode: 'queue', producer, allowedCidrs: options.allowedCidrs });
  const transport = new FetchTransport({ allowedCidrs: options.allowedCidrs });
  const records = createStoreRecordSink(store.db);
  const seen: InterceptionRecord[] = [];
  // The MCP server in its own process, as a host starts one.
  const client = await connectFilesServer(options.sdk ?? 1, folder);
  try {
    const hooks = createAgentHooks({
      interceptors: {
        policy: createRemoteInterceptor({ url: options.policyUrl ?? (standIn as { url: string }).url }, { fetchTransport: transport }),
        // A tool result never shows the caller a live token.
        'redact-secrets': (ctx) => {
          if (ctx.interception_point !== 'post_tool_call') return Verdict.allow();
          const text = JSON.stringify(ctx.target);
          const redacted = text.replace(TOKEN, '[redacted]');
          return redacted === text ? Verdict.allow() : Verdict.transform('$target', JSON.parse(redacted), { reason: 'policy.redact_secret' });
        },
      },
      framework: 'mcp',
      tools: ['read_file', 'delete_all'],
      recordSink: async (r) => {
        seen.push(r);
        await records.sink(r); // Postgres: interception_records, one row per record
      },
    });
    dispatcher.register(operationId, [
      { id: 'audit-tools', type: 'afterToolCall', webhook: { url: options.notifyUrl } },
      { id: 'notify-done', type: 'onComplete', webhook: { url: options.notifyUrl } },
    ]);

    // The one wrap: the client's connection is guarded — every tool call on it is judged at pre_tool_call and post_tool_call.
    const run = createMcpHooks({ hooks, dispatcher }).startRun({ input: 'Summarise the Q3 report, then clear the folder.', operationId });
    const tools = run.wrapClient(client);
    const read = await tools.callTool({ name: 'read_file', arguments: { name: 'q3.txt' } });
    const cleared = await tools.callTool({ name: 'delete_all', arguments: {} });
    await run.end({ status: 'completed' });
    dispatcher.unregister(operationId);
    return { operationId, sessionId: run.sessionId, read, cleared, filesLeft: readdirSync(folder).length, records: seen };
  } finally {
    await client.close();
    await dispatcher.close();
    await producer.close();
    await transport.close();
    await store.close();
    await standIn?.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

const textOf = (result: unknown) =>
  ((result as { content?: unknown[] }).content ?? []).map((c) => (c as { text?: string }).text ?? JSON.stringify(c)).join(' ');

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const databaseUrl = process.env.DATABASE_URL;
  const notifyUrl = process.env.NOTIFY_URL;
  if (!databaseUrl || !notifyUrl) {
    process.stderr.write('set DATABASE_URL and NOTIFY_URL (and REDIS_URL, POLICY_URL) to run the example\n');
    process.exit(2);
  }
  const out = await runMcpExample({
    databaseUrl,
    notifyUrl,
    redisUrl: process.env.REDIS_URL,
    queueName: process.env.HOOKRELAY_QUEUE,
    policyUrl: process.env.POLICY_URL,
    allowedCidrs: process.env.HOOKRELAY_ALLOWED_CIDRS,
    operationId: process.env.OPERATION_ID,
    sdk: process.env.MCP_SDK === '2' ? 2 : 1,
  });
  console.log(`operation ${out.operationId}, session ${out.sessionId}`);
  console.log(`read_file: ${textOf(out.read).trim()}`);
  console.log(`delete_all: ${out.cleared.isError === true ? 'error result' : 'ran'}: ${textOf(out.cleared)}`);
  console.log(`files left: ${out.filesLeft}`);
  const line = out.records.map((r) =>
    r.verdict.decision === 'allow' ? r.interception_point : `${r.interception_point}(${r.verdict.decision} ${r.verdict.reason})`,
  );
  console.log(`records stored: ${line.join(' ')}`);
  console.log('afterToolCall and onComplete enqueued: the worker delivers them');
}
