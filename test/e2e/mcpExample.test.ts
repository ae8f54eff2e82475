/**
 * examples/mcp-run.ts runs as written, in its own process, against a real `hookrelay worker`
 * process, a real receiver on 127.0.0.1, Postgres and Redis, with its MCP server
 * (examples/mcp-files-server.ts) started over stdio, once with each MCP SDK major (1.x
 * `@modelcontextprotocol/sdk`, 2.x `@modelcontextprotocol/client` / `server`): the policy webhook denies `delete_all` (the
 * server never deletes), a transform redacts a token from `read_file`, the records land in
 * Postgres in order, and the worker delivers both afterToolCall events (the denial with its
 * verdict) and the onComplete.
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
const queueName = `mcp-example-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  ({ t, receiver, worker } = await startExampleWorker('mcp_example', queueName));
}, 60_000);

afterAll(async () => {
  await stopExampleWorker({ t, receiver, worker }, queueName);
}, 60_000);

describe('MCP example: examples/mcp-run.ts against a stdio MCP server, a worker process, a receiver, Postgres and Redis', () => {
  it.each(['1', '2'])(
    'MCP example (SDK %s.x): delete_all denied and never run on the server, read_file redacted, records stored in order, afterToolCall (the denial with its verdict) and onComplete delivered by the worker',
    async (sdk) => {
      const op = `op-mcp-example-${sdk}-${randomBytes(3).toString('hex')}`;
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        DATABASE_URL: t.url,
        REDIS_URL,
        HOOKRELAY_QUEUE: queueName,
        HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32',
        NOTIFY_URL: `${receiver.url}/notify`,
        OPERATION_ID: op,
        MCP_SDK: sdk,
      };
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/mcp-run.ts'], { cwd: ROOT, timeout: 60_000, env });
      const lines = stdout.trim().split('\n');
      const [, operationId, sessionId] = /^operation (\S+), session (\S+\/[0-9a-f-]{36})$/.exec(lines[0] ?? '') ?? [];
      expect(operationId).toBe(op);
      const records = [
        'agent_startup',
        'input',
        'pre_tool_call',
        'post_tool_call(transform policy.redact_secret)',
        'pre_tool_call(deny policy.destructive)',
        'agent_shutdown',
      ];
      expect(lines.slice(1)).toEqual([
        'read_file: Q3 revenue up 12%. Upload with [redacted].',
        'delete_all: error result: {"error":"tool call blocked by policy","reason":"policy.destructive","message":"no bulk deletes"}',
        'files left: 2',
        `records stored: ${records.join(' ')}`,
        'afterToolCall and onComplete enqueued: the worker delivers them',
      ]);
      const stored = await t.store.pool!.query<{ point: string; record: { verdict: { decision: string; reason?: string } } }>(
        'select point, record from interception_records where session_id = $1 order by sequence',
        [sessionId],
      );
      expect(
        stored.rows.map((r) => (r.record.verdict.decision === 'allow' ? r.point : `${r.point}(${r.record.verdict.decision} ${r.record.verdict.reason})`)),
      ).toEqual(records);

      const rows = async () =>
        (await t.store.pool!.query<{ status: string; event_type: string }>('select status, event_type from deliveries where operation_id = $1', [op])).rows;
      for (let i = 0; i < 400; i++) {
        const r = await rows();
        if (r.length === 3 && r.every((x) => x.status === 'delivered')) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      expect((await rows()).map((r) => [r.event_type, r.status]).sort()).toEqual([
        ['afterToolCall', 'delivered'],
        ['afterToolCall', 'delivered'],
        ['onComplete', 'delivered'],
      ]);
      const bodies = receiver.requests
        .filter((q) => q.path === '/notify')
        .map((q) => JSON.parse(q.body) as Record<string, unknown>)
        .filter((b) => b.operationId === op);
      expect(bodies.find((b) => b.hookType === 'afterToolCall' && b.apiName === 'delete_all')).toMatchObject({
        stepIndex: 0,
        result: { success: false },
        verdict: { decision: 'deny', interceptionPoint: 'pre_tool_call', reason: 'policy.destructive', message: 'no bulk deletes' },
      });
      expect(bodies.find((b) => b.hookType === 'afterToolCall' && b.apiName === 'read_file')).toMatchObject({ verdict: { decision: 'transform' } });
      expect(JSON.stringify(bodies)).not.toContain('tok_live_8f2a9c');
      expect(bodies.find((b) => b.hookType === 'onComplete')).toMatchObject({ reason: 'done', status: 'completed' });
    },
    90_000,
  );
});
