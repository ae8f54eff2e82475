/**
 * Shared fixtures for the operation-store tests (issue #5, L1–L5 and P1–P6): real Postgres schemas,
 * real HTTP receivers on 127.0.0.1, real dispatchers. Nothing here is mocked.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createStack, TEST_REDIS_URL, type Stack } from '../queue/harness.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import type { HookProducer } from '../../../src/queue/types.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { startReceiver, type Behaviour, type Receiver, type RecordedRequest } from '../../support/receiver.ts';
import type { ToolCallHookContext, ToolCallResult } from '../../../src/contract/toolContext.ts';

export const silentLogger = createLogger({ level: 'silent' });

export const ALLOW: Behaviour = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"decision":"allow"}' };
export const deny = (reason: string): Behaviour => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ decision: 'deny', reason }),
});

/** A port nothing listens on (connection refused at once). */
export const CLOSED_URL = 'http://127.0.0.1:1/hook';

export type Env = Record<string, string | undefined>;

/** The dispatcher modes every operation-store test runs in (D8, D9). */
export type Mode = 'local' | 'queue';
export const MODES: readonly Mode[] = ['local', 'queue'];

let currentMode: Mode = 'local';
let queueStack: Stack | undefined;

/**
 * The queue-mode configuration: header templates and environment hooks resolve only from the
 * worker's environment (W2, E3), so a test that expects them sent gives the worker one. `env` is
 * read live at send time; `templateEnv` is HOOKRELAY_TEMPLATE_ENV on both sides, the app's
 * producer (which refuses an unlisted template before recording, W2) and the worker.
 */
type WorkerConfig = { env?: Env; templateEnv?: string };

let queueProducer: HookProducer | undefined;

/**
 * Run the enclosing `describe.each(MODES)` block in `mode`: in queue mode the dispatchers of
 * `makeDispatcher` hand their webhooks to a real in-process worker (own schema, queue and Redis
 * prefix, created once per file and removed after the block).
 */
export function inMode(mode: Mode, worker: WorkerConfig = {}): void {
  beforeAll(async () => {
    currentMode = mode;
    if (mode === 'queue' && !queueStack) {
      queueStack = await createStack(`ops${randomBytes(3).toString('hex')}`);
      const templateEnv = worker.templateEnv !== undefined ? { HOOKRELAY_TEMPLATE_ENV: worker.templateEnv } : undefined;
      if (templateEnv) {
        const { db, queueName, prefix } = queueStack;
        queueProducer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, queuePrefix: prefix, env: templateEnv });
      }
      await queueStack.startWorker(templateEnv ?? {}, worker.env ? { env: worker.env } : {});
    }
  });
  afterAll(async () => {
    currentMode = 'local';
    if (mode === 'queue') {
      await queueProducer?.close();
      queueProducer = undefined;
      await queueStack?.cleanup();
      queueStack = undefined;
    }
  });
}

export function makeDispatcher(env: Env = {}): HookDispatcher {
  if (currentMode === 'queue') {
    if (!queueStack) throw new Error('queue mode needs inMode("queue") in the describe block');
    return new HookDispatcher({ mode: 'queue', producer: queueProducer ?? queueStack.producer, env, allowedCidrs: '127.0.0.1/32', logger: silentLogger });
  }
  return new HookDispatcher({ env, allowedCidrs: '127.0.0.1/32', logger: silentLogger });
}

/**
 * Queue mode: wait until the worker has finished every delivery recorded so far (no row queued,
 * in flight or retrying), so receivers can be read as in local mode, where dispatch sends inline.
 * Local mode: nothing to wait for.
 */
