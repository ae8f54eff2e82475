/**
 * What a delivery costs in Redis: N events pre-enqueued through the producer, then one shipped
 * worker process (defaults, one endpoint) drains them while `MONITOR` records every command on
 * the bench's Redis db. Prints commands per delivery: round trips (commands a client sent, a
 * script call counting once) and the commands run inside scripts, by name.
 * `N=1000 npx tsx bench/redisCommands.ts` (build dist/ first: `npm run -s build`);
 * `WORKER_ROOT=/path/to/other/checkout` measures another build of the worker (before/after).
 */
import { pathToFileURL } from 'node:url';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { createHookProducer } from '../src/queue/producer.ts';
import { openStore } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { BENCH_REDIS_URL, createBenchSchema, kibPayload, printTable, sleep, startReceiverProcess, uniqueName } from './support.ts';
import { startWorkerProcess } from './workerProcess.ts';

/**
 * A script call named by its KEYS count (unique among the scripts a delivery runs): BullMQ's
 * `<name>-<keys>.lua` files and the endpoint gate's `endpointExchange-6.lua`.
 */
const SCRIPTS_BY_KEYS: Record<string, string> = {
  '14': 'moveToFinished (BullMQ: complete + fetch the next job)',
  '11': 'moveToActive (BullMQ: fetch a job)',
  '12': 'moveToDelayed (BullMQ: defer a job)',
  '9': 'moveStalledJobsToWait (BullMQ: stall check)',
  '6': 'endpointExchange (hookrelay: endpoint gate, batched)',
  '1': 'extendLocks / updateData (BullMQ, 1 key)',
  '2': 'extendLock / other (BullMQ, 2 keys)',
};
function scriptName(args: string[]): string {
  const command = String(args[0] ?? '').toLowerCase();
  if (command !== 'evalsha' && command !== 'eval') return command;
  return `${command} ${SCRIPTS_BY_KEYS[String(args[2])] ?? `(${args[2]} keys)`}`;
}

export type RedisCost = { deliveries: number; roundTrips: Map<string, number>; inScripts: Map<string, number> };

export async function measureRedisCommands(opts: { deliveries: number; concurrency: number; env?: Record<string, string> }): Promise<RedisCost> {
  const receiver = await startReceiverProcess();
  const schema = await createBenchSchema('rcmd');
  const store = await openStore({ databaseUrl: schema.url, maxConnections: 4 });
  await migrateStore(store);
  const queueName = uniqueName('rcmd');
  const producer = createHookProducer({ store, redisUrl: BENCH_REDIS_URL, queueName, env: {} });
  const hooks = [{ id: 'bench', type: 'onComplete' as const, webhook: { url: `${receiver.url}/rcmd` } }];
  for (let i = 0; i < opts.deliveries; i += 500)
    await producer.enqueueMany(
      Array.from({ length: Math.min(500, opts.deliveries - i) }, (_, k) => ({
        operationId: `op-${i + k}`,
        type: 'onComplete' as const,
        event: kibPayload(i + k),
        hooks,
      })),
    );
  const db = Number(new URL(BENCH_REDIS_URL).pathname.slice(1) || 0);
  const monitorClient = new Redis(BENCH_REDIS_URL);
  const monitor = await monitorClient.monitor();
  const roundTrips = new Map<string, number>();
  const inScripts = new Map<string, number>();
  let recording = true;
  monitor.on('monitor', (_time: string, args: string[], source: string, database: string) => {
    if (!recording || Number(database) !== db) return;
    const name = scriptName(args);
    const into = source === 'lua' ? inScripts : roundTrips;
    into.set(name, (into.get(name) ?? 0) + 1);
  });
  const worker = await startWorkerProcess({
    databaseUrl: schema.url,
    queueName,
    concurrency: opts.concurrency,
    ...(opts.env ? { env: opts.env } : {}),
    ...(process.env.WORKER_ROOT ? { root: process.env.WORKER_ROOT } : {}),
  });
  const delivered = async () =>
    ((await store.db.execute(sql`select count(*)::int as n from deliveries where status = 'delivered'`)) as unknown as { rows: Array<{ n: number }> }).rows[0]!
      .n;
  try {
    while ((await delivered()) < opts.deliveries) await sleep(50);
    recording = false;
  } finally {
    monitor.disconnect();
    monitorClient.disconnect();
    await worker.stop();
    await producer.close();
    await store.close();
    await schema.drop();
    receiver.close();
  }
  return { deliveries: opts.deliveries, roundTrips, inScripts };
}

/** Rows: command, per delivery (round trips first, then script-internal commands). */
export function redisCostRows(cost: RedisCost, top = 12): string[][] {
  const per = (n: number) => (n / cost.deliveries).toFixed(2);
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [
    ['Redis per delivery', 'commands'],
    ['round trips (client commands; a script call is one)', per(total(cost.roundTrips))],
    ...sorted(cost.roundTrips).map(([name, n]) => [`  ${name}`, per(n)]),
    ['commands inside scripts', per(total(cost.inScripts))],
    ...sorted(cost.inScripts).map(([name, n]) => [`  ${name} (in scripts)`, per(n)]),
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const cost = await measureRedisCommands({ deliveries: Number(process.env.N ?? 1000), concurrency: Number(process.env.C ?? 64) });
  printTable(redisCostRows(cost, 20));
  process.exit(0);
}
