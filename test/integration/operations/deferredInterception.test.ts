/**
 * I4 / P5 (issue 11): a deferred result published through the operation store passes the
 * dispatcher's interception emitter (post_tool_call) even when the operation has no afterToolCall
 * control: a deny is stored as the blocked result, a transform is stored transformed, and the raw
 * output never reaches the placeholder. Real Postgres, real emitter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { createOperationStore, type OperationStore } from '../../../src/operations/operationStore.ts';
import { InterceptionEmitter, Verdict, type Interceptor } from '../../../src/intercept/index.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { ctx, toolResult, inMode, MODES } from './helpers.ts';

// Every test in both dispatcher modes (D8, D9): queue mode through a real in-process worker.
describe.each(MODES)('%s mode', (m) => {
  inMode(m);

  describe('I4/P5: deferred results pass the interception emitter without any control', () => {
    let t: TestStore;
    let ops: OperationStore;
    const dispatchers: HookDispatcher[] = [];
    let n = 0;

    beforeAll(async () => {
      t = await createTestStore('ops_icpt');
      ops = createOperationStore({ store: t.store });
    });
    afterAll(async () => {
      await Promise.all(dispatchers.map((d) => d.close()));
      await ops.close();
      await t.cleanup();
    });

    const publishThrough = async (interceptor: Interceptor) => {
      const dispatcher = new HookDispatcher({
        emitter: new InterceptionEmitter({ interceptors: [interceptor] }),
        interceptionPoints: 'tool-seam',
        env: {},
        logger: silentLogger(),
      });
      dispatchers.push(dispatcher);
      const operationId = `op-icpt-${++n}`;
      await ops.createOperation({ operationId, hooks: [] });
      await ops.createPlaceholder({ operationId, toolCallId: 'call-1' });
      const out = await ops.publishDeferredResult({
        operationId,
        toolCallId: 'call-1',
        dispatcher,
        result: toolResult('SECRET tool output'),
        context: ctx(operationId, 'call-1'),
      });
      const row = await t.store.pool!.query<{ result: unknown }>('select result from deferred_placeholders where operation_id = $1', [operationId]);
      return { out, stored: row.rows[0]?.result };
    };

    it('I4/P5: a post_tool_call deny blocks the deferred result; the raw output is not stored', async () => {
      const { out, stored } = await publishThrough((c) =>
        c.interception_point === 'post_tool_call' ? Verdict.deny({ reason: 'policy.leak' }) : Verdict.allow(),
      );
      expect(out).toMatchObject({ applied: true, status: 'blocked' });
      expect(JSON.stringify(stored)).not.toContain('SECRET');
      expect(stored).toMatchObject({ success: false, error: 'hook_denied', state: { type: 'blocked', reason: 'policy.leak' } });
    });

    it('I4/P5: a post_tool_call transform is what the placeholder holds', async () => {
      const { out, stored } = await publishThrough((c) =>
        c.interception_point === 'post_tool_call' ? Verdict.transform('$target.content', '[redacted]') : Verdict.allow(),
      );
      expect(out).toMatchObject({ applied: true, status: 'allow' });
      expect(stored).toMatchObject({ content: '[redacted]', success: true });
    });

    it('I4/P5: without an emitter and without controls the result is stored as given', async () => {
      const dispatcher = new HookDispatcher({ env: {}, logger: silentLogger() });
      dispatchers.push(dispatcher);
      expect(dispatcher.intercepts).toBe(false);
      const operationId = `op-icpt-${++n}`;
      await ops.createPlaceholder({ operationId, toolCallId: 'c' });
      const out = await ops.publishDeferredResult({ operationId, toolCallId: 'c', dispatcher, result: toolResult('plain') });
      expect(out).toMatchObject({ applied: true, result: { content: 'plain' } });
    });
  });
});
