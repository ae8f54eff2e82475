import { afterEach, expect, it } from 'vitest';
import { createChaosRun, EVENTS, type ChaosRun } from './chaosHarness.ts';

/**
 * Scale-out: several worker processes on one queue and one Postgres. BullMQ hands each job to one
 * worker; the ledger's generation-guarded outcome makes a re-run after a lost lock harmless.
 */
const WORKERS = 3;
let run: ChaosRun | undefined;
afterEach(async () => {
  await run?.cleanup();
  run = undefined;
});

it(`Q2/scale-out: ${EVENTS} events, ${WORKERS} worker processes on one queue and one Postgres, no fault → each delivered exactly once`, async () => {
  run = await createChaosRun('scale', 12);
  const chaos = run;
  const workers = await Promise.all(Array.from({ length: WORKERS }, () => chaos.startWorker()));
  await chaos.feed();
  const report = await chaos.finish();
  for (const w of workers) w.kill('SIGTERM');
  for (const w of workers) expect(await w.exited).toBe(0);
  expect(report.lost).toBe(0);
  expect(report.unknown).toBe(0);
  expect(report.duplicated).toBe(0);
  expect(report.delivered).toBe(EVENTS);
});

it(`Q2/scale-out: ${EVENTS} events, ${WORKERS} worker processes while one of them is SIGKILLed twice → 0 lost; duplicates repeat a known webhook-id`, async () => {
  run = await createChaosRun('scalekill', 13);
  const chaos = run;
  const workers = await Promise.all(Array.from({ length: WORKERS }, () => chaos.startWorker()));
  let kills = 0;
  const killer = (async () => {
    while (kills < 2) {
      await new Promise((r) => setTimeout(r, 1_000));
      const before = chaos.receiver.requests.length;
      while (chaos.receiver.requests.length === before) await new Promise((r) => setTimeout(r, 20));
      const victim = workers[0]!;
      victim.kill('SIGKILL');
      await victim.exited;
      kills += 1;
      workers[0] = await chaos.startWorker();
    }
  })();
  await chaos.feed();
  await killer;
  const report = await chaos.finish();
  for (const w of workers) w.kill('SIGTERM');
  for (const w of workers) expect(await w.exited).toBe(0);
  expect(kills).toBe(2);
  expect(report.lost).toBe(0);
  expect(report.unknown).toBe(0);
  expect(report.received).toBeGreaterThanOrEqual(EVENTS);
  expect(report.delivered).toBe(EVENTS);
});
