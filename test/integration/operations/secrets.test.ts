/**
 * W2/L2: header templates are persisted unresolved and resolved only when sending; no resolved
 * value ever reaches any table of the schema. Real Postgres, real receivers.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import type { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import {
  ALLOW,
  ctx,
  dumpSchema,
  makeDispatcher,
  ofType,
  setEnvHooks,
  startReceiver,
  toolResult,
  type Env,
  type Receiver,
  inMode,
  MODES,
  mode,
  settle,
  queueLedger,
} from './helpers.ts';
import { blockedAfterResult } from '../../../src/decide/blockedResult.ts';
/** R5b: the denial of a tool result from `toolResult()` keeps its executionTime (12), as LobeHub does (issue 28). */
const deniedAfter = (reason: string) => blockedAfterResult(reason, { content: '', success: true, executionTime: 12 });

let t: TestStore;
let ops: OperationStore;
let rx: Receiver;
let envR: Receiver;
let d: HookDispatcher;
const dispatchers: HookDispatcher[] = [];
const hookToken = `hook-secret-${randomBytes(12).toString('hex')}`;
const envToken = `env-secret-${randomBytes(12).toString('hex')}`;
/** SEC-H2: templates are denied by default; the operator lists the two this suite reads. */
const TEMPLATE_ENV = 'HOOK_TOKEN,ROTATED_TOKEN';
const env: Env = { HOOK_TOKEN: hookToken, AGENT_HOOK_WEBHOOK_TOKEN: envToken, HOOKRELAY_TEMPLATE_ENV: TEMPLATE_ENV };

beforeAll(async () => {
  t = await createTestStore('ops_s');
  ops = createOperationStore({ databaseUrl: t.url, templateEnv: TEMPLATE_ENV });
  rx = await startReceiver((req) => (req.path === '/control' ? ALLOW : { status: 204 }));
  envR = await startReceiver(ALLOW);
  setEnvHooks(env, `${envR.url}/env`, { events: 'afterToolCall,onComplete' });
});

afterAll(async () => {
  await ops?.close();
  await Promise.all(dispatchers.map((x) => x.close()));
  await rx?.close();
  await envR?.close();
  await t?.cleanup();
});

// Every test in both dispatcher modes (D8, D9): queue mode through a real in-process worker.
describe.each(MODES)('%s mode', (m) => {
  // Queue mode: the worker resolves header templates and sends environment hooks only from its own
  // environment (W2, E3), and the app's producer and the worker each need HOOKRELAY_TEMPLATE_ENV.
  inMode(m, { env, templateEnv: TEMPLATE_ENV });
  beforeAll(() => {
    d = makeDispatcher(env);
    dispatchers.push(d);
  });
  beforeEach(() => {
    rx.requests.length = 0;
    envR.requests.length = 0;
  });
  afterEach(() => settle()); // queue mode: nothing still on its way into the next test's receivers

  describe('W2/L2 secrets stay templates in Postgres', () => {
    it('W2/L2: resolved header values are sent but never stored in any table; the template is stored', async () => {
      const op = `secret-op-${m}`;
      await ops.createOperation({
        operationId: op,
        userId: 'user-s',
        hooks: [
          {
            id: 'guard',
            type: 'afterToolCall',
            webhook: {
              url: `${rx.url}/control`,
              responseHandling: 'toolCall',
              headers: { authorization: 'Bearer ${HOOK_TOKEN}' },
              allowedEnvVars: ['HOOK_TOKEN'],
            },
          },
          { id: 'done', type: 'onComplete', webhook: { url: `${rx.url}/done`, headers: { 'x-api-key': 'k=${HOOK_TOKEN}' }, allowedEnvVars: ['HOOK_TOKEN'] } },
        ],
      });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const out = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('fine'), context: ctx(op, 'c'), dispatcher: d });
      expect(out.applied).toBe(true);
      await ops.completeOperation({ operationId: op, reason: 'done', dispatcher: d });
      await settle(); // queue mode: the worker has sent the onComplete webhooks

      // The secrets were really sent…
      expect(rx.requests.find((r) => r.path === '/control')?.headers.authorization).toBe(`Bearer ${hookToken}`);
      expect(rx.requests.find((r) => r.path === '/done')?.headers['x-api-key']).toBe(`k=${hookToken}`);
      expect(ofType(envR, 'afterToolCall')[0]?.headers.authorization).toBe(`Bearer ${envToken}`);
      expect(ofType(envR, 'onComplete')).toHaveLength(1);

      // …and never written anywhere in the schema.
      const dump = await dumpSchema(t.url, t.schema);
      expect(dump).toContain('secret-op');
      expect(dump).not.toContain(hookToken);
      expect(dump).not.toContain(envToken);
      expect(dump).toContain('Bearer ${HOOK_TOKEN}');
      expect(dump).toContain('k=${HOOK_TOKEN}');
      expect(dump).not.toContain('AGENT_HOOK_WEBHOOK_TOKEN'); // env hooks are not persisted (L1)
      const ledger = queueLedger();
      if (mode() === 'queue') {
        // The worker's ledger holds the recorded deliveries (templates, never values).
        const rows = await dumpSchema(ledger!.url, ledger!.schema);
        expect(rows).toContain(op);
        expect(rows).toContain('k=${HOOK_TOKEN}');
        expect(rows).not.toContain(hookToken);
        expect(rows).not.toContain(envToken);
      }
    });

    it('W2: an allow-listed variable unset at send time sends nothing; the control fails closed under onError block', async () => {
      const op = `secret-unset-${m}`;
      await ops.createOperation({
        operationId: op,
        hooks: [
          {
            id: 'guard',
            type: 'afterToolCall',
            webhook: {
              url: `${rx.url}/control`,
              responseHandling: 'toolCall',
              onError: 'block',
              headers: { authorization: 'Bearer ${ROTATED_TOKEN}' },
              allowedEnvVars: ['ROTATED_TOKEN'],
            },
          },
        ],
      });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const before = rx.requests.length;
      const out = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('x'), context: ctx(op, 'c'), dispatcher: d });
      expect(out).toEqual({ applied: true, status: 'blocked', result: deniedAfter('hook_control_error') });
      expect(rx.requests.length).toBe(before);
    });
  });
});
