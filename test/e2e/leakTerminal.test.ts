/**
 * LEAK-3 (W7): caller text cannot drive an operator's terminal. At ingest (register, enqueue, the
 * operation store) an operation id or hook id holding ESC, an OSC sequence, a C1 control or a
 * bidi override is refused with an error naming the field. Rows that already hold such ids (an
 * older version, a direct write) are printed by `deliveries list|show` with every control
 * escaped; `--json` stays exact JSON that parses back to the stored ids. An unknown
 * `HOOKRELAY_*` variable whose name holds ESC is warned about escaped. The bin as a process; real
 * Postgres and Redis.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventValidationError, HookConfigError } from '../../src/contract/errors.ts';
import { HookDispatcher } from '../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../src/observability/logger.ts';
import { createOperationStore } from '../../src/operations/operationStore.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { runCli } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';

/** OSC 52: write "pwned" to the operator's clipboard. */
const OSC52 = '\u001b]52;c;cHduZWQ=\u0007';
/** Erase the line and go back to its start, then print a fake row: a failed delivery reads "delivered". */
const ERASE = '\u001b[2K\r';
const HOSTILE_OPERATION = `op-${OSC52}x`;
const HOSTILE_HOOK = `crm${ERASE}dlv_0000  delivered\u009b31m\u202Eevil`;
/** Any byte a terminal acts on: C0 but LF, DEL, C1, bidi controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding raw controls in output is the point
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const cli = (args: string[], env: Record<string, string>) => runCli(args, env);

describe('LEAK-3 (W7): ids with terminal controls are refused at ingest', () => {
  let t: TestStore;
  let producer: HookProducer;
  const queueName = `leak3i-${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    t = await createTestStore('leak3i');
    producer = createHookProducer({ store: t.store, redisUrl: TEST_REDIS_URL, queueName, env: {} });
  });
  afterAll(async () => {
    await producer?.close();
    await deleteKeys(queueKeys(queueName));
    await t?.cleanup();
  });

  const hook = (id: string) => ({ id, type: 'onComplete' as const, webhook: { url: 'https://example.com/hook' } });

  it('LEAK-3 (W7): enqueue refuses an operationId with an OSC sequence, naming the field; nothing is stored', async () => {
    const refused = producer.enqueue({ operationId: HOSTILE_OPERATION, type: 'onComplete', event: {}, hooks: [hook('h')] });
    await expect(refused).rejects.toBeInstanceOf(EventValidationError);
    await expect(refused).rejects.toThrow(/^enqueue: operationId contains a control character \(U\+001B at index 3\)/);
    const { rows } = await t.store.pool!.query<{ n: number }>('select count(*)::int as n from deliveries');
    expect(rows[0]!.n).toBe(0);
  });

  it('LEAK-3 (W7): enqueue and register refuse a hook id with ESC/C1/bidi controls, naming the field `id`', async () => {
    for (const id of [HOSTILE_HOOK, 'a\u009b31m', 'b\u202Ec', 'tab\there']) {
      const refused = producer.enqueue({ operationId: 'op-ok', type: 'onComplete', event: {}, hooks: [hook(id)] });
      await expect(refused).rejects.toBeInstanceOf(HookConfigError);
      await expect(refused).rejects.toThrow(/id: contains a control character/);
      const dispatcher = new HookDispatcher({ logger: silentLogger() });
      expect(() => dispatcher.register('op-ok', [hook(id)])).toThrow(HookConfigError);
    }
  });

  it('LEAK-3 (W7): register and the operation store refuse an operation id with controls', async () => {
    const dispatcher = new HookDispatcher({ logger: silentLogger() });
    expect(() => dispatcher.register(HOSTILE_OPERATION, [hook('h')])).toThrow(/^register: operationId contains a control character/);
    const ops = createOperationStore({ store: t.store });
    await expect(ops.createOperation({ operationId: HOSTILE_OPERATION })).rejects.toThrow(/^createOperation: operationId contains a control character/);
    await expect(ops.createOperation({ operationId: 'op-child', parentOperationId: `p${ERASE}` })).rejects.toThrow(
      /^createOperation: parentOperationId contains/,
    );
    const { rows } = await t.store.pool!.query<{ n: number }>('select count(*)::int as n from operations');
    expect(rows[0]!.n).toBe(0);
  });
});

describe('LEAK-3 (W7): the CLI escapes controls in what it prints', () => {
  let t: TestStore;
  let producer: HookProducer;
  let id: string;
  const queueName = `leak3o-${randomBytes(4).toString('hex')}`;
  const env = () => ({ DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queueName });

  beforeAll(async () => {
    t = await createTestStore('leak3o');
    producer = createHookProducer({ store: t.store, redisUrl: TEST_REDIS_URL, queueName, env: {} });
    const r = await producer.enqueue({
      operationId: 'op-plain',
      type: 'onComplete',
      event: {},
      hooks: [{ id: 'plain', type: 'onComplete', webhook: { url: 'https://example.com/hook' } }],
    });
    id = r.deliveryIds[0]!;
    // As an older version (or a direct write) left it: hostile ids and a failed attempt echoing them.
    const attempts = [
      {
        attempt: 1,
        at: new Date().toISOString(),
        transport: 'fetch',
        outcome: 'failed',
        errorClass: 'http_error',
        httpStatus: 422,
        durationMs: 5,
        responseExcerpt: `bad ${OSC52}`,
        generation: 0,
        requestHeaders: { [`x-${ERASE}`]: `v${OSC52}` },
      },
    ];
    await t.store.pool!.query(
      "update deliveries set operation_id = $1, hook_id = $2, status = 'failed', last_error_class = 'http_error', last_http_status = 422, attempts = $3::jsonb, attempt_count = 1 where id = $4",
      [HOSTILE_OPERATION, HOSTILE_HOOK, JSON.stringify(attempts), id],
    );
  });
  afterAll(async () => {
    await producer?.close();
    await deleteKeys(queueKeys(queueName));
    await t?.cleanup();
  });

  it('LEAK-3 (W7): deliveries list prints the hostile ids escaped (\\x1b, \\r, \\x9b, \\u{202E}); no raw control reaches the terminal', async () => {
    const r = await cli(['deliveries', 'list'], env());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('op-\\x1b]52;c;cHduZWQ=\\x07x');
    expect(r.stdout).toContain('crm\\x1b[2K\\rdlv_0000  delivered\\x9b31m\\u{202E}evil');
    // One header line and one row: the fake row did not become a line of its own.
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(2);
  });

  it('LEAK-3 (W7): deliveries show escapes the ids, the excerpt and the headers sent', async () => {
    const r = await cli(['deliveries', 'show', id], env());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('operation op-\\x1b]52;c;cHduZWQ=\\x07x');
    expect(r.stdout).toContain('sent x-\\x1b[2K\\r: v\\x1b]52;c;cHduZWQ=\\x07');
  });

  it('LEAK-3 (W7): --json stays exact JSON: it parses back to the stored ids, with no raw control on the terminal', async () => {
    for (const args of [
      ['deliveries', 'list', '--json'],
      ['deliveries', 'show', id, '--json'],
    ]) {
      const r = await cli(args, env());
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(RAW_CONTROL);
      const parsed = JSON.parse(r.stdout) as { operationId: string; hookId: string } | { operationId: string; hookId: string }[];
      const d = Array.isArray(parsed) ? parsed[0]! : parsed;
      expect(d.operationId).toBe(HOSTILE_OPERATION);
      expect(d.hookId).toBe(HOSTILE_HOOK);
    }
  });

  it('LEAK-3 (W7): an unknown HOOKRELAY_* variable whose name holds ESC is warned about escaped', async () => {
    // OSC 0 (set the window title): a variable name cannot hold `=`.
    const r = await cli(['deliveries', 'list', '--json'], { ...env(), 'HOOKRELAY_X\u001b]0;pwned\u0007': '1' });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(RAW_CONTROL);
    expect(r.stderr).toContain('HOOKRELAY_X\\x1b]0;pwned\\x07 is not a hookrelay setting');
  });
});
