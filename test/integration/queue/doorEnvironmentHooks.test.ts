/**
 * DOOR-4 (F4, L1): in queue mode an environment hook's delivery takes its target from the worker's
 * current environment at send time, by hook id — a changed URL gets the retry (and a replay), a
 * removed hook is `skipped` with its reason, nothing sent. Reproduction 4 of issue 48: receiver
 * 503, the operator changes AGENT_HOOK_WEBHOOK_URL, the retry went nowhere (failed /
 * configuration). Real worker, Redis, Postgres and receivers; the worker's environment is a live
 * object the test changes, as an operator changes the worker's.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { replayDeliveries } from '../../../src/admin/replay.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, waitFor, type Stack } from './harness.ts';

const TOKEN = 'door4-env-token';

describe('DOOR-4 (F4, L1): environment hooks read fresh at send time in queue mode', () => {
  let stack: Stack;
  let receiver: Receiver;
  /** The worker's environment (read at each attempt). */
  const workerEnv: Record<string, string | undefined> = {};
  let status503 = true;
  beforeAll(async () => {
    stack = await createStack('door4');
    receiver = await startReceiver((req) => (req.path === '/old' && status503 ? { status: 503 } : { status: 204 }));
    // Retries after 0.3 s and 0.3 s: time for the test to change the environment between attempts.
    await stack.startWorker({ HOOKRELAY_RETRY_SCHEDULE: '0.3,0.3' }, { env: workerEnv });
  });
  afterAll(async () => {
    await stack.cleanup();
    await receiver.close();
  });
  beforeEach(() => {
    for (const k of Object.keys(workerEnv)) delete workerEnv[k];
    Object.assign(workerEnv, { AGENT_HOOK_WEBHOOK_URL: `${receiver.url}/old`, AGENT_HOOK_WEBHOOK_TOKEN: TOKEN, AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete' });
    status503 = true;
  });

  /** A queue-mode dispatch of onComplete under the app's environment (the same env hook as the worker's at enqueue). */
  async function dispatchEnvEvent(operationId: string): Promise<string> {
    const appEnv = { AGENT_HOOK_WEBHOOK_URL: `${receiver.url}/old`, AGENT_HOOK_WEBHOOK_TOKEN: 'app-side-token', AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete' };
    const d = new HookDispatcher({ mode: 'queue', producer: stack.producer, env: appEnv, logger: silentLogger() });
    try {
      await d.dispatch(operationId, 'onComplete', { operationId, reason: 'done' });
    } finally {
      await d.close();
    }
    const rows = await stack.db.store.pool!.query<{ id: string }>('select id from deliveries where operation_id = $1', [operationId]);
    expect(rows.rows).toHaveLength(1);
    return rows.rows[0]!.id;
  }

  const requestsTo = (path: string, id: string) => receiver.requests.filter((r) => r.path === path && r.headers['webhook-id'] === id);

  it('DOOR-4 (F4): receiver 503, the operator changes AGENT_HOOK_WEBHOOK_URL → the retry goes to the new URL with the worker token, delivered', async () => {
    const id = await dispatchEnvEvent('op-door4-changed');
    await waitFor(() => requestsTo('/old', id).length === 1, 15_000, 'the first attempt (503)');
    workerEnv.AGENT_HOOK_WEBHOOK_URL = `${receiver.url}/new`;
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'delivered', 15_000, 'the retry to be delivered');
    const sent = requestsTo('/new', id);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(requestsTo('/old', id)).toHaveLength(1);
  });

  it('DOOR-4 (F4): the environment hook is removed before the retry → skipped with its reason, nothing more sent', async () => {
    const id = await dispatchEnvEvent('op-door4-removed');
    await waitFor(() => requestsTo('/old', id).length === 1, 15_000, 'the first attempt (503)');
    delete workerEnv.AGENT_HOOK_WEBHOOK_URL;
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'skipped', 15_000, 'the delivery to be skipped');
    const row = await stack.producer.getDelivery(id);
    expect(row?.failureReason).toBe('environment_hook_removed');
    expect(row?.attempts).toHaveLength(1);
    expect(receiver.requests.filter((r) => r.headers['webhook-id'] === id)).toHaveLength(1);
  });

  it('DOOR-4 (F4): a failed environment delivery replayed after the URL changed goes to the new URL', async () => {
    const id = await dispatchEnvEvent('op-door4-replay');
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'failed', 15_000, 'all attempts failed (503)');
    expect(requestsTo('/old', id)).toHaveLength(3);
    workerEnv.AGENT_HOOK_WEBHOOK_URL = `${receiver.url}/new`;
    await replayDeliveries(stack.db.store.db, stack.worker().queue, [id], { includeAccepted: false });
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'delivered', 15_000, 'the replay to be delivered');
    expect(requestsTo('/new', id)).toHaveLength(1);
    expect(requestsTo('/old', id)).toHaveLength(3);
  });
});
