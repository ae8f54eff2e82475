/**
 * P6: the regression cases that must exist as tests, against real Postgres and real HTTP
 * receivers on 127.0.0.1. Each test names the rules it proves.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import type { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import type { SerializedHook } from '../../../src/contract/hook.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import {
  ALLOW,
  body,
  clearEnvHooks,
  control,
  ctx,
  deny,
  makeDispatcher,
  ofType,
  setEnvHooks,
  sql,
  startReceiver,
  toolResult,
  waitFor,
  type Env,
  type Receiver,
  inMode,
  MODES,
} from './helpers.ts';
import { blockedAfterResult } from '../../../src/decide/blockedResult.ts';
/** R5b: the denial of a tool result from `toolResult()` keeps its executionTime (12), as LobeHub does (issue 28). */
const deniedAfter = (reason: string) => blockedAfterResult(reason, { content: '', success: true, executionTime: 12 });

let t: TestStore;
let ops: OperationStore;
let caller: Receiver;
let envR: Receiver;
const dispatchers: HookDispatcher[] = [];
let n = 0;
const nextOp = (label: string) => `p6-${label}-${++n}`;

function dispatcher(env: Env = {}): HookDispatcher {
  const d = makeDispatcher(env);
  dispatchers.push(d);
  return d;
}

beforeAll(async () => {
  t = await createTestStore('ops_p6');
  ops = createOperationStore({ databaseUrl: t.url });
  caller = await startReceiver(ALLOW);
  envR = await startReceiver(ALLOW);
});

afterAll(async () => {
  await ops?.close();
  await Promise.all(dispatchers.map((d) => d.close()));
  await caller?.close();
  await envR?.close();
  await t?.cleanup();
});

beforeEach(() => {
  caller.requests.length = 0;
  envR.requests.length = 0;
  caller.setHandler(ALLOW);
  envR.setHandler(ALLOW);
});

