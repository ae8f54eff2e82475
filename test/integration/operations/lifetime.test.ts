/**
 * L1–L5 (configuration lifetime) through `createOperationStore().publishDeferredResult`,
 * real Postgres, real receivers.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOperationStore, DeferredContextError, type OperationStore } from '../../../src/operations/operationStore.ts';
import { CriticalHookDeliveryError, HookConfigError } from '../../../src/contract/errors.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import {
  ALLOW,
  body,
  CLOSED_URL,
  control,
  ctx,
  deny,
  makeDispatcher,
  setEnvHooks,
  sql,
  startReceiver,
  toolResult,
  type Env,
  type Receiver,
  inMode,
  MODES,
  mode,
  queuedHookIds,
  settle,
} from './helpers.ts';
import { blockedAfterResult } from '../../../src/decide/blockedResult.ts';
/** R5b: the denial of a tool result from `toolResult()` keeps its executionTime (12), as LobeHub does (issue 28). */
const deniedAfter = (reason: string) => blockedAfterResult(reason, { content: '', success: true, executionTime: 12 });

let t: TestStore;
let ops: OperationStore;
let rx: Receiver; // caller controls; the path tells which one was asked
let envR: Receiver;
const dispatchers: HookDispatcher[] = [];
let n = 0;
const nextOp = (label: string) => `l-${label}-${++n}`;

function dispatcher(env: Env = {}): HookDispatcher {
  const d = makeDispatcher(env);
  dispatchers.push(d);
  return d;
}

function envWithControl(): Env {
  const env: Env = {};
  setEnvHooks(env, `${envR.url}/env`);
  return env;
}

async function placeholderResult(operationId: string, toolCallId = 'c'): Promise<unknown> {
  return (await ops.getPlaceholder({ operationId, toolCallId }))?.result;
}

beforeAll(async () => {
  t = await createTestStore('ops_l');
  ops = createOperationStore({ databaseUrl: t.url });
  rx = await startReceiver(ALLOW);
  envR = await startReceiver(ALLOW);
});

afterAll(async () => {
  await ops?.close();
  await Promise.all(dispatchers.map((d) => d.close()));
  await rx?.close();
  await envR?.close();
  await t?.cleanup();
});

beforeEach(() => {
  rx.requests.length = 0;
  envR.requests.length = 0;
  rx.setHandler(ALLOW);
  envR.setHandler(ALLOW);
});

