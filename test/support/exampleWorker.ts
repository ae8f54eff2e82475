/**
 * What the examples' e2e tests run against: a fresh Postgres schema, a receiver on 127.0.0.1
 * answering 204, and a real `hookrelay worker` process on its own queue.
 */
import { createTestStore, type TestStore } from './db.ts';
import { type HookrelayProcess, spawnWorker } from './hookrelayProcess.ts';
import { startReceiver, type Receiver } from './receiver.ts';
import { deleteKeys, queueKeys } from './redisKeys.ts';

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export type ExampleWorker = { t: TestStore; receiver: Receiver; worker: HookrelayProcess };

export async function startExampleWorker(storePrefix: string, queueName: string): Promise<ExampleWorker> {
  const t = await createTestStore(storePrefix);
  const receiver = await startReceiver({ status: 204 });
  const worker = spawnWorker({
    DATABASE_URL: t.url,
    REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
  });
  await worker.ready();
  return { t, receiver, worker };
}

/** Stops what `startExampleWorker` started (any part of it may be missing after a failed start). */
export async function stopExampleWorker(parts: Partial<ExampleWorker>, queueName: string): Promise<void> {
  await parts.worker?.stop();
  await parts.receiver?.close();
  await deleteKeys(queueKeys(queueName));
  await parts.t?.cleanup();
}
