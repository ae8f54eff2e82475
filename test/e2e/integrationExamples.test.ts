/**
 * examples/ai-sdk-run.ts and examples/openai-agents-run.ts (issue 29) run as written, each in its
 * own process against a real `hookrelay worker` process, a real receiver on 127.0.0.1, Postgres and
 * Redis: the policy webhook (the example's own stand-in on 127.0.0.1) denies `send_email`, a
 * transform redacts the `get_weather` result, the interception records land in Postgres in order,
 * and the worker delivers exactly one `onComplete` — the durable delivery path (D8, Q1).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestStore } from '../support/db.ts';
import { REDIS_URL, startExampleWorker, stopExampleWorker } from '../support/exampleWorker.ts';
import { type HookrelayProcess, ROOT } from '../support/hookrelayProcess.ts';
import type { Receiver } from '../support/receiver.ts';

let t: TestStore;
let receiver: Receiver;
let worker: HookrelayProcess;
const queueName = `integ-examples-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  ({ t, receiver, worker } = await startExampleWorker('integ_examples', queueName));
}, 60_000);

afterAll(async () => {
  await stopExampleWorker({ t, receiver, worker }, queueName);
}, 60_000);

/** Runs an example as a user would (`node --import tsx examples/<file>`), with only these settings. */
async function runExample(file: string, operationId: string): Promise<string[]> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    DATABASE_URL: t.url,
    REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32',
    NOTIFY_URL: `${receiver.url}/notify`,
    OPERATION_ID: operationId,
  };
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, timeout: 60_000, env });
  return stdout.trim().split('\n');
}

