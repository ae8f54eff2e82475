/**
 * Drains N pre-enqueued events (default 20,000) with one shipped worker process and prints its
 * rate; with PROF=1 the worker writes a V8 CPU profile to /tmp/prof (open it in Chrome DevTools
 * or speedscope). `npx tsx bench/profileWorker.ts` — the tool behind the README's per-layer split.
 */
import { sql } from 'drizzle-orm';
import { createHookProducer } from '../src/queue/producer.ts';
import { openStore } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { BENCH_REDIS_URL, createBenchSchema, kibPayload, sleep, startReceiverProcess, uniqueName } from './support.ts';
import { startWorkerProcess } from './workerProcess.ts';
const N = Number(process.env.N ?? 20000);
const receiver = await startReceiverProcess();
const schema = await createBenchSchema('prof');
const store = await openStore({ databaseUrl: schema.url, maxConnections: 10 });
await migrateStore(store);
const queueName = uniqueName('prof');
const producer = createHookProducer({ store, redisUrl: BENCH_REDIS_URL, queueName, env: {} });
const hooks = [{ id: 'bench', type: 'onComplete' as const, webhook: { url: `${receiver.url}/product` } }];
for (let i = 0; i < N; i += 500)
  await producer.enqueueMany(
    Array.from({ length: 500 }, (_, k) => ({ operationId: `op-${i + k}`, type: 'onComplete' as const, event: kibPayload(i + k), hooks })),
  );
const t0 = performance.now();
const w = await startWorkerProcess({
  databaseUrl: schema.url,
  queueName,
  concurrency: Number(process.env.C ?? 64),
  // WORKER_ENV="HOOKRELAY_ENDPOINT_ISOLATION=false …": extra worker settings for an A/B.
  env: Object.fromEntries(
    (process.env.WORKER_ENV ?? '')
      .split(' ')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  ),
  nodeFlags: [...(process.env.PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []), ...(process.env.NODE_FLAGS ? process.env.NODE_FLAGS.split(' ') : [])],
});
const count = async () =>
  ((await store.db.execute(sql`select count(*)::int as n from deliveries where status = 'delivered'`)) as unknown as { rows: Array<{ n: number }> }).rows[0]!.n;
while ((await count()) < N) await sleep(100);
console.log('rate', (N / ((performance.now() - t0) / 1000)).toFixed(0), 'rss', w.peakRssMb().toFixed(0));
await w.stop();
await producer.close();
await store.close();
await schema.drop();
receiver.close();
process.exit(0);
