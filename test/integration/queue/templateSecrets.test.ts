/**
 * SEC-H2 (issue 24): template secrets. The reproduction — `${OTEL_EXPORTER_OTLP_HEADERS}` and
 * `${PGPASSWORD}` under HOOKRELAY_TEMPLATE_ENV='*' — through all four entries (register,
 * producer.enqueue, createOperation, createRemoteInterceptor) and the real worker (ledger rows and
 * job data an older producer left), with a real receiver on 127.0.0.1: every one is refused with a
 * HookConfigError naming the field and the variable, never its value, and nothing is sent. Also:
 * malformed templates, and the deny-by-default pattern.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookConfigError } from '../../../src/contract/errors.ts';
import type { ParsedSerializedHook } from '../../../src/contract/hook.ts';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { createOperationStore } from '../../../src/operations/operationStore.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import { createRemoteInterceptor } from '../../../src/send/remoteInterceptor.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { addDeliveryJobs } from '../../../src/queue/jobs.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import type { HookProducer } from '../../../src/queue/types.ts';
import { insertDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { captureLogger, rejection } from '../../unit/dispatch/helpers.ts';
import { createStack, TEST_REDIS_URL, waitFor, type Stack } from './harness.ts';

/** What the worker's own SDKs read: present in the environment every entry resolves from. */
const SDK_ENV = {
  OTEL_EXPORTER_OTLP_HEADERS: 'authorization=OTEL-SECRET-h2a1',
  PGPASSWORD: 'PG-SECRET-h2b2',
  AWS_SECRET_ACCESS_KEY: 'AWS-SECRET-h2c3',
  DATABASE_URL: 'postgres://ledger:DB-SECRET-h2d4@db.internal:5432/hookrelay',
  NODE_OPTIONS: '--require /tmp/NODE-SECRET-h2e5.js',
  HOOK_TOKEN: 'hook-token-ok-h2f6',
};
const SECRET_VALUES = Object.entries(SDK_ENV)
  .filter(([k]) => k !== 'HOOK_TOKEN')
  .map(([, v]) => v);
/** The reproduction's two names, then one of each other family. */
const STOLEN = ['OTEL_EXPORTER_OTLP_HEADERS', 'PGPASSWORD'] as const;
const MORE_RESERVED = ['AWS_SECRET_ACCESS_KEY', 'NODE_OPTIONS', 'GOOGLE_APPLICATION_CREDENTIALS', 'AZURE_CLIENT_SECRET', 'REDISCLI_AUTH', 'QSTASH_TOKEN'];
/** Unterminated, empty, not a name, nested: each refused at registration, its text never echoed. */
const MALFORMED = ['${DATABASE_URL', 'Bearer ${}', '${1X}', '${${HOOK_TOKEN}}', 'x ${HOOK_TOKEN} ${PGPASSWORD'];

function expectNoSecret(text: string): void {
  for (const value of SECRET_VALUES) expect(text).not.toContain(value);
}

function expectConfigError(error: unknown, variable: string | undefined, paths: string[]): HookConfigError {
  expect(error).toBeInstanceOf(HookConfigError);
  const e = error as HookConfigError;
  expect(e.issues.map((i) => i.path).sort()).toEqual([...paths].sort());
  if (variable !== undefined) expect(e.message).toContain(variable);
  expectNoSecret(`${e.message} ${JSON.stringify(e.issues)}`);
  return e;
}

