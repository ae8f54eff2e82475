import { afterAll, expect, it } from 'vitest';
import { createChaosRun, EVENTS, type ChaosRun } from './chaosHarness.ts';

let run: ChaosRun | undefined;
afterAll(async () => run?.cleanup());

it(`Q2: ${EVENTS} events with FLUSHDB of the worker's Redis db mid-run → the reconciler restores every job; 0 lost`, async () => {
  run = await createChaosRun('flush', 8);
  const chaos = run;
  const worker = await chaos.startWorker();
  let flushed = 0;
  await chaos.feed(async (enqueued) => {
    // Twice: once mid-feed, once near the end (jobs waiting, delayed and active all vanish).
    if ((flushed === 0 && enqueued >= EVENTS / 2) || (flushed === 1 && enqueued >= (EVENTS * 9) / 10)) {
      await chaos.redis.flushdb();
      flushed += 1;
    }
  });
  const report = await chaos.finish();
  worker.kill('SIGTERM');
  expect(await worker.exited).toBe(0);
  expect(flushed).toBe(2);
  expect(worker.output()).toMatch(/reconciler re-enqueued/);
  expect(report.lost).toBe(0);
  expect(report.unknown).toBe(0);
  expect(report.delivered).toBe(EVENTS);
});
