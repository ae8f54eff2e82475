/**
 * Producer enqueue (ledger row + job) vs plain BullMQ addBulk, interleaved, 5 rounds: a quick
 * look at the producer alone (`npx tsx bench/enqueueOnly.ts`); `npm run bench` has the same
 * figure in its delivery section. With PROF=1 the process writes a CPU profile to /tmp/prof.
 */
import { createHookProducer } from '../src/queue/producer.ts';
import { openStore } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { ENQUEUE_BATCH, runPlainAddBulk } from './product.ts';
import { BENCH_REDIS_URL, createBenchSchema, kibPayload, median, uniqueName } from './support.ts';

const JOBS = Number(process.env.N ?? 10_000);
const hooks = [{ id: 'bench', type: 'onComplete' as const, webhook: { url: 'http://127.0.0.1:9/product' } }];
const product: number[] = [];
const plain: number[] = [];
for (let round = 0; round < 5; round++) {
  const schema = await createBenchSchema('enq');
  const store = await openStore({ databaseUrl: schema.url, maxConnections: 10 });
  await migrateStore(store);
  const producer = createHookProducer({ store, redisUrl: BENCH_REDIS_URL, queueName: uniqueName('enq'), env: {} });
  const batch = (from: number) =>
    Array.from({ length: ENQUEUE_BATCH }, (_, k) => ({ operationId: `op-${from + k}`, type: 'onComplete' as const, event: kibPayload(from + k), hooks }));
  await producer.enqueueMany(batch(0));
  const started = performance.now();
  for (let i = ENQUEUE_BATCH; i < JOBS + ENQUEUE_BATCH; i += ENQUEUE_BATCH) await producer.enqueueMany(batch(i));
  product.push(JOBS / ((performance.now() - started) / 1000));
  await producer.close();
  await store.close();
  await schema.drop();
  plain.push(await runPlainAddBulk(JOBS));
}
console.log(`enqueue ${median(product).toFixed(0)}/s  addBulk ${median(plain).toFixed(0)}/s  ratio ${(median(product) / median(plain)).toFixed(2)}`);
process.exit(0);