// Every test in both dispatcher modes (D8, D9): queue mode through a real in-process worker.
describe.each(MODES)('%s mode', (m) => {
  inMode(m);

  describe('P6 environment hook removed / added after approval and after snapshot expiry (L1, L4, P3)', () => {
    const cases = [
      { change: 'removed', snapshot: 'present' },
      { change: 'removed', snapshot: 'expired' },
      { change: 'added', snapshot: 'present' },
      { change: 'added', snapshot: 'expired' },
    ] as const;

    it.each(cases)('P6 L1/L4: env hook $change after approval, snapshot $snapshot', async ({ change, snapshot }) => {
      const op = nextOp(`env-${change}-${snapshot}`);
      const call = 'call-1';
      const env: Env = {};
      if (change === 'removed') setEnvHooks(env, `${envR.url}/env`);
      envR.setHandler(deny('env policy'));
      const atApproval = dispatcher(env);

      await ops.createOperation({ operationId: op, hooks: [control('caller-policy', `${caller.url}/caller`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: call });
      // The runtime's snapshot of caller hooks at approval time (L2).
      const snap = (await ops.loadHooks(op)) as SerializedHook[];
      expect(snap.map((h) => h.id)).toEqual(['caller-policy']);
      await ops.claimApproval({ operationId: op, toolCallId: call, decision: { action: 'approve' } });
      await ops.publishApproval({ operationId: op, toolCallId: call, dispatcher: atApproval });

      // The environment changes between approval and the deferred result.
      if (change === 'removed') clearEnvHooks(env);
      else setEnvHooks(env, `${envR.url}/env`);
      // "expired": a cold worker with a new dispatcher and no snapshot → Postgres.
      const d = snapshot === 'expired' ? dispatcher({ ...env }) : atApproval;

      const out = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: call,
        result: toolResult('raw output'),
        context: ctx(op, call),
        ...(snapshot === 'present' ? { snapshotHooks: snap } : {}),
        dispatcher: d,
      });

      // The caller policy is still enforced either way (once).
      expect(ofType(caller, 'afterToolCall').map((r) => r.path)).toEqual(['/caller']);
      if (change === 'removed') {
        expect(envR.requests).toHaveLength(0); // no earlier environment policy pinned
        expect(out).toEqual({ applied: true, status: 'allow', result: toolResult('raw output') });
      } else {
        expect(envR.requests).toHaveLength(1); // the current environment applies at once
        expect(envR.requests[0]!.headers.authorization).toBe('Bearer env-token');
        expect(out).toEqual({ applied: true, status: 'blocked', result: deniedAfter('env policy') });
      }
      expect((await ops.getPlaceholder({ operationId: op, toolCallId: call }))?.result).toEqual(out.result);
    });

    it('P6 L1: an environment hook captured in an old snapshot is dropped, never restored from an earlier environment', async () => {
      const op = nextOp('stale-env-snapshot');
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      envR.setHandler(deny('old env policy'));
      // A snapshot written by an older runtime that also captured the environment hook.
      const stale = [
        control('caller-policy', `${caller.url}/caller`),
        { id: 'server-env-webhook:afterToolCall', type: 'afterToolCall', webhook: { url: `${envR.url}/old-env`, responseHandling: 'toolCall' } },
      ] as SerializedHook[];
      const out = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('ok'),
        context: ctx(op, 'c'),
        snapshotHooks: stale,
        dispatcher: dispatcher({}), // the environment hook has since been removed
      });
      expect(envR.requests).toHaveLength(0);
      expect(caller.requests).toHaveLength(1);
      expect(out).toEqual({ applied: true, status: 'allow', result: toolResult('ok') });
    });
  });

  describe('P6 publishing without a review marker (P1)', () => {
    it('P6 P1: an allowed result is stored exactly as given — no pending/allow/review metadata in it', async () => {
      const op = nextOp('no-marker-allow');
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${caller.url}/caller`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const result = { content: 'sunny, 21°C', success: true, executionTime: 40, state: { type: 'weather', city: 'Oslo' } };
      const out = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result, context: ctx(op, 'c'), dispatcher: dispatcher() });
      expect(out.applied).toBe(true);
      // A history reader reads the column as is: it is the final result.
      const [row] = await sql<{ result: unknown }>(t.url, 'SELECT result FROM deferred_placeholders WHERE operation_id = $1', [op]);
      expect(row!.result).toStrictEqual(result);
      expect(JSON.stringify(row!.result)).not.toMatch(/pending|review|verdict|"allow"|hookStatus/i);
    });

    it('P6 P1/R3/R5b: a denial is stored as the sanitized blocked result; the raw output is nowhere in the row', async () => {
      const op = nextOp('no-marker-deny');
      caller.setHandler(deny('contains PII'));
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${caller.url}/caller`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const out = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('RAW-SSN-123-45-6789'),
        context: ctx(op, 'c'),
        dispatcher: dispatcher(),
      });
      expect(out).toEqual({ applied: true, status: 'blocked', result: deniedAfter('contains PII') });
      // The control saw the full result (B2) before anything was written.
      expect((body(caller.requests[0]!).result as { content: string }).content).toBe('RAW-SSN-123-45-6789');
      const [row] = await sql<{ result: unknown; text: string }>(t.url, 'SELECT result, p::text AS text FROM deferred_placeholders p WHERE operation_id = $1', [
        op,
      ]);
      expect(row!.result).toStrictEqual({
        content: 'contains PII',
        success: false,
        error: 'hook_denied',
        state: { phase: 'afterToolCall', type: 'blocked', reason: 'contains PII' },
        executionTime: 12, // run metadata of the withheld result is kept (issue 28), none of its output
      });
      expect(row!.text).not.toContain('RAW-SSN');
    });

    it('P1: after publish the placeholder row holds no status or review column; a denial is the sanitized result itself', async () => {
      const op = nextOp('no-status-column');
      caller.setHandler(deny('withheld by policy'));
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${caller.url}/caller`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const out = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('raw secret output'),
        context: ctx(op, 'c'),
        dispatcher: dispatcher(),
      });
      expect(out).toEqual({ applied: true, status: 'blocked', result: deniedAfter('withheld by policy') });

      const columns = await sql<{ column_name: string }>(
        t.url,
        'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY column_name',
        [t.schema, 'deferred_placeholders'],
      );
      expect(columns.map((c) => c.column_name)).toEqual([
        'approval',
        'created_at',
        'id',
        'operation_id',
        'published_at',
        'result',
        'tool_call_id',
        'updated_at',
      ]);
      const [row] = await sql<Record<string, unknown>>(t.url, 'SELECT * FROM deferred_placeholders WHERE operation_id = $1', [op]);
      expect(Object.keys(row!).sort()).toEqual(['approval', 'created_at', 'id', 'operation_id', 'published_at', 'result', 'tool_call_id', 'updated_at']);
      expect(row!.result).toStrictEqual(deniedAfter('withheld by policy'));
      expect(row!.approval).toBeNull();
      expect(JSON.stringify(row)).not.toContain('raw secret output');
      // What a reader gets back is the row, nothing derived beside it.
      expect(await ops.getPlaceholder({ operationId: op, toolCallId: 'c' })).toEqual({
        operationId: op,
        toolCallId: 'c',
        result: deniedAfter('withheld by policy'),
        approval: null,
        publishedAt: expect.any(Date),
      });
    });
  });

  describe('P6 persisted caller hooks keep control (L2)', () => {
    it('P6 L2: after a restart (new dispatcher, new operation store, same database) the persisted control still denies', async () => {
      const op = nextOp('restart');
      const hooks = [control('keeper', `${caller.url}/keeper`)];
      const before = createOperationStore({ databaseUrl: t.url });
      const running = makeDispatcher({});
      running.register(op, hooks);
      await before.createOperation({ operationId: op, userId: 'u-1', hooks });
      await before.createPlaceholder({ operationId: op, toolCallId: 'c' });
      await before.close();
      await running.close(); // the process is gone; its in-memory registration with it

      const after = createOperationStore({ databaseUrl: t.url });
      try {
        const cold = dispatcher({});
        expect(cold.getSerializedHooks(op)).toBeUndefined();
        caller.setHandler(deny('still enforced'));
        const out = await after.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('raw'), context: ctx(op, 'c'), dispatcher: cold });
        expect(out).toEqual({ applied: true, status: 'blocked', result: deniedAfter('still enforced') });
        expect(caller.requests.map((r) => r.path)).toEqual(['/keeper']);
        expect(body(caller.requests[0]!).hookId).toBe('keeper');
      } finally {
        await after.close();
      }
    });
  });

  describe('P6 the answer stays pending while a hook runs (P1)', () => {
    it('P6 P1: while the control is still deciding, the placeholder holds no result', async () => {
      const op = nextOp('pending');
      await ops.createOperation({ operationId: op, hooks: [control('slow', `${caller.url}/slow`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      caller.setHandler({ ...ALLOW, delayMs: 700 });
      const publishing = ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('late'),
        context: ctx(op, 'c'),
        dispatcher: dispatcher(),
      });
      await waitFor(() => caller.requests.length === 1);
      const during = await ops.getPlaceholder({ operationId: op, toolCallId: 'c' });
      expect(during?.result).toBeNull();
      expect(during?.publishedAt).toBeNull();
      const out = await publishing;
      expect(out).toEqual({ applied: true, status: 'allow', result: toolResult('late') });
      expect((await ops.getPlaceholder({ operationId: op, toolCallId: 'c' }))?.result).toEqual(toolResult('late'));
    });
  });

  describe('P6 publish/rollback atomicity (P1, P2)', () => {
    it('P6 P2: a failure between control and write leaves the placeholder empty and re-publishable', async () => {
      const op = nextOp('atomic');
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${caller.url}/policy`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      let renamed = false;
      caller.setHandler(async () => {
        if (!renamed) {
          // The write that follows this control call will find no table.
          await sql(t.url, 'ALTER TABLE deferred_placeholders RENAME TO deferred_placeholders_gone');
          renamed = true;
        }
        return ALLOW;
      });
      const d = dispatcher();
      try {
        await expect(
          ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('first try'), context: ctx(op, 'c'), dispatcher: d }),
        ).rejects.toThrow();
      } finally {
        if (renamed) await sql(t.url, 'ALTER TABLE deferred_placeholders_gone RENAME TO deferred_placeholders');
      }
      expect(renamed).toBe(true);
      const empty = await ops.getPlaceholder({ operationId: op, toolCallId: 'c' });
      expect(empty?.result).toBeNull();
      expect(empty).not.toHaveProperty('status');

      const retry = await ops.publishDeferredResult({
        operationId: op,
        toolCallId: 'c',
        result: toolResult('second try'),
        context: ctx(op, 'c'),
        dispatcher: d,
      });
      expect(retry).toEqual({ applied: true, status: 'allow', result: toolResult('second try') });
      expect(caller.requests).toHaveLength(2); // the retry ran the control again before writing
    });
  });

  describe('P6 duplicate callback after the policy was removed (P2, L4)', () => {
    it('P6 P2: environment policy removed → the duplicate keeps the first (denied) result', async () => {
      const op = nextOp('dup-env');
      const env: Env = {};
      setEnvHooks(env, `${envR.url}/env`);
      envR.setHandler(deny('env says no'));
      const d = dispatcher(env);
      await ops.createOperation({ operationId: op, hooks: [] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const first = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('raw 1'), context: ctx(op, 'c'), dispatcher: d });
      expect(first).toEqual({ applied: true, status: 'blocked', result: deniedAfter('env says no') });

      clearEnvHooks(env);
      const dup = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('raw 2'), context: ctx(op, 'c'), dispatcher: d });
      expect(dup).toEqual({ applied: false, result: deniedAfter('env says no') });
      expect(envR.requests).toHaveLength(1);
      expect((await ops.getPlaceholder({ operationId: op, toolCallId: 'c' }))?.result).toEqual(deniedAfter('env says no'));
    });

    it('P6 P2: persisted caller policy deleted → a replay cannot restore the denied output', async () => {
      const op = nextOp('dup-caller');
      caller.setHandler(deny('caller says no'));
      await ops.createOperation({ operationId: op, hooks: [control('policy', `${caller.url}/policy`)] });
      await ops.createPlaceholder({ operationId: op, toolCallId: 'c' });
      const d = dispatcher();
      await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('raw 1'), context: ctx(op, 'c'), dispatcher: d });
      await sql(t.url, 'DELETE FROM operation_hooks WHERE operation_id = $1', [op]);
      const dup = await ops.publishDeferredResult({ operationId: op, toolCallId: 'c', result: toolResult('raw 2'), dispatcher: d });
      expect(dup).toEqual({ applied: false, result: deniedAfter('caller says no') });
      const [row] = await sql<{ text: string }>(t.url, 'SELECT p::text AS text FROM deferred_placeholders p WHERE operation_id = $1', [op]);
      expect(row!.text).not.toContain('raw 2');
    });
  });

  describe('P6 partial member start failure (P5)', () => {
    it('P6 P5: a member that failed to start is backfilled through result control before the write; started members publish normally', async () => {
      const group = nextOp('group');
      await ops.createOperation({ operationId: group, hooks: [control('group-policy', `${caller.url}/group`)] });
      const members = ['m1', 'm2', 'm3'];
      for (const m of members) await ops.createPlaceholder({ operationId: group, toolCallId: `call-${m}` });
      // Started members are their own operations (children of the group's operation).
      for (const m of ['m1', 'm2']) await ops.createOperation({ operationId: `${group}-${m}`, parentOperationId: group, hooks: [] });

      const seenAtControl: { toolCallId: string; storedResult: unknown }[] = [];
      caller.setHandler(async (req) => {
        const toolCallId = body(req).toolCallId as string;
        const stored = await ops.getPlaceholder({ operationId: group, toolCallId });
        seenAtControl.push({ toolCallId, storedResult: stored?.result });
        return ALLOW;
      });
      const d = dispatcher();
      const started = await Promise.all(
        ['m1', 'm2'].map((m) =>
          ops.publishDeferredResult({
            operationId: group,
            toolCallId: `call-${m}`,
            result: toolResult(`answer of ${m}`),
            context: ctx(group, `call-${m}`, { identifier: 'group', apiName: 'callMember' }),
            dispatcher: d,
          }),
        ),
      );
      expect(started.map((o) => [o.applied, o.applied ? o.status : undefined])).toEqual([
        [true, 'allow'],
        [true, 'allow'],
      ]);

      const failure = { content: 'member m3 failed to start', success: false, error: 'member_start_failed' };
      const backfill = await ops.publishDeferredResult({
        operationId: group,
        toolCallId: 'call-m3',
        result: failure,
        context: ctx(group, 'call-m3', { identifier: 'group', apiName: 'callMember' }),
        dispatcher: d,
      });
      expect(backfill).toEqual({ applied: true, status: 'allow', result: failure });
      // Hooks ran for every member, and for m3 before anything was written.
      expect(seenAtControl.map((s) => s.toolCallId).sort()).toEqual(['call-m1', 'call-m2', 'call-m3']);
      expect(seenAtControl.every((s) => s.storedResult === null)).toBe(true);
      const m3Control = caller.requests.find((r) => body(r).toolCallId === 'call-m3')!;
      expect(body(m3Control).result).toEqual(failure);
      for (const m of members) {
        expect((await ops.getPlaceholder({ operationId: group, toolCallId: `call-${m}` }))?.result).not.toBeNull();
      }
    });

    it('P6 P5: a failed-start backfill is denied by the group policy like any other result', async () => {
      const group = nextOp('group-deny');
      await ops.createOperation({ operationId: group, hooks: [control('group-policy', `${caller.url}/group`)] });
      await ops.createPlaceholder({ operationId: group, toolCallId: 'call-m9' });
      caller.setHandler(deny('hide start errors'));
      const out = await ops.publishDeferredResult({
        operationId: group,
        toolCallId: 'call-m9',
        result: { content: 'stack trace with internals', success: false, error: 'member_start_failed' },
        context: ctx(group, 'call-m9'),
        dispatcher: dispatcher(),
      });
      expect(out).toEqual({ applied: true, status: 'blocked', result: blockedAfterResult('hide start errors') }); // no executionTime to keep
    });
  });
});
