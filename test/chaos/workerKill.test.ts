import { afterAll, expect, it } from 'vitest';
import { createChaosRun, EVENTS, type ChaosRun } from './chaosHarness.ts';

const KILLS = 3;
let run: ChaosRun | undefined;
afterAll(async () => run?.cleanup());

it(`Q2: ${EVENTS} events while the worker process is SIGKILLed ${KILLS} times and restarted → 0 lost; duplicates repeat a known webhook-id`, async () => {
  run = await createChaosRun('kill', 7);
  const chaos = run;
  let worker = await chaos.startWorker();
  let kills = 0;
  const killer = (async () => {
    while (kills < KILLS) {
      await new Promise((r) => setTimeout(r, 1_200));
      // Only kill while work is under way (a delivery has reached the receiver since the last start).
      const before = chaos.receiver.requests.length;
      while (chaos.receiver.requests.length === before) await new Promise((r) => setTimeout(r, 20));
      worker.kill('SIGKILL');
      await worker.exited;
      kills += 1;
      worker = await chaos.startWorker();
    }
  })();
  await chaos.feed();
  await killer;
  const report = await chaos.finish();
  worker.kill('SIGTERM');
  expect(await worker.exited).toBe(0);
  expect(kills).toBe(KILLS);
  expect(report.lost).toBe(0);
  expect(report.unknown).toBe(0);
  expect(report.delivered).toBe(EVENTS);
});
