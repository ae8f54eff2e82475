import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../support/db.ts';
import { createChaosRun, EVENTS, type ChaosRun } from './chaosHarness.ts';

let run: ChaosRun | undefined;
afterAll(async () => run?.cleanup());

it(`Q2: ${EVENTS} events while the worker's Postgres connections are terminated mid-run → it pauses, reconnects; 0 lost`, async () => {
  run = await createChaosRun('pgterm', 9);
  const chaos = run;
  const worker = await chaos.startWorker();
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  let terminated = 0;
  let rounds = 0;
  try {
    await chaos.feed(async (enqueued) => {
      // Every ~1,000 events: terminate only this worker's backends (by its application_name).
      if (enqueued % 1_000 === 0) {
        const res = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [chaos.appName]);
        terminated += res.rowCount ?? 0;
        rounds += 1;
      }
    });
  } finally {
    await admin.end();
  }
  const report = await chaos.finish();
  worker.kill('SIGTERM');
  expect(await worker.exited).toBe(0);
  expect(rounds).toBeGreaterThanOrEqual(3);
  expect(terminated).toBeGreaterThan(0);
  expect(report.lost).toBe(0);
  expect(report.unknown).toBe(0);
  expect(report.delivered).toBe(EVENTS);
});