describe("SEC-H2 template secrets under HOOKRELAY_TEMPLATE_ENV='*' (real worker, real receiver)", () => {
  let stack: Stack;
  let rx: Receiver;
  let producer: HookProducer;
  let transport: FetchTransport;
  const log = captureLogger();

  beforeAll(async () => {
    stack = await createStack('sech2');
    rx = await startReceiver({ status: 204 });
    transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
    // The worker's operator opened every unreserved name; its environment holds the SDK secrets.
    await stack.startWorker({ HOOKRELAY_TEMPLATE_ENV: '*' }, { env: { ...SDK_ENV }, logger: log.logger });
    producer = createHookProducer({
      store: stack.db.store,
      redisUrl: TEST_REDIS_URL,
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      env: { ...SDK_ENV, HOOKRELAY_TEMPLATE_ENV: '*' },
    });
  });
  afterAll(async () => {
    await producer.close();
    await transport.close();
    await stack.cleanup();
    await rx.close();
  });

  const hookReading = (variable: string, path = '/steal') => ({
    id: `reads-${variable.toLowerCase()}`,
    type: 'onComplete' as const,
    webhook: { url: `${rx.url}${path}`, headers: { 'x-stolen': `\${${variable}}` }, allowedEnvVars: [variable] },
  });
  const rowsOf = async (operationId: string) =>
    (await stack.db.store.pool!.query<{ id: string }>('select id from deliveries where operation_id = $1', [operationId])).rows;
  const settled = async (id: string) => {
    await waitFor(async () => ['failed', 'delivered'].includes((await producer.getDelivery(id))?.status ?? ''), 15_000, `delivery ${id}`);
    return (await producer.getDelivery(id))!;
  };
  /** A clean delivery through the same worker, so "nothing sent" is checked after the worker had its chance. */
  async function sentinel(name: string): Promise<void> {
    const { deliveryIds } = await producer.enqueue({
      operationId: `op-sentinel-${name}`,
      type: 'onComplete',
      event: {},
      hooks: [hookReading('HOOK_TOKEN', `/sentinel-${name}`)],
    });
    expect((await settled(deliveryIds[0]!)).status).toBe('delivered');
    expect(rx.requests.find((r) => r.path === `/sentinel-${name}`)!.headers['x-stolen']).toBe(SDK_ENV.HOOK_TOKEN);
  }

  it.each(STOLEN)(
    'SEC-H2 reproduction: ${%s} is refused by register, producer.enqueue, createOperation and createRemoteInterceptor; nothing reaches the receiver',
    async (variable) => {
      const paths = ['webhook.allowedEnvVars[0]', 'webhook.headers.x-stolen'];
      // register (local mode: it would send from this process)
      const local = new HookDispatcher({ env: { ...SDK_ENV, HOOKRELAY_TEMPLATE_ENV: '*' }, allowedCidrs: '127.0.0.1/32', logger: log.logger });
      try {
        expectConfigError(
          thrownBy(() => local.register('op-local', [hookReading(variable)])),
          variable,
          paths,
        );
        await local.dispatch('op-local', 'onComplete', { operationId: 'op-local' });
      } finally {
        await local.close();
      }
      // producer.enqueue
      const opQ = `op-enqueue-${variable}`;
      expectConfigError(
        await rejection(producer.enqueue({ operationId: opQ, type: 'onComplete', event: {}, hooks: [hookReading(variable)] })),
        variable,
        paths,
      );
      expect(await rowsOf(opQ)).toEqual([]);
      // createOperation
      const ops = createOperationStore({ store: stack.db.store, templateEnv: '*' });
      const opC = `op-create-${variable}`;
      expectConfigError(await rejection(ops.createOperation({ operationId: opC, hooks: [hookReading(variable)] })), variable, paths);
      expect(await ops.getOperation(opC)).toBeUndefined();
      // createRemoteInterceptor
      const remote = { url: `${rx.url}/steal`, headers: { 'x-stolen': `\${${variable}}` }, allowedEnvVars: [variable] };
      expectConfigError(
        thrownBy(() => createRemoteInterceptor(remote, { fetchTransport: transport, env: { ...SDK_ENV, HOOKRELAY_TEMPLATE_ENV: '*' } })),
        variable,
        ['allowedEnvVars[0]', 'headers.x-stolen'],
      );
      await sentinel(variable);
      expect(rx.requests.filter((r) => r.path === '/steal')).toEqual([]);
    },
  );

  it.each(MORE_RESERVED)('SEC-H2 never templatable: ${%s} is refused at register even under "*"', (variable) => {
    const d = new HookDispatcher({ env: { HOOKRELAY_TEMPLATE_ENV: '*' }, logger: log.logger });
    try {
      expectConfigError(
        thrownBy(() => d.register('op', [hookReading(variable)])),
        variable,
        ['webhook.allowedEnvVars[0]', 'webhook.headers.x-stolen'],
      );
    } finally {
      void d.close();
    }
  });

  /** A ledger row written directly, as an older producer (or a hand-edited row) would have left it. */
  async function insertRow(operationId: string, hook: unknown, jobHook?: unknown): Promise<string> {
    const id = newDeliveryId();
    await insertDeliveries(stack.db.store.db, [
      {
        id,
        operationId,
        eventType: 'onComplete',
        hookId: (hook as { id: string }).id,
        hook: hook as ParsedSerializedHook,
        transport: 'fetch',
        payload: { operationId },
        idempotencyKey: null,
        occurredAt: new Date(),
      },
    ]);
    const attempt =
      jobHook === undefined
        ? undefined
        : { operationId, hook: JSON.stringify(jobHook), body: JSON.stringify({ operationId }), attemptCount: 0, generationAttemptCount: 0 };
    await addDeliveryJobs(stack.worker().queue, [{ deliveryId: id, generation: 0, ...(attempt ? { attempt } : {}) }]);
    return id;
  }
  const storedHook = (variable: string, header: string, path: string) => ({
    id: `old-${path.slice(1)}`,
    type: 'onComplete' as const,
    webhook: { ...WebhookConfigSchema.parse({ url: `${rx.url}${path}` }), headers: { 'x-stolen': header }, allowedEnvVars: [variable] },
  });

  it.each([...STOLEN, 'AWS_SECRET_ACCESS_KEY'])(
    'SEC-H2 worker re-check: a ledger row from an older producer reading ${%s} fails as configuration under "*", nothing sent',
    async (variable) => {
      const path = `/old-row-${variable.toLowerCase()}`;
      const id = await insertRow(`op-row-${variable}`, storedHook(variable, `\${${variable}}`, path));
      expect(await settled(id)).toMatchObject({ status: 'failed', lastErrorClass: 'configuration', attemptCount: 1 });
      expect(rx.requests.filter((r) => r.path === path)).toEqual([]);
    },
  );

  it.each(STOLEN)(
    'SEC-H2 worker re-check: job data from an older producer reading ${%s} (the ledger row clean) fails as configuration, nothing sent',
    async (variable) => {
      const path = `/old-job-${variable.toLowerCase()}`;
      const clean = { id: 'clean', type: 'onComplete' as const, webhook: WebhookConfigSchema.parse({ url: `${rx.url}${path}` }) };
      const id = await insertRow(`op-job-${variable}`, clean, storedHook(variable, `\${${variable}}`, path));
      expect(await settled(id)).toMatchObject({ status: 'failed', lastErrorClass: 'configuration' });
      expect(rx.requests.filter((r) => r.path === path)).toEqual([]);
    },
  );

  it('SEC-H2 worker re-check: an unterminated ${DATABASE_URL in a stored row fails as configuration, sent neither resolved nor raw', async () => {
    const id = await insertRow('op-row-unterminated', storedHook('HOOK_TOKEN', 'Bearer ${DATABASE_URL', '/old-unterminated'));
    expect(await settled(id)).toMatchObject({ status: 'failed', lastErrorClass: 'configuration' });
    expect(rx.requests.filter((r) => r.path === '/old-unterminated')).toEqual([]);
  });

  it.each(MALFORMED)('SEC-H2 malformed template %j is refused by all four entries, its text never echoed', async (value) => {
    const hook = {
      id: 'malformed',
      type: 'onComplete' as const,
      webhook: { url: `${rx.url}/malformed`, headers: { authorization: value }, allowedEnvVars: ['HOOK_TOKEN'] },
    };
    const paths = ['webhook.headers.authorization'];
    const check = (error: unknown, p = paths) => {
      const e = expectConfigError(error, undefined, p);
      expect(e.issues[0]!.message).toMatch(/malformed/);
      expect(e.message).not.toContain(value);
    };
    const d = new HookDispatcher({ env: { ...SDK_ENV, HOOKRELAY_TEMPLATE_ENV: '*' }, logger: log.logger });
    try {
      check(thrownBy(() => d.register('op-m', [hook])));
    } finally {
      await d.close();
    }
    check(await rejection(producer.enqueue({ operationId: 'op-malformed', type: 'onComplete', event: {}, hooks: [hook] })));
    expect(await rowsOf('op-malformed')).toEqual([]);
    check(await rejection(createOperationStore({ store: stack.db.store, templateEnv: '*' }).createOperation({ operationId: 'op-m2', hooks: [hook] })));
    check(
      thrownBy(() =>
        createRemoteInterceptor(
          { url: `${rx.url}/malformed`, headers: { authorization: value }, allowedEnvVars: ['HOOK_TOKEN'] },
          { fetchTransport: transport, env: { ...SDK_ENV, HOOKRELAY_TEMPLATE_ENV: '*' } },
        ),
      ),
      ['headers.authorization'],
    );
  });

  it('SEC-H2 no secret value in the worker log, the ledger or Redis', async () => {
    const dump = await stack.db.store.pool!.query<{ t: string }>('select d::text as t from deliveries d');
    const redis = (await stack.redisKeys()).join('\n');
    expectNoSecret(`${log.text()}\n${dump.rows.map((r) => r.t).join('\n')}\n${redis}`);
    expect(log.lines.length).toBeGreaterThan(0); // the worker did log the failures (by class)
  });
});

