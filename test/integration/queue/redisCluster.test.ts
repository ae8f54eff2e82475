/**
 * Redis Cluster: a real 3-node cluster of Debian's redis-server on 127.0.0.1 (ports of its own,
 * files in a temporary folder), the producer and the worker service configured only through
 * settings (HOOKRELAY_REDIS_CLUSTER, HOOKRELAY_QUEUE_PREFIX), deliveries to a real receiver.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/settings.ts';
import { SettingsError } from '../../../src/contract/errors.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import { startDeliveryService } from '../../../src/worker/service.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { FAST_ENV, fetchHook, waitFor } from './harness.ts';

const PORTS = [17301, 17302, 17303];
const SEED = `redis://127.0.0.1:${PORTS[0]}`;
const EVENTS = 300;

let dir: string;
let servers: ChildProcess[] = [];
let db: TestStore;
let rx: Receiver;

async function clusterReady(): Promise<boolean> {
  const client = new Redis(SEED, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const info = (await client.call('CLUSTER', 'INFO')) as string;
    return /cluster_state:ok/.test(info);
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** `{hookrelay-N}` for the first N whose slot the seed node does not own. */
async function prefixOwnedElsewhere(): Promise<string> {
  const seed = new Redis(SEED);
  try {
    const slots = (await seed.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
    for (let n = 0; n < 100; n++) {
      const prefix = `{hookrelay-${n}}`;
      const slot = Number(await seed.call('CLUSTER', 'KEYSLOT', prefix));
      const owner = slots.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1];
      if (owner !== undefined && owner !== PORTS[0]) return prefix;
    }
    throw new Error('no hash tag owned by another node');
  } finally {
    seed.disconnect();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'hookrelay-cluster-'));
  servers = PORTS.map((port) =>
    spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    ),
  );
  for (const port of PORTS) {
    await waitFor(async () => {
      const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => undefined);
      try {
        await c.connect();
        return (await c.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        c.disconnect();
      }
    }, 10_000);
  }
  execFileSync('redis-cli', ['--cluster', 'create', ...PORTS.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { stdio: 'ignore' });
  await waitFor(clusterReady, 20_000);
  db = await createTestStore('q_cluster');
  rx = await startReceiver(() => ({ status: 200 }));
}, 60_000);

afterAll(async () => {
  await rx?.close();
  await db?.cleanup();
  for (const s of servers) s.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('Redis Cluster (hash-tagged queue prefix)', () => {
  it('HOOKRELAY_REDIS_CLUSTER=true with a prefix that is not a hash tag is a SettingsError naming HOOKRELAY_QUEUE_PREFIX (worker settings and producer alike)', () => {
    const env = { REDIS_URL: SEED, HOOKRELAY_REDIS_CLUSTER: 'true', HOOKRELAY_QUEUE_PREFIX: 'bull' };
    expect(() => loadSettings(env)).toThrow(SettingsError);
    try {
      loadSettings(env);
    } catch (error) {
      expect((error as SettingsError).variables).toEqual(['HOOKRELAY_QUEUE_PREFIX']);
    }
    expect(() => createHookProducer({ store: db.store, env })).toThrow(/HOOKRELAY_QUEUE_PREFIX: must be a hash tag/);
    // Without the cluster flag any plain prefix is fine, and a hash tag is accepted with it.
    expect(loadSettings({ HOOKRELAY_QUEUE_PREFIX: 'bull' }).HOOKRELAY_QUEUE_PREFIX).toBe('bull');
    expect(loadSettings({ ...env, HOOKRELAY_QUEUE_PREFIX: '{hookrelay}' }).HOOKRELAY_REDIS_CLUSTER).toBe(true);
  });

  it(`Q1/Q2: ${EVENTS} events enqueued and delivered through a 3-node cluster; every key of the queue is in one slot`, async () => {
    // A hash tag whose slot another node owns: a client that ignored the cluster flag and talked
    // to the seed node alone would get MOVED on every command, so delivery proves the routing.
    const prefix = await prefixOwnedElsewhere();
    const env = { REDIS_URL: SEED, HOOKRELAY_REDIS_CLUSTER: 'true', HOOKRELAY_QUEUE_PREFIX: prefix, HOOKRELAY_QUEUE: 'cluster-deliveries' };
    const producer = createHookProducer({ store: db.store, env });
    const service = await startDeliveryService({ settings: loadSettings({ ...FAST_ENV, ...env }), store: db.store, logger: silentLogger() });
    try {
      const ids: string[] = [];
      for (let i = 0; i < EVENTS; i += 100) {
        const { deliveryIds, queued } = await producer.enqueueMany(
          Array.from({ length: 100 }, (_, k) => ({
            operationId: `op-c-${i + k}`,
            type: 'onComplete' as const,
            event: { i: i + k },
            hooks: [fetchHook('c', `${rx.url}/c`)],
          })),
        );
        expect(queued).toBe(true);
        ids.push(...deliveryIds);
      }
      await waitFor(async () => new Set(rx.requests.map((r) => String(r.headers['webhook-id']))).size === EVENTS, 30_000);
      const received = new Set(rx.requests.map((r) => String(r.headers['webhook-id'])));
      expect([...received].sort()).toEqual([...ids].sort());
      await waitFor(async () => (await producer.getDelivery(ids.at(-1)!))?.status === 'delivered');

      // All of the queue's keys hash to one slot, on one node: what a hash-tagged prefix buys.
      const cluster = new Cluster([SEED]);
      try {
        await new Promise((resolve) => cluster.once('ready', resolve));
        const keys = (await Promise.all(cluster.nodes('master').map((n) => n.keys(`${prefix}:*`)))).flat();
        expect(keys.length).toBeGreaterThan(0);
        const slots = new Set(await Promise.all(keys.map((k) => cluster.call('CLUSTER', 'KEYSLOT', k))));
        expect(slots.size).toBe(1);
      } finally {
        cluster.disconnect();
      }
    } finally {
      await service.stop();
      await producer.close();
    }
  }, 60_000);
});