export async function settle(timeoutMs = 15_000): Promise<void> {
  if (currentMode !== 'queue' || !queueStack) return;
  const pool = queueStack.db.store.pool!;
  const end = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status IN ('queued', 'in_flight', 'retrying')`);
    if (rows[0]!.n === 0) return;
    if (Date.now() > end) throw new Error(`timed out waiting for the worker: ${rows[0]!.n} deliveries unfinished`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Queue mode: the hook ids recorded in the worker's ledger for an operation. */
export async function queuedHookIds(operationId: string): Promise<string[]> {
  if (!queueStack) return [];
  const { rows } = await queueStack.db.store.pool!.query<{ hook_id: string }>('SELECT hook_id FROM deliveries WHERE operation_id = $1 ORDER BY hook_id', [
    operationId,
  ]);
  return rows.map((r) => r.hook_id);
}

/** Queue mode: the worker's ledger rows for an operation in creation order (ids are time-ordered, Q1). */
export async function queuedDeliveries(operationId: string): Promise<{ hookId: string; status: string; lastErrorClass: string | null }[]> {
  if (!queueStack) return [];
  const { rows } = await queueStack.db.store.pool!.query<{ hook_id: string; status: string; last_error_class: string | null }>(
    'SELECT hook_id, status, last_error_class FROM deliveries WHERE operation_id = $1 ORDER BY id',
    [operationId],
  );
  return rows.map((r) => ({ hookId: r.hook_id, status: r.status, lastErrorClass: r.last_error_class }));
}

/** Queue mode: whether the worker flagged the operation for a critical delivery failure (D8, Q4); undefined without a row. */
export async function criticalFlag(operationId: string): Promise<boolean | undefined> {
  if (!queueStack) return undefined;
  const { rows } = await queueStack.db.store.pool!.query<{ flag: boolean }>('SELECT critical_delivery_failure AS flag FROM operations WHERE id = $1', [
    operationId,
  ]);
  return rows[0]?.flag;
}

/** Queue mode: the worker's ledger schema (secret scans cover it too). */
export function queueLedger(): { url: string; schema: string } | undefined {
  return queueStack ? { url: queueStack.db.url, schema: queueStack.db.schema } : undefined;
}

/** The mode of the running block. */
export function mode(): Mode {
  return currentMode;
}

/** Point the environment hooks (E1) at `url`; `events` defaults to an afterToolCall control. */
export function setEnvHooks(env: Env, url: string, opts: { events?: string; mode?: 'ignore' | 'toolCall'; onError?: 'continue' | 'block' } = {}): void {
  env.AGENT_HOOK_WEBHOOK_URL = url;
  env.AGENT_HOOK_WEBHOOK_TOKEN = env.AGENT_HOOK_WEBHOOK_TOKEN ?? 'env-token';
  env.AGENT_HOOK_WEBHOOK_EVENTS = opts.events ?? 'afterToolCall';
  env.AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING = opts.mode ?? 'toolCall';
  if (opts.onError) env.AGENT_HOOK_WEBHOOK_ON_ERROR = opts.onError;
}

export function clearEnvHooks(env: Env): void {
  for (const key of Object.keys(env)) if (key.startsWith('AGENT_HOOK_WEBHOOK_')) delete env[key];
}

/** A caller afterToolCall control hook (R3). */
export function control(id: string, url: string, extra: { matcher?: string; onError?: 'continue' | 'block' } = {}) {
  return {
    id,
    type: 'afterToolCall' as const,
    ...(extra.matcher !== undefined ? { matcher: extra.matcher } : {}),
    webhook: { url, responseHandling: 'toolCall' as const, ...(extra.onError ? { onError: extra.onError } : {}) },
  };
}

/** A full T1 context for a deferred call. */
export function ctx(operationId: string, toolCallId: string, over: Partial<ToolCallHookContext> = {}): ToolCallHookContext {
  return {
    toolCallId,
    assistantMessageId: `msg-${toolCallId}`,
    identifier: 'search',
    apiName: 'query',
    args: { q: 'weather' },
    callIndex: 0,
    stepIndex: 0,
    operationId,
    executor: 'server',
    ...over,
  };
}

export const toolResult = (content: string): ToolCallResult => ({ content, success: true, executionTime: 12 });

export function body(req: RecordedRequest): Record<string, unknown> {
  return JSON.parse(req.body) as Record<string, unknown>;
}

/** Requests to a receiver whose JSON body has this `hookType`. */
export function ofType(r: Receiver, hookType: string): RecordedRequest[] {
  return r.requests.filter((q) => body(q).hookType === hookType);
}

export async function waitFor(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting for condition');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A one-off SQL client on a test schema's URL (search_path = that schema). */
export async function sql<T extends pg.QueryResultRow = pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text, values)).rows;
  } finally {
    await c.end();
  }
}

/** Every row of every table of the schema, as text (secret scans). */
export async function dumpSchema(url: string, schema: string): Promise<string> {
  const tables = await sql<{ table_name: string }>(url, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, [schema]);
  expectNonEmpty(tables.map((t) => t.table_name));
  const parts: string[] = [];
  for (const { table_name } of tables) {
    const rows = await sql<{ row: string }>(url, `SELECT t::text AS row FROM "${schema}"."${table_name}" t`);
    parts.push(`# ${table_name}`, ...rows.map((r) => r.row));
  }
  return parts.join('\n');
}

function expectNonEmpty(names: string[]): void {
  if (names.length === 0) throw new Error('schema has no tables');
}

export { startReceiver, type Receiver };
