/**
 * An OpenAI Agents SDK handoff under `hookrelay/openai-agents`, runnable as is:
 *
 *   DATABASE_URL=… REDIS_URL=… NOTIFY_URL=https://… npx tsx examples/openai-agents-handoff.ts
 *   (and `hookrelay worker` with the same DATABASE_URL / REDIS_URL delivers the webhooks)
 *
 * A `triage` agent hands the request off to a `files` agent, whose model asks for `delete_all`.
 * `prepare(triage)` wraps every agent the run can reach, so the policy judges the handoff and the
 * `files` agent's model and tool calls under the same session, and denies `delete_all`: it never
 * runs, and the model gets `{"error":"tool call blocked by policy",…}` as its output. An audit
 * webhook (`afterToolCall`) receives the denial with its verdict, and `onComplete` the end, both
 * enqueued by a queue-mode dispatcher and delivered by the worker; every interception record is
 * stored in Postgres (`createStoreRecordSink`). The models are the SDK's scripted test model
 * (`@openai/agents/testing`): no network, no API key. OPERATION_ID names the run; it imports
 * hookrelay by its package name (package.json `exports` → dist/): `npm run build` after changing src/.
 */
import { pathToFileURL } from 'node:url';
import { Agent, run, setTracingDisabled, tool } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents/testing';
import { HookDispatcher, Verdict, createAgentHooks, type InterceptionRecord } from 'hookrelay';
import { createOpenAIAgentsHooks } from 'hookrelay/openai-agents';
import { createHookProducer } from 'hookrelay/queue';
import { createStoreRecordSink, openStore } from 'hookrelay/store';
import { z } from 'zod';

export type HandoffExampleOptions = {
  databaseUrl: string;
  redisUrl?: string;
  queueName?: string;
  /** Receives the `afterToolCall` and `onComplete` webhooks (through the worker). */
  notifyUrl: string;
  allowedCidrs?: string;
  operationId?: string;
};

export async function runHandoffExample(options: HandoffExampleOptions) {
  setTracingDisabled(true); // the scripted models need no OpenAI account: export no traces either
  const operationId = options.operationId ?? `op_handoff_${Date.now()}`;
  const store = await openStore({ databaseUrl: options.databaseUrl });
  const producer = createHookProducer({ databaseUrl: options.databaseUrl, redisUrl: options.redisUrl, queueName: options.queueName });
  const dispatcher = new HookDispatcher({ mode: 'queue', producer, allowedCidrs: options.allowedCidrs });
  const records = createStoreRecordSink(store.db);
  const seen: InterceptionRecord[] = [];
  let deleted = 0;
  try {
    const hooks = createAgentHooks({
      interceptors: {
        // The policy: nothing destructive, whichever agent asks.
        policy: (ctx) =>
          ctx.interception_point === 'pre_tool_call' && (ctx as { tool_call?: { name?: string } }).tool_call?.name === 'delete_all'
            ? Verdict.deny({ reason: 'policy.destructive', message: 'no bulk deletes' })
            : Verdict.allow(),
      },
      framework: 'openai-agents',
      recordSink: async (r) => {
        seen.push(r);
        await records.sink(r);
      },
    });
    const relay = createOpenAIAgentsHooks({ hooks, dispatcher });
    dispatcher.register(operationId, [
      { id: 'audit-tools', type: 'afterToolCall', webhook: { url: options.notifyUrl } },
      { id: 'notify-done', type: 'onComplete', webhook: { url: options.notifyUrl } },
    ]);

    const deleteAll = tool({
      name: 'delete_all',
      description: 'Delete every file in a folder',
      parameters: z.object({ folder: z.string() }),
      execute: async () => {
        deleted += 1;
        return 'deleted';
      },
    });
    const files = new Agent({
      name: 'files',
      instructions: 'You manage files.',
      tools: [deleteAll],
      model: new ScriptedModel([
        [functionCall('delete_all', { folder: '/srv/reports' }, { callId: 'call_delete' })],
        [assistantMessage('I could not delete the reports: the policy refused it.')],
      ]),
    });
    const triage = new Agent({
      name: 'triage',
      instructions: 'Hand file requests to the files agent.',
      handoffs: [files],
      model: new ScriptedModel([[functionCall('transfer_to_files', {}, { callId: 'call_handoff' })]]),
    });

    const r = relay.startRun({ input: 'Clean up /srv/reports.', operationId });
    const prepared = await r.prepare(triage); // triage, files and their tools, wrapped once
    const result = await r.track(run(prepared.agent, prepared.input));
    dispatcher.unregister(operationId);
    return { operationId, sessionId: r.sessionId, answer: String(result.finalOutput), lastAgent: result.lastAgent?.name, deleted, records: seen };
  } finally {
    await dispatcher.close();
    await producer.close();
    await store.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const databaseUrl = process.env.DATABASE_URL;
  const notifyUrl = process.env.NOTIFY_URL;
  if (!databaseUrl || !notifyUrl) {
    process.stderr.write('set DATABASE_URL and NOTIFY_URL (and REDIS_URL) to run the example\n');
    process.exit(2);
  }
  const out = await runHandoffExample({
    databaseUrl,
    notifyUrl,
    redisUrl: process.env.REDIS_URL,
    queueName: process.env.HOOKRELAY_QUEUE,
    allowedCidrs: process.env.HOOKRELAY_ALLOWED_CIDRS,
    operationId: process.env.OPERATION_ID,
  });
  console.log(`operation ${out.operationId}, session ${out.sessionId}`);
  console.log(`answer (${out.lastAgent}): ${out.answer}`);
  console.log(`delete_all ran: ${out.deleted}`);
  const line = out.records.map((r) => {
    const name = (r as { tool_call?: { name?: string } }).tool_call?.name;
    const point = name === undefined ? r.interception_point : `${r.interception_point}[${name}]`;
    return r.verdict.decision === 'allow' ? point : `${point}(${r.verdict.decision} ${r.verdict.reason})`;
  });
  console.log(`records stored: ${line.join(' ')}`);
  console.log('afterToolCall and onComplete enqueued: the worker delivers them');
}
