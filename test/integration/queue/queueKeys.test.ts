/**
 * Issue 50: one owner of the queue's keys (src/queue/queueKeys.ts). It builds BullMQ's keys
 * without loading BullMQ (the CLI's read commands load neither BullMQ nor, for `deliveries list`,
 * ioredis); these tests hold it to BullMQ 6's own QueueKeys and getJobCounts on a real queue.
 */
import { randomBytes } from 'node:crypto';
import { Queue, QueueKeys, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDeliveryQueue } from '../../../src/queue/queueConnection.ts';
import { deliveryQueueKeys, JOB_COUNT_STATES, jobCounts } from '../../../src/queue/queueKeys.ts';
import { TEST_REDIS_URL } from '../../support/redisKeys.ts';

const prefix = `dep1-${randomBytes(4).toString('hex')}`;
const name = 'keys';
let redis: Redis;

beforeAll(() => {
  redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

describe('DEP-1: the queue keys have one owner, laid out as BullMQ 6 lays them', () => {
  it("DEP-1: base, every BullMQ key type and a job's hash match BullMQ's QueueKeys and Queue#toKey", () => {
    const ours = deliveryQueueKeys(prefix, name);
    const bull = new QueueKeys(prefix);
    expect(ours.base).toBe(bull.getQueueQualifiedName(name));
    for (const [type, key] of Object.entries(bull.getKeys(name))) if (type !== '') expect(ours.bull(type), type).toBe(key);
    const queue = new Queue(name, { connection: redis, prefix });
    try {
      expect(ours.job('dlv_1')).toBe(queue.toKey('dlv_1'));
    } finally {
      void queue.close();
    }
    // hookrelay's own keys live under the queue's qualified name, so one prefix lists and deletes them all.
    for (const k of [ours.qstashSeen, ours.consoleSessions]) expect(k.startsWith(`${ours.base}:`)).toBe(true);
  });

  it("DEP-1: jobCounts (no BullMQ loaded) equals BullMQ's getJobCounts for waiting, active, delayed, prioritized and failed jobs", async () => {
    const delivery = openDeliveryQueue({ name, prefix, redis });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const worker = new Worker(
      name,
      async (job) => {
        if (job.name === 'fail') throw new Error('fails on purpose');
        await held; // active until the counts are read
      },
      { connection: redis.duplicate(), prefix, concurrency: 2, autorun: false },
    );
    try {
      await delivery.queue.add('fail', {} as never, { jobId: 'f1', removeOnFail: false });
      await delivery.queue.add('hold', {} as never, { jobId: 'a1' });
      const failed = new Promise<void>((resolve) => worker.once('failed', () => resolve()));
      const active = new Promise<void>((resolve) => worker.on('active', (job) => job.id === 'a1' && resolve()));
      void worker.run();
      await Promise.all([failed, active]);
      await worker.pause(true); // the held job stays active, nothing else is taken
      await delivery.queue.addBulk([
        { name: 'w', data: {} as never, opts: { jobId: 'w1' } },
        { name: 'w', data: {} as never, opts: { jobId: 'w2' } },
        { name: 'd', data: {} as never, opts: { jobId: 'd1', delay: 60_000 } },
        { name: 'p', data: {} as never, opts: { jobId: 'p1', priority: 3 } },
      ]);
      const ours = await jobCounts(redis, delivery.keys, JOB_COUNT_STATES);
      const theirs = await delivery.queue.getJobCounts(...JOB_COUNT_STATES);
      expect(ours).toEqual(theirs);
      expect(ours).toEqual({ waiting: 2, active: 1, delayed: 1, prioritized: 1, failed: 1 });
    } finally {
      release();
      await worker.close(true);
      await delivery.close();
    }
  });
});
