/**
 * The light package entry's factories for the heavy parts (BullMQ + ioredis, pg + drizzle, the
 * embedded PGlite store, the worker): each returns at once and imports its real module when it is
 * created, so `import 'hookrelay'` loads none of those packages and a local-mode server app never
 * pays for them. Options are validated here, synchronously, exactly as the real factories do; the
 * template setting (W2) is resolved here once and handed to the real factory with its options.
 * `hookrelay/queue`, `hookrelay/store` and `hookrelay/worker` export the real factories directly.
 */
import { withTemplateEnvResolved } from '../config/resolveConfig.ts';
import type { OperationStore, OperationStoreOptions } from '../operations/operationStore.ts';
import type { HookProducer, HookProducerOptions } from '../queue/types.ts';
import type { StoreDb } from '../store/types.ts';
import type { StoreRecordSink } from '../store/interceptionRecordSink.ts';
import type { RunningDeliveryWorker, StartDeliveryWorkerOptions } from '../worker/startDeliveryWorker.ts';

/** Methods of `T` that return promises: the only ones a deferred facade can forward. */
type AsyncMethods<T> = { [K in keyof T]: T[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof T];

/**
 * A facade over `load()`'s result: each named async method awaits the real object, then calls it.
 * `close` resolves at once when the real object was never needed, and otherwise closes it.
 */
function deferred<T extends object, K extends AsyncMethods<T>>(load: Promise<T>, methods: readonly K[]): Pick<T, K> {
  // The load starts now (construction is use); a failed load surfaces at the first call, not as an unhandled rejection.
  load.catch(() => undefined);
  const facade = {} as Record<K, (...args: unknown[]) => Promise<unknown>>;
  for (const name of methods) {
    facade[name] = async (...args: unknown[]) => {
      const real = (await load) as Record<K, (...a: unknown[]) => Promise<unknown>>;
      return real[name](...args);
    };
  }
  return facade as unknown as Pick<T, K>;
}

/** Q1/Q2: the durable-delivery producer (see `hookrelay/queue`); BullMQ and pg load now, in the background. */
export function createHookProducer(options: HookProducerOptions = {}): HookProducer {
  const resolved = withTemplateEnvResolved(options);
  let loaded: HookProducer | undefined;
  const load = import('../queue/producer.ts').then((m) => (loaded = m.createHookProducer(resolved)));
  const facade = deferred<HookProducer, 'enqueue' | 'enqueueMany' | 'getDelivery' | 'close'>(load, ['enqueue', 'enqueueMany', 'getDelivery', 'close']);
  // Synchronous: nothing is spooled before the producer has loaded.
  return { ...facade, spoolStatus: () => loaded?.spoolStatus() };
}

/** The operation store (L2, P1–P6) (see `hookrelay/store`); pg and drizzle load now, in the background. */
export function createOperationStore(options: OperationStoreOptions = {}): OperationStore {
  const resolved = withTemplateEnvResolved(options);
  const load = import('../operations/operationStore.ts').then((m) => m.createOperationStore(resolved));
  return deferred<OperationStore, AsyncMethods<OperationStore>>(load, [
    'createOperation',
    'getOperation',
    'loadHooks',
    'createPlaceholder',
    'getPlaceholder',
    'publishDeferredResult',
    'claimApproval',
    'publishApproval',
    'completeOperation',
    'close',
  ]);
}

/** I4: interception records in Postgres (see `hookrelay/store`); drizzle loads now, in the background. */
export function createStoreRecordSink(db: StoreDb): StoreRecordSink {
  const load = import('../store/interceptionRecordSink.ts').then((m) => m.createStoreRecordSink(db));
  const real = deferred<StoreRecordSink, 'nextSequence' | 'highestSequence'>(load, ['nextSequence', 'highestSequence']);
  return {
    sink: async (record) => (await load).sink(record),
    sequenceProvider: { next: (sessionId) => real.nextSequence(sessionId) },
    nextSequence: real.nextSequence,
    highestSequence: real.highestSequence,
  };
}

/** The programmatic worker (see `hookrelay/worker`). */
export async function startDeliveryWorker(options: StartDeliveryWorkerOptions = {}): Promise<RunningDeliveryWorker> {
  const { startDeliveryWorker: start } = await import('../worker/startDeliveryWorker.ts');
  return start(options);
}
