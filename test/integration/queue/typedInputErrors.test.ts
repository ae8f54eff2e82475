/**
 * SEC-6 (issue 24), the smaller items: typed errors instead of raw ones at every entry, against
 * the real Postgres and Redis (harness.ts) and the CLI's own `main()`:
 * - a hook `body` nested 10,000 deep → HookConfigError naming the path (MAX_BODY_DEPTH = 64);
 * - a caller hook with the reserved id prefix `server-env-webhook:` → the same HookConfigError at
 *   producer.enqueue as at register (E4); hookrelay's own environment hooks still pass;
 * - CLI numbers and times out of range → exit 2 naming the flag; a NUL in an `enqueue` event file
 *   → exit 2 naming the file and the path, nothing stored.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import { HookConfigError } from '../../../src/contract/errors.ts';
import { MAX_BODY_DEPTH } from '../../../src/contract/webhook.ts';
import { createOperationStore } from '../../../src/operations/operationStore.ts';
import { createRemoteInterceptor } from '../../../src/send/remoteInterceptor.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, TEST_REDIS_URL, type Stack } from './harness.ts';

const RESERVED_ID = 'server-env-webhook:onComplete';

function nested(depth: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let node = root;
  for (let i = 0; i < depth; i++) {
    const child: Record<string, unknown> = {};
    node.a = child;
    node = child;
  }
  return root;
}

async function hookConfigError(run: () => unknown): Promise<HookConfigError> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(HookConfigError);
    return error as HookConfigError;
  }
  throw new Error('expected a HookConfigError');
}

describe('SEC-6 typed errors for bad input: deep bodies, reserved hook ids, CLI numbers', () => {
  let stack: Stack;
  let rx: Receiver;
  beforeAll(async () => {
    stack = await createStack('sec6');
    rx = await startReceiver({ status: 204 });
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
  });

  const count = async (like: string) =>
    (await stack.db.store.pool!.query<{ n: number }>('select count(*)::int as n from deliveries where operation_id like $1', [like])).rows[0]!.n;

  it('SEC-6 deep body: 10,000 levels → HookConfigError naming webhook.body… at register, createOperation, producer.enqueue and queue-mode dispatch; nothing stored', async () => {
    const deep = nested(10_000);
    const hook = { id: 'deep', type: 'onComplete' as const, webhook: { url: 'https://hooks.example.com/in', body: deep } };
    const local = new HookDispatcher({ mode: 'local', env: {}, logger: silentLogger() });
    const queued = new HookDispatcher({ mode: 'queue', producer: stack.producer, env: {}, logger: silentLogger() });
    const ops = createOperationStore({ store: stack.db.store });
    try {
      const errors = [
        await hookConfigError(() => local.register('op-sec6-deep-r', [hook])),
        await hookConfigError(() => queued.register('op-sec6-deep-q', [hook])),
        await hookConfigError(() => ops.createOperation({ operationId: 'op-sec6-deep-c', hooks: [hook] })),
        await hookConfigError(() => stack.producer.enqueue({ operationId: 'op-sec6-deep-e', type: 'onComplete', event: {}, hooks: [hook] })),
      ];
      for (const error of errors) {
        expect(error.hookId).toBe('deep');
        expect(error.issues).toHaveLength(1);
        expect(error.issues[0]!.path).toBe(`webhook.body${'.a'.repeat(MAX_BODY_DEPTH)}`);
        expect(error.issues[0]!.message).toBe(`must not nest objects/arrays more than ${MAX_BODY_DEPTH} levels deep`);
      }
    } finally {
      await queued.close();
    }
    expect(await count('op-sec6-deep-%')).toBe(0);
  });

  it('SEC-6 deep body: exactly MAX_BODY_DEPTH levels is accepted; one more is refused', async () => {
    const ok = nested(MAX_BODY_DEPTH - 1); // the body itself is level 1
    const local = new HookDispatcher({ mode: 'local', env: {}, logger: silentLogger() });
    expect(() =>
      local.register('op-sec6-depth-ok', [{ id: 'ok', type: 'onComplete', webhook: { url: 'https://hooks.example.com/in', body: ok } }]),
    ).not.toThrow();
    const error = await hookConfigError(() =>
      local.register('op-sec6-depth-bad', [{ id: 'bad', type: 'onComplete', webhook: { url: 'https://hooks.example.com/in', body: nested(MAX_BODY_DEPTH) } }]),
    );
    expect(error.issues[0]!.path).toBe(`webhook.body${'.a'.repeat(MAX_BODY_DEPTH)}`);
    // Arrays count the same way.
    let list: unknown[] = [];
    const top = { list };
    for (let i = 0; i < 10_000; i++) {
      const inner: unknown[] = [];
      list.push(inner);
      list = inner;
    }
    const arrays = await hookConfigError(() =>
      local.register('op-sec6-depth-arr', [{ id: 'arr', type: 'onComplete', webhook: { url: 'https://hooks.example.com/in', body: top } }]),
    );
    expect(arrays.issues[0]!.path).toMatch(/^webhook\.body\.list(\[0\])+$/);
  });

  it('SEC-6 deep body: createRemoteInterceptor answers a deep config with a HookConfigError naming the field, not a RangeError', async () => {
    const deep = nested(10_000);
    const withBody = await hookConfigError(() => createRemoteInterceptor({ url: 'https://hooks.example.com/v', body: deep } as never, { env: {} }));
    expect(withBody.message).toContain('body');
    const inHeaders = await hookConfigError(() => createRemoteInterceptor({ url: 'https://hooks.example.com/v', headers: { x: deep } } as never, { env: {} }));
    expect(inHeaders.issues.map((i) => i.path)).toEqual(['headers.x']);
  });

  it('SEC-6 reserved id: producer.enqueue and enqueueMany refuse a caller hook with the server-env-webhook: prefix, as register does (same error, same path)', async () => {
    const hook = { id: RESERVED_ID, type: 'onComplete' as const, webhook: { url: `${rx.url}/forged` } };
    const local = new HookDispatcher({ mode: 'local', env: {}, logger: silentLogger() });
    const ops = createOperationStore({ store: stack.db.store });
    const errors = [
      await hookConfigError(() => local.register('op-sec6-id-r', [hook])),
      await hookConfigError(() => ops.createOperation({ operationId: 'op-sec6-id-c', hooks: [hook] })),
      await hookConfigError(() => stack.producer.enqueue({ operationId: 'op-sec6-id-e', type: 'onComplete', event: {}, hooks: [hook] })),
      await hookConfigError(() => stack.producer.enqueueMany([{ operationId: 'op-sec6-id-m', type: 'onComplete', event: {}, hooks: [hook] }])),
      // A copy of a hook hookrelay built from the environment is still a caller's object.
      await hookConfigError(() =>
        stack.producer.enqueue({
          operationId: 'op-sec6-id-copy',
          type: 'onComplete',
          event: {},
          hooks: [
            JSON.parse(
              JSON.stringify({
                id: RESERVED_ID,
                type: 'onComplete',
                webhook: {
                  url: `${rx.url}/forged`,
                  headers: { authorization: 'Bearer ${AGENT_HOOK_WEBHOOK_TOKEN}' },
                  allowedEnvVars: ['AGENT_HOOK_WEBHOOK_TOKEN'],
                },
              }),
            ),
          ],
        }),
      ),
    ];
    for (const error of errors) {
      expect(error.issues).toContainEqual({ path: 'id', message: 'ids starting with "server-env-webhook:" are reserved for environment hooks' });
    }
    expect(await count('op-sec6-id-%')).toBe(0);
  });

  it("SEC-6 reserved id: the queue-mode dispatcher's own environment hooks still reach the producer with their reserved ids", async () => {
    const env = { AGENT_HOOK_WEBHOOK_URL: `${rx.url}/env`, AGENT_HOOK_WEBHOOK_TOKEN: 'env-token-sec6', AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete' };
    const d = new HookDispatcher({ mode: 'queue', producer: stack.producer, env, logger: silentLogger() });
    try {
      d.register('op-sec6-env', [{ id: 'caller', type: 'onComplete', webhook: { url: `${rx.url}/caller` } }]);
      await d.dispatch('op-sec6-env', 'onComplete', { operationId: 'op-sec6-env' });
    } finally {
      await d.close();
    }
    const rows = await stack.db.store.pool!.query<{ hook_id: string }>('select hook_id from deliveries where operation_id = $1 order by hook_id', [
      'op-sec6-env',
    ]);
    expect(rows.rows.map((r) => r.hook_id)).toEqual(['caller', RESERVED_ID]);
  });

  describe('SEC-6 CLI', () => {
    let dir: string;
    let stderr: string[];
    const saved: Record<string, string | undefined> = {};
    const envFor = () => ({
      DATABASE_URL: stack.db.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: stack.queueName,
      HOOKRELAY_QUEUE_PREFIX: stack.prefix,
      LOG_LEVEL: 'silent',
    });

    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'sec6-cli-'));
      for (const [k, v] of Object.entries(envFor())) {
        saved[k] = process.env[k];
        process.env[k] = v;
      }
    });
    afterAll(async () => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await rm(dir, { recursive: true, force: true });
    });

    async function run(args: string[]): Promise<{ code: number; stderr: string }> {
      stderr = [];
      const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
        stderr.push(String(chunk));
        return true;
      });
      const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
      try {
        const code = await main(['node', 'hookrelay', ...args]);
        return { code, stderr: stderr.join('') };
      } finally {
        err.mockRestore();
        out.mockRestore();
        process.exitCode = undefined;
      }
    }

    const OUT_OF_RANGE: [args: string[], flag: string][] = [
      [['deliveries', 'list', '--since', '99999999999999d'], '--since'],
      [['deliveries', 'list', '--until', '99999999999999d'], '--until'],
      [['deliveries', 'list', '--since', '+275760-09-13T00:00:00Z'], '--since'],
      [['deliveries', 'list', '--until', '10000-01-01T00:00:00Z'], '--until'],
      [['deliveries', 'list', '--limit', '1e20'], '--limit'],
      [['deliveries', 'list', '--limit', '99999999999999999999'], '--limit'],
      [['deliveries', 'list', '--limit', '2147483648'], '--limit'],
      [['deliveries', 'list', '--limit', '0x10'], '--limit'],
      [['deliveries', 'list', '--limit', '0'], '--limit'],
      [['replay', '--status', 'failed', '--since', '99999999999999d', '--dry-run'], '--since'],
      [['replay', '--status', 'failed', '--rate', '1e20', '--dry-run'], '--rate'],
      [['records', 'list', '--limit', '1e20'], '--limit'],
      [['console', '--port', '65536'], '--port'],
      [['console', '--port', '1e3'], '--port'],
      [['endpoints', 'limit', 'https://hooks.example.com/in', '--concurrency', '1e20'], '--concurrency'],
      [['endpoints', 'limit', 'https://hooks.example.com/in', '--rate', '1e20'], '--rate'],
      [['worker', '--concurrency', '1e20'], '--concurrency'],
    ];

    it.each(OUT_OF_RANGE)('SEC-6 CLI: %j → exit 2 naming %s, one line', async (args, flag) => {
      const result = await run(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(flag);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).not.toMatch(/Invalid time value|storage error|bigint|out of range for type/i);
    });

    it('SEC-6 CLI: the largest --limit accepted still runs (exit 0)', async () => {
      expect((await run(['deliveries', 'list', '--limit', '2147483647', '--json'])).code).toBe(0);
    });

    it('SEC-6 CLI: a NUL in an `enqueue` event file → exit 2 naming the file and the path, nothing stored', async () => {
      const ops = createOperationStore({ store: stack.db.store });
      await ops.createOperation({ operationId: 'op-sec6-cli', hooks: [{ id: 'rx', type: 'onComplete', webhook: { url: `${rx.url}/cli` } }] });
      const file = path.join(dir, 'nul.json');
      await writeFile(file, JSON.stringify({ note: 'before\u0000after' }));
      const result = await run(['enqueue', '--operation', 'op-sec6-cli', '--type', 'onComplete', '--file', file]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`--file ${file}`);
      expect(result.stderr).toContain('event.note');
      expect(result.stderr).toMatch(/NUL/);
      expect(result.stderr).not.toMatch(/storage error|Failed query|before/);
      expect(await count('op-sec6-cli')).toBe(0);
    });
  });
});