// Every test in both dispatcher modes (D8, D9): queue mode through a real in-process worker.
describe.each(MODES)('%s mode', (m) => {
  inMode(m);

  describe('L1 environment hooks are never persisted', () => {
    it('L1/L2/E4: only caller hooks reach operation_hooks (templates kept); no server-env-webhook: id is ever stored', async () => {
      const op = nextOp('persist');
      const env = envWithControl();
      env.AGENT_HOOK_WEBHOOK_EVENTS = 'afterToolCall,onComplete';
      const d = dispatcher(env);
      await ops.createOperation({
        operationId: op,
        hooks: [control('caller', `${rx.url}/caller`), { id: 'done', type: 'onComplete', handler: () => undefined, webhook: { url: `${rx.url}/done` } }],
      });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('x'), context: ctx(op, 'c'), dispatcher: d });
      await ops.completeOperation({ operationId: op, reason: 'done', dispatcher: d });
      await settle(); // queue mode: the worker has finished the onComplete
      // The env hooks did run: the control inline; the onComplete inline in local mode, while in queue
      // mode it is recorded for the worker, which sends an environment hook only with its own matching environment (E3).
      expect(envR.requests.length).toBe(mode() === 'local' ? 2 : 1);
      if (mode() === 'queue') expect(await queuedHookIds(op)).toContain('server-env-webhook:onComplete');
      const rows = await sql<{ hook: { id: string } }>(t.url, 'SELECT hook FROM operation_hooks WHERE operation_id = $1 ORDER BY position', [op]);
      expect(rows.map((r) => r.hook.id)).toEqual(['caller', 'done']); // …but were never stored
      const all = await sql<{ text: string }>(t.url, 'SELECT hook::text AS text FROM operation_hooks');
      expect(all.some((r) => r.text.includes('server-env-webhook:'))).toBe(false);
    });

    it('L3: an operation with environment hooks only stores no hook rows; a reserved id from a caller is rejected (E4)', async () => {
      const op = nextOp('env-only');
      await ops.createOperation({ operationId: op, hooks: [{ id: 'local-only', type: 'onComplete', handler: () => undefined }] });
      expect(await sql(t.url, 'SELECT 1 FROM operation_hooks WHERE operation_id = $1', [op])).toHaveLength(0);
      expect(await ops.loadHooks(op)).toBeUndefined();
      await expect(
        ops.createOperation({
          operationId: nextOp('reserved'),
          hooks: [{ id: 'server-env-webhook:afterToolCall', type: 'afterToolCall', webhook: { url: `${rx.url}/x` } }],
        }),
      ).rejects.toBeInstanceOf(HookConfigError);
    });
  });

  describe('L2 restore from the runtime snapshot, else from Postgres', () => {
    it('L2: a snapshot is used when given; without one the persisted record is used', async () => {
      const op = nextOp('snap-vs-pg');
      rx.setHandler((req) => (req.path === '/persisted' ? deny('from postgres') : ALLOW));
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${rx.url}/persisted`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'with-snapshot' });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'without' });
      const d = dispatcher();

      const snap = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'with-snapshot',
        result: toolResult('a'),
        context: ctx(op, 'with-snapshot'),
        snapshotHooks: [control('policy', `${rx.url}/snapshot`)],
        dispatcher: d,
      });
      expect(rx.requests.map((r) => r.path)).toEqual(['/snapshot']);
      expect(snap).toMatchObject({ applied: true, status: 'allow' });

      rx.requests.length = 0;
      const pg = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'without',
        result: toolResult('b'),
        context: ctx(op, 'without'),
        dispatcher: d,
      });
      expect(rx.requests.map((r) => r.path)).toEqual(['/persisted']);
      expect(pg).toEqual({ applied: true, status: 'blocked', result: deniedAfter('from postgres') });
    });

    it('L2: a per-operation snapshot record applies to its round; a round missing from it restores from Postgres', async () => {
      const parent = nextOp('rec-parent');
      const child = nextOp('rec-child');
      await ops.createOperation({ operationId: parent, hooks: [control('p', `${rx.url}/parent-pg`)] });
      await ops.createOperation({ operationId: child, parentOperationId: parent, hooks: [control('c', `${rx.url}/child-pg`)] });
      await ops.createPlaceholder({ operationId: child, toolCallId: 'c' });
      await ops.publishDeferredResult({
        operationId: child,
        toolCallId: 'c',
        result: toolResult('r'),
        context: ctx(child, 'c'),
        interventionOperationId: parent,
        snapshotHooks: { [parent]: [control('p', `${rx.url}/parent-snap`)] },
        dispatcher: dispatcher(),
      });
      expect(rx.requests.map((r) => r.path)).toEqual(['/parent-snap', '/child-pg']);
    });
  });

  describe('L3 rounds', () => {
    it('L3/P4: the intervention operation first, then the current one; environment hooks once, in the final round', async () => {
      const intervention = nextOp('round-a');
      const current = nextOp('round-b');
      await ops.createOperation({ operationId: intervention, hooks: [control('a1', `${rx.url}/a1`), control('a2', `${rx.url}/a2`)] });
      await ops.createOperation({ operationId: current, hooks: [control('b1', `${rx.url}/b1`)] });
      await ops.createPlaceholder({ operationId: current, toolCallId: 'c' });
      const order: string[] = [];
      rx.setHandler((req) => (order.push(req.path), ALLOW));
      envR.setHandler((req) => (order.push(`env${req.path}`), ALLOW));
      const out = await ops.publishDeferredResult({
        operationId: current,
        toolCallId: 'c',
        result: toolResult('r'),
        context: ctx(current, 'c'),
        interventionOperationId: intervention,
        dispatcher: dispatcher(envWithControl()),
      });
      expect(order).toEqual(['/a1', '/a2', '/b1', 'env/env']);
      expect(envR.requests).toHaveLength(1);
      expect(body(envR.requests[0]!).hookId).toBe('server-env-webhook:afterToolCall');
      expect(out).toMatchObject({ applied: true, status: 'allow' });
    });

    it('L3: caller hook ids are not de-duplicated across operations (same id in both → both run)', async () => {
      const a = nextOp('dup-id-a');
      const b = nextOp('dup-id-b');
      await ops.createOperation({ operationId: a, hooks: [control('policy', `${rx.url}/from-a`)] });
      await ops.createOperation({ operationId: b, hooks: [control('policy', `${rx.url}/from-b`)] });
      await ops.createPlaceholder({ operationId: b, toolCallId: 'c' });
      await ops.publishDeferredResult({
        operationId: b,
        toolCallId: 'c',
        result: toolResult('r'),
        context: ctx(b, 'c'),
        interventionOperationId: a,
        dispatcher: dispatcher(),
      });
      expect(rx.requests.map((r) => [r.path, body(r).hookId])).toEqual([
        ['/from-a', 'policy'],
        ['/from-b', 'policy'],
      ]);
    });

    it('L3/R5a: a deny in the first round blocks; later rounds and the environment are not asked', async () => {
      const a = nextOp('deny-first-a');
      const b = nextOp('deny-first-b');
      await ops.createOperation({ operationId: a, hooks: [control('pa', `${rx.url}/a`)] });
      await ops.createOperation({ operationId: b, hooks: [control('pb', `${rx.url}/b`)] });
      await ops.createPlaceholder({ operationId: b, toolCallId: 'c' });
      rx.setHandler((req) => (req.path === '/a' ? deny('round one') : ALLOW));
      const out = await ops.publishDeferredResult({
        operationId: b,
        toolCallId: 'c',
        result: toolResult('r'),
        context: ctx(b, 'c'),
        interventionOperationId: a,
        dispatcher: dispatcher(envWithControl()),
      });
      expect(out).toEqual({ applied: true, status: 'blocked', result: deniedAfter('round one') });
      expect(rx.requests.map((r) => r.path)).toEqual(['/a']);
      expect(envR.requests).toHaveLength(0);
    });
  });

  describe('L4 no matching result control → allow', () => {
    it('L4/D4: a control whose matcher misses is not asked and the result is allowed', async () => {
      const op = nextOp('nomatch');
      await ops.createOperation({ operationId: op, hooks: [control('other-tool', `${rx.url}/m`, { matcher: '^other/' })] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const out = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('r'),
        context: ctx(op, 'c'),
        dispatcher: dispatcher(),
      });
      expect(out).toEqual({ applied: true, status: 'allow', result: toolResult('r') });
      expect(rx.requests).toHaveLength(0);
    });

    it('L4: a matcher that hits is asked (search/query)', async () => {
      const op = nextOp('match');
      await ops.createOperation({ operationId: op, hooks: [control('search-tool', `${rx.url}/m`, { matcher: '^search/(query|list)$' })] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      rx.setHandler(deny(''));
      const out = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('r'),
        context: ctx(op, 'c'),
        dispatcher: dispatcher(),
      });
      expect(out.result).toEqual(deniedAfter('Blocked by afterToolCall hook.')); // R2 default reason
    });
  });

  describe('L5 storage and control failures never read as allow', () => {
    it('L5: Postgres unreachable while loading the policy → rejects; nothing is asked, allowed or written', async () => {
      const op = nextOp('pg-down');
      await ops.createOperation({ operationId: op, hooks: [control('p', `${rx.url}/p`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const down = createOperationStore({ databaseUrl: 'postgres://postgres@127.0.0.1:1/test' });
      try {
        await expect(
          down.publishDeferredResult({
            operationId: op,
            toolCallId: 'c',
            result: toolResult('r'),
            context: ctx(op, 'c'),
            dispatcher: dispatcher(envWithControl()),
          }),
        ).rejects.toThrow();
      } finally {
        await down.close();
      }
      expect(rx.requests).toHaveLength(0);
      expect(envR.requests).toHaveLength(0);
      expect(await placeholderResult(op)).toBeNull();
    });

    it('L5: operation_hooks unreadable (table renamed) → rejects, never an empty hook list', async () => {
      const op = nextOp('hooks-gone');
      await ops.createOperation({ operationId: op, hooks: [control('p', `${rx.url}/p`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      await sql(t.url, 'ALTER TABLE operation_hooks RENAME TO operation_hooks_gone');
      try {
        await expect(
          ops.publishDeferredResult({
            operationId: op,
            toolCallId: 'c',
            result: toolResult('r'),
            context: ctx(op, 'c'),
            dispatcher: dispatcher(envWithControl()),
          }),
        ).rejects.toThrow(/operation_hooks/);
      } finally {
        await sql(t.url, 'ALTER TABLE operation_hooks_gone RENAME TO operation_hooks');
      }
      expect(rx.requests).toHaveLength(0);
      expect(envR.requests).toHaveLength(0); // not even the environment round ran: nothing allowed
      expect(await placeholderResult(op)).toBeNull();
    });

    it('D4b/L5: a corrupt persisted hook row throws; it is never silently dropped', async () => {
      const op = nextOp('corrupt');
      await ops.createOperation({ operationId: op, hooks: [control('p', `${rx.url}/p`), control('q', `${rx.url}/q`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      await sql(
        t.url,
        `UPDATE operation_hooks SET hook = '{"id":"p","type":"afterToolCall","webhook":{"url":42}}'::jsonb WHERE operation_id = $1 AND position = 0`,
        [op],
      );
      await expect(
        ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('r'), context: ctx(op, 'c'), dispatcher: dispatcher() }),
      ).rejects.toBeInstanceOf(HookConfigError);
      await sql(t.url, `UPDATE operation_hooks SET hook = '"garbage"'::jsonb WHERE operation_id = $1`, [op]);
      await expect(
        ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('r'), context: ctx(op, 'c'), dispatcher: dispatcher() }),
      ).rejects.toBeInstanceOf(HookConfigError);
      await expect(ops.loadHooks(op)).rejects.toBeInstanceOf(HookConfigError);
      expect(rx.requests).toHaveLength(0);
      expect(await placeholderResult(op)).toBeNull();
    });

    it('L5/P5: a call that cannot be rebuilt (no identifier) while an afterToolCall control exists → throws, nothing written', async () => {
      const op = nextOp('no-ctx');
      await ops.createOperation({ operationId: op, hooks: [control('p', `${rx.url}/p`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const { identifier: _dropped, ...partial } = ctx(op, 'c');
      await expect(
        ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('r'), context: partial, dispatcher: dispatcher() }),
      ).rejects.toBeInstanceOf(DeferredContextError);
      // Only an environment control (no caller control) fails closed the same way.
      const op2 = nextOp('no-ctx-env');
      await ops.createPlaceholder({ operationId: op2, toolCallId: 'c' });
      await expect(
        ops.publishDeferredResult({ operationId: op2, toolCallId: 'c', result: toolResult('r'), dispatcher: dispatcher(envWithControl()) }),
      ).rejects.toBeInstanceOf(DeferredContextError);
      expect(rx.requests).toHaveLength(0);
      expect(envR.requests).toHaveLength(0);
      expect(await placeholderResult(op)).toBeNull();
      expect(await placeholderResult(op2)).toBeNull();
    });

    it.each(['toolCallId', 'assistantMessageId', 'identifier', 'apiName'] as const)(
      "DOOR-6 (T1): a deferred result whose context has '' as %s is refused by the same validator, naming it; nothing asked or written",
      async (field) => {
        const op = nextOp(`empty-${field}`);
        await ops.createOperation({ operationId: op, hooks: [control('p', `${rx.url}/p`)] });
        await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
        const error = await ops
          .publishDeferredResult({
            operationId: op,
            toolCallId: 'c',
            result: toolResult('r'),
            context: ctx(op, 'c', { [field]: '' }),
            dispatcher: dispatcher(),
          })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(DeferredContextError);
        // It names the field the validator refused (not a fixed list of what a rebuild needs).
        expect((error as Error).message).toContain(`(${field}: `);
        expect(rx.requests).toHaveLength(0);
        expect(await placeholderResult(op)).toBeNull();
      },
    );

    it('L5/P5: a control registered only in the running dispatcher (not persisted) still requires the context and runs', async () => {
      const op = nextOp('memory-only');
      await ops.createOperation({ operationId: op, hooks: [] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const d = dispatcher();
      d.register(op, [control('late', `${rx.url}/late`)]); // D9: appended after the record was created
      rx.setHandler(deny('memory policy'));
      await expect(ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('r'), dispatcher: d })).rejects.toBeInstanceOf(
        DeferredContextError,
      );
      expect(await placeholderResult(op)).toBeNull();
      const out = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('r'), context: ctx(op, 'c'), dispatcher: d });
      expect(out).toEqual({ applied: true, status: 'blocked', result: deniedAfter('memory policy') });
    });

    it('L5: without any afterToolCall control, the result is published without needing the context', async () => {
      const op = nextOp('no-control');
      const env: Env = {};
      setEnvHooks(env, `${envR.url}/env`, { events: 'afterToolCall,onComplete', mode: 'ignore' }); // notifications only
      await ops.createOperation({
        operationId: op,
        hooks: [
          { id: 'notify', type: 'afterToolCall', webhook: { url: `${rx.url}/n` } },
          { id: 'before', type: 'beforeToolCall', webhook: { url: `${rx.url}/b`, responseHandling: 'toolCall' } },
        ],
      });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const out = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('r'), dispatcher: dispatcher(env) });
      expect(out).toEqual({ applied: true, status: 'allow', result: toolResult('r') });
      expect(rx.requests).toHaveLength(0);
      expect(envR.requests).toHaveLength(0);
    });

    it('L5/E2: an invalid environment-hook configuration fails closed — rejects naming the variables (never values), nothing written', async () => {
      const op = nextOp('bad-env');
      await ops.createOperation({ operationId: op, hooks: [control('p', `${rx.url}/p`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const env: Env = {
        AGENT_HOOK_WEBHOOK_URL: `${envR.url}/env`,
        AGENT_HOOK_WEBHOOK_TOKEN: 'tok-value-123',
        AGENT_HOOK_WEBHOOK_EVENTS: 'afterToolCall,notAHook',
      };
      const error = await ops
        .publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('r'), context: ctx(op, 'c'), dispatcher: dispatcher(env) })
        .then(
          () => undefined,
          (e: unknown) => e as Error,
        );
      expect(error?.message).toContain('AGENT_HOOK_WEBHOOK_EVENTS');
      expect(error?.message).not.toContain('tok-value-123');
      expect(await placeholderResult(op)).toBeNull();
      expect(envR.requests).toHaveLength(0);
    });

    it("L5/R5: a failed control with onError 'continue' is skipped and the rest decide; 'block' blocks with hook_control_error", async () => {
      const cont = nextOp('onerror-continue');
      await ops.createOperation({ operationId: cont, hooks: [control('broken', CLOSED_URL), control('next', `${rx.url}/next`)] });
      await ops.createPlaceholder({ operationId: cont, toolCallId: 'c' });
      rx.setHandler(deny('the next one decides'));
      const a = await ops.publishDeferredResult({
        operationId: cont,
        toolCallId: 'c',
        result: toolResult('r'),
        context: ctx(cont, 'c'),
        dispatcher: dispatcher(),
      });
      expect(a.result).toEqual(deniedAfter('the next one decides'));

      const block = nextOp('onerror-block');
      await ops.createOperation({ operationId: block, hooks: [control('broken', CLOSED_URL, { onError: 'block' }), control('next', `${rx.url}/next`)] });
      await ops.createPlaceholder({ operationId: block, toolCallId: 'c' });
      rx.setHandler(ALLOW);
      rx.requests.length = 0;
      const b = await ops.publishDeferredResult({
        operationId: block,
        toolCallId: 'c',
        result: toolResult('r'),
        context: ctx(block, 'c'),
        dispatcher: dispatcher(),
      });
      expect(b).toEqual({ applied: true, status: 'blocked', result: deniedAfter('hook_control_error') });
      expect(rx.requests).toHaveLength(0);
    });
  });
});

describe('DOOR-5 (D6): critical stays critical through completeOperation', () => {
  it('DOOR-5 (D6): a critical onComplete failure and an invalid env → completeOperation throws CriticalHookDeliveryError carrying the env error', async () => {
    const op = nextOp('critical-env');
    const env: Env = {};
    setEnvHooks(env, `${envR.url}/env`, { events: 'onComplete', mode: 'ignore' });
    const d = new HookDispatcher({ env, allowedCidrs: '127.0.0.1/32', logger: silentLogger() });
    dispatchers.push(d);
    await ops.createOperation({ operationId: op, hooks: [{ id: 'critical', type: 'onComplete', webhook: { url: CLOSED_URL, fallback: 'none' } }] });
    env.AGENT_HOOK_WEBHOOK_TOKEN = ''; // broken after registration: the dispatch finds it
    const error = await ops.completeOperation({ operationId: op, reason: 'done', dispatcher: d }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect((error as CriticalHookDeliveryError).hookId).toBe('critical');
    expect((error as CriticalHookDeliveryError).otherErrors.map((e) => (e as Error).name)).toEqual(['EnvHookConfigError']);
    expect(envR.requests).toHaveLength(0);
  });
});
