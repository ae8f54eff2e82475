/**
 * SEC-T5 (D10), the smaller bad-input items at `enqueue`, against the real Postgres and Redis
 * (harness.ts) and the CLI's own `main()`:
 * - an event whose `operationId` is not the operation it is stored under → EventValidationError
 *   naming the field (it was stored, and the receiver told the other id);
 * - `occurredAt` outside the years 1-9999 → EventValidationError naming the field (a StorageError
 *   from the INSERT before);
 * - `hookrelay enqueue --file` with either, or over the payload cap → exit 2 naming the file.
 * Nothing is stored in any case.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import { EventValidationError } from '../../../src/contract/errors.ts';
import { createOperationStore } from '../../../src/operations/operationStore.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, TEST_REDIS_URL, type Stack } from './harness.ts';

let stack: Stack;
let rx: Receiver;
beforeAll(async () => {
  stack = await createStack('sec_t5');
  rx = await startReceiver({ status: 204 });
});
afterAll(async () => {
  await stack.cleanup();
  await rx.close();
});

async function count(operationId: string): Promise<number> {
  const r = await stack.db.store.pool!.query<{ n: number }>('select count(*)::int as n from deliveries where operation_id like $1', [operationId]);
  return r.rows[0]!.n;
}

async function eventError(run: () => Promise<unknown>): Promise<EventValidationError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof EventValidationError) return error;
    throw error;
  }
  throw new Error('expected an EventValidationError');
}

const hooks = () => [{ id: 'rx', type: 'onComplete' as const, webhook: { url: `${rx.url}/t5` } }];

describe('SEC-T5 enqueue: the event belongs to its operation', () => {
  it('SEC-T5 D10 an event naming another operationId is refused naming event.operationId; nothing stored', async () => {
    const error = await eventError(() =>
      stack.producer.enqueue({ operationId: 'op-t5-a', type: 'onComplete', event: { operationId: 'op-t5-b', reason: 'done' }, hooks: hooks() }),
    );
    expect(error.message).toContain('event.operationId "op-t5-b" does not match operationId "op-t5-a"');
    for (const other of [42, null, '']) {
      await eventError(() => stack.producer.enqueue({ operationId: 'op-t5-a', type: 'onComplete', event: { operationId: other }, hooks: hooks() }));
    }
    expect(await count('op-t5-%')).toBe(0);
  });

  it('SEC-T5 D10 the same id, or none (filled in), is accepted as before', async () => {
    const same = await stack.producer.enqueue({ operationId: 'op-t5-ok', type: 'onComplete', event: { operationId: 'op-t5-ok' }, hooks: hooks() });
    const none = await stack.producer.enqueue({ operationId: 'op-t5-ok', type: 'onComplete', event: { reason: 'done' }, hooks: hooks() });
    expect([...same.deliveryIds, ...none.deliveryIds]).toHaveLength(2);
    expect(await count('op-t5-ok')).toBe(2);
  });

  it.each([['+275760-09-13T00:00:00.000Z'], ['-000001-01-01T00:00:00.000Z'], ['10000-01-01T00:00:00Z'], ['not a date']])(
    'SEC-T5 D10 occurredAt %j → EventValidationError naming occurredAt, never a StorageError; nothing stored',
    async (occurredAt) => {
      const error = await eventError(() => stack.producer.enqueue({ operationId: 'op-t5-date', type: 'onComplete', event: {}, hooks: hooks(), occurredAt }));
      expect(error.message).toContain('occurredAt must be a valid date between 0001-01-01 and 9999-12-31');
      const asDate = await eventError(() =>
        stack.producer.enqueue({ operationId: 'op-t5-date', type: 'onComplete', event: {}, hooks: hooks(), occurredAt: new Date(occurredAt) }),
      );
      expect(asDate.message).toContain('occurredAt');
      expect(await count('op-t5-date')).toBe(0);
    },
  );

  it('SEC-T5 D10 the edges of the range are stored', async () => {
    for (const occurredAt of ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
      await stack.producer.enqueue({ operationId: 'op-t5-edge', type: 'onComplete', event: {}, hooks: hooks(), occurredAt });
    }
    expect(await count('op-t5-edge')).toBe(2);
  });
});

describe('SEC-T5 CLI enqueue --file', () => {
  let dir: string;
  const saved: Record<string, string | undefined> = {};
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sec-t5-cli-'));
    const env = {
      DATABASE_URL: stack.db.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: stack.queueName,
      HOOKRELAY_QUEUE_PREFIX: stack.prefix,
      HOOKRELAY_MAX_PAYLOAD_BYTES: '1024',
      LOG_LEVEL: 'silent',
    };
    for (const [k, v] of Object.entries(env)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    await createOperationStore({ store: stack.db.store }).createOperation({ operationId: 'op-t5-cli', hooks: hooks() });
  });
  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await rm(dir, { recursive: true, force: true });
  });

  async function run(args: string[]): Promise<{ code: number; stderr: string }> {
    const stderr: string[] = [];
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    });
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      return { code: await main(['node', 'hookrelay', ...args]), stderr: stderr.join('') };
    } finally {
      err.mockRestore();
      out.mockRestore();
      process.exitCode = undefined;
    }
  }

  it.each([
    ['another operationId', { operationId: 'op-t5-other', reason: 'done' }, 'event.operationId "op-t5-other" does not match'],
    ['over the payload cap (1024 bytes)', { reason: 'x'.repeat(5000) }, 'over the cap of 1024 bytes (HOOKRELAY_MAX_PAYLOAD_BYTES)'],
  ])('SEC-T5 CLI: an event file with %s → exit 2 naming the file, one line, nothing stored', async (_label, event, expected) => {
    const file = path.join(dir, 'event.json');
    await writeFile(file, JSON.stringify(event));
    const result = await run(['enqueue', '--operation', 'op-t5-cli', '--type', 'onComplete', '--file', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--file ${file}: `);
    expect(result.stderr).toContain(expected);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(await count('op-t5-cli')).toBe(0);
  });
});