describe('SEC-H2 deny by default: HOOKRELAY_TEMPLATE_ENV unset allows no template', () => {
  it('SEC-H2 default none: register, createOperation and createRemoteInterceptor refuse ${HOOK_TOKEN} until the operator lists it', async () => {
    const hook = {
      id: 'h',
      type: 'onComplete' as const,
      webhook: { url: 'https://hooks.example.com/x', headers: { a: '${HOOK_TOKEN}' }, allowedEnvVars: ['HOOK_TOKEN'] },
    };
    const unset = new HookDispatcher({ env: { HOOK_TOKEN: 'v' }, logger: captureLogger().logger });
    const listed = new HookDispatcher({ env: { HOOK_TOKEN: 'v', HOOKRELAY_TEMPLATE_ENV: 'HOOK_TOKEN' }, logger: captureLogger().logger });
    try {
      const e = expectConfigError(
        thrownBy(() => unset.register('op', [hook])),
        'HOOK_TOKEN',
        ['webhook.allowedEnvVars[0]'],
      );
      expect(e.message).toMatch(/HOOK_TOKEN is not allowed by HOOKRELAY_TEMPLATE_ENV/);
      expect(() => listed.register('op', [hook])).not.toThrow();
    } finally {
      await unset.close();
      await listed.close();
    }
    const saved = process.env.HOOKRELAY_TEMPLATE_ENV;
    delete process.env.HOOKRELAY_TEMPLATE_ENV;
    try {
      const ops = createOperationStore({ databaseUrl: 'postgres://unused.invalid/x' }); // refused before any connection
      expectConfigError(await rejection(ops.createOperation({ operationId: 'op', hooks: [hook] })), 'HOOK_TOKEN', ['webhook.allowedEnvVars[0]']);
      await ops.close();
    } finally {
      if (saved !== undefined) process.env.HOOKRELAY_TEMPLATE_ENV = saved;
    }
    expectConfigError(
      thrownBy(() =>
        createRemoteInterceptor({ url: 'https://policy.example.com/v', headers: { a: '${HOOK_TOKEN}' }, allowedEnvVars: ['HOOK_TOKEN'] }, { env: {} }),
      ),
      'HOOK_TOKEN',
      ['allowedEnvVars[0]'],
    );
  });
});

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}