/** The onComplete receipts for the operation, once the worker has settled its delivery row (bounded wait). */
async function deliveredOnComplete(operationId: string) {
  const rows = async () =>
    (
      await t.store.pool!.query<{ id: string; status: string; event_type: string }>(
        'select id, status, event_type from deliveries where operation_id = $1 order by id',
        [operationId],
      )
    ).rows;
  for (let i = 0; i < 400; i++) {
    const r = await rows();
    if (r.length > 0 && r.every((x) => x.status === 'delivered')) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  const receipts = receiver.requests.filter((q) => q.path === '/notify' && JSON.parse(q.body).operationId === operationId);
  return { ledger: await rows(), receipts };
}

async function storedPoints(sessionId: string) {
  const rows = await t.store.pool!.query<{ sequence: number; point: string; record: { verdict: { decision: string; reason?: string } } }>(
    'select sequence, point, record from interception_records where session_id = $1 order by sequence',
    [sessionId],
  );
  return rows.rows.map((r) => (r.record.verdict.decision === 'allow' ? r.point : `${r.point}(${r.record.verdict.decision} ${r.record.verdict.reason})`));
}

const SESSION = /^operation (\S+), session (\S+\/[0-9a-f-]{36})$/;

describe('AI-SDK example: examples/ai-sdk-run.ts against a worker process, a receiver, Postgres and Redis', () => {
  it('AI-SDK example: the policy webhook denies send_email, the weather result is redacted, records stored in order, one onComplete delivered by the worker', async () => {
    const op = `op-ai-example-${randomBytes(3).toString('hex')}`;
    const lines = await runExample('examples/ai-sdk-run.ts', op);
    const [, operationId, sessionId] = SESSION.exec(lines[0] ?? '') ?? [];
    expect(operationId).toBe(op);
    expect(sessionId?.startsWith(`${op}/`)).toBe(true);
    const records = [
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call',
      'post_tool_call(transform policy.redact_secret)',
      'pre_tool_call(deny policy.no_email)',
      'pre_model_call',
      'post_model_call',
      'output',
      'agent_shutdown',
    ];
    expect(lines.slice(1)).toEqual([
      'answer: I saw: get_weather → {"city":"Kyoto","forecast":"sunny","apiKey":"[redacted]"}; send_email → {"error":"tool call blocked by policy","reason":"policy.no_email","message":"this agent may not send email"}',
      'emails sent: 0',
      `records stored: ${records.join(' ')}`,
      'onComplete enqueued: the worker delivers it',
    ]);
    expect(await storedPoints(sessionId!)).toEqual(records);
    const { ledger, receipts } = await deliveredOnComplete(op);
    expect(ledger.map((r) => [r.event_type, r.status])).toEqual([['onComplete', 'delivered']]);
    expect(receipts).toHaveLength(1);
    expect(receipts[0]!.headers['webhook-id']).toBe(ledger[0]!.id);
    expect(JSON.parse(receipts[0]!.body)).toMatchObject({ hookType: 'onComplete', operationId: op, reason: 'done', status: 'completed' });
    expect(receipts[0]!.body).not.toContain('sk-live-weather-123');
  }, 90_000);
});

describe('Agents-SDK example: examples/openai-agents-run.ts against a worker process, a receiver, Postgres and Redis', () => {
  it('Agents-SDK example: the policy webhook denies send_email, the weather result is redacted, records stored in order, one onComplete delivered by the worker', async () => {
    const op = `op-agents-example-${randomBytes(3).toString('hex')}`;
    const lines = await runExample('examples/openai-agents-run.ts', op);
    const [, operationId, sessionId] = SESSION.exec(lines[0] ?? '') ?? [];
    expect(operationId).toBe(op);
    expect(sessionId?.startsWith(`${op}/`)).toBe(true);
    const records = [
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call',
      'post_tool_call(transform policy.redact_secret)',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call(deny policy.no_email)',
      'pre_model_call',
      'post_model_call',
      'output',
      'agent_shutdown',
    ];
    expect(lines.slice(1)).toEqual([
      'answer: I saw: get_weather → {"city":"Kyoto","forecast":"sunny","apiKey":"[redacted]"}; send_email → {"error":"tool call blocked by policy","reason":"policy.no_email","message":"this agent may not send email"}',
      'emails sent: 0',
      `records stored: ${records.join(' ')}`,
      'onComplete enqueued: the worker delivers it',
    ]);
    expect(await storedPoints(sessionId!)).toEqual(records);
    const { ledger, receipts } = await deliveredOnComplete(op);
    expect(ledger.map((r) => [r.event_type, r.status])).toEqual([['onComplete', 'delivered']]);
    expect(receipts).toHaveLength(1);
    expect(receipts[0]!.headers['webhook-id']).toBe(ledger[0]!.id);
    expect(JSON.parse(receipts[0]!.body)).toMatchObject({ hookType: 'onComplete', operationId: op, reason: 'done', status: 'completed' });
  }, 90_000);
});

describe('Agents-SDK handoff example: examples/openai-agents-handoff.ts against a worker process, a receiver, Postgres and Redis', () => {
  it('Agents-SDK handoff example: the files agent reached by a handoff is intercepted — delete_all denied and never run, records in one session, the denial delivered to the audit webhook with its verdict (UX-5)', async () => {
    const op = `op-agents-handoff-${randomBytes(3).toString('hex')}`;
    const lines = await runExample('examples/openai-agents-handoff.ts', op);
    const [, operationId, sessionId] = SESSION.exec(lines[0] ?? '') ?? [];
    expect(operationId).toBe(op);
    const records = [
      'agent_startup',
      'input',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call',
      'post_tool_call',
      'pre_model_call',
      'post_model_call',
      'pre_tool_call(deny policy.destructive)',
      'pre_model_call',
      'post_model_call',
      'output',
      'agent_shutdown',
    ];
    expect(lines.slice(1)).toEqual([
      'answer (files): I could not delete the reports: the policy refused it.',
      'delete_all ran: 0',
      `records stored: ${records.join(' ')}`,
      'afterToolCall and onComplete enqueued: the worker delivers them',
    ]);
    expect(await storedPoints(sessionId!)).toEqual(records);
    const { ledger, receipts } = await deliveredOnComplete(op);
    expect(ledger.map((r) => [r.event_type, r.status]).sort()).toEqual([
      ['afterToolCall', 'delivered'],
      ['afterToolCall', 'delivered'],
      ['onComplete', 'delivered'],
    ]);
    const audits = receipts.map((q) => JSON.parse(q.body) as Record<string, unknown>).filter((b) => b.hookType === 'afterToolCall');
    expect(audits).toHaveLength(2);
    expect(audits.find((b) => b.apiName === 'transfer_to_files')).toMatchObject({ verdict: { decision: 'allow' }, stepIndex: 0 });
    expect(audits.find((b) => b.apiName === 'delete_all')).toMatchObject({
      toolCallId: 'call_delete',
      stepIndex: 1,
      result: { success: false },
      verdict: { decision: 'deny', interceptionPoint: 'pre_tool_call', reason: 'policy.destructive', message: 'no bulk deletes' },
    });
  }, 90_000);
});
