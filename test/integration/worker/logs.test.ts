/**
 * Logs an operator can act on: `ready` only once Redis and Postgres answer (one line saying what
 * it waits for until then), Redis reconnect errors throttled to one line per kind with the error
 * and its stack (not a message string), one line at shutdown saying what was drained.
 * Real worker, real Postgres; Redis at a port where nothing listens for the outage case.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.ts';
import { startDeliveryWorker } from '../../../src/worker/startDeliveryWorker.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { waitFor } from '../queue/harness.ts';

type Line = { level: number; msg: string; err?: { type?: string; message?: string; stack?: string }; [k: string]: unknown };

function capture() {
  const lines: Line[] = [];
  const logger = createLogger({
    level: 'info',
    destination: {
      write(chunk: string) {
        for (const l of chunk.split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Line);
      },
    } as never,
  });
  return { logger, lines, msgs: () => lines.map((l) => l.msg) };
}

/** A loopback port with nothing listening (bound, then closed). */
async function deadPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('logs: ready, outages and shutdown', () => {
  let db: TestStore;
  beforeAll(async () => {
    db = await createTestStore('logs');
  });
  afterAll(async () => {
    await db.cleanup();
  });
  const env = (redisUrl: string) => ({
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    HOOKRELAY_QUEUE: `logs-${randomBytes(3).toString('hex')}`,
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '300',
  });

  it('logs: with Redis down, no `ready`, one line naming what it waits for, one outage line with the error and its stack, no reconnect error lines (Q13)', async () => {
    const c = capture();
    const worker = await startDeliveryWorker({ env: env(`redis://127.0.0.1:${await deadPort()}`), logger: c.logger, migrate: false });
    await new Promise((r) => setTimeout(r, 3_000));
    await worker.stop();
    expect(c.msgs()).not.toContain('ready');
    expect(c.msgs().filter((m) => m.startsWith('waiting for redis'))).toHaveLength(1);
    expect(c.msgs().filter((m) => m.startsWith('waiting for postgres'))).toHaveLength(0);
    // Q13: BullMQ reports every reconnect (tens in 3 s); the outage is one line, with the error and its stack.
    expect(c.lines.filter((l) => l.msg.startsWith('queue worker error'))).toHaveLength(0);
    const outage = c.lines.filter((l) => l.msg.startsWith('redis is unreachable'));
    expect(outage).toHaveLength(1);
    expect(outage[0]!.err?.stack).toMatch(/\n\s+at /);
    expect(c.msgs().filter((m) => m.startsWith('stopped:'))).toHaveLength(1);
  }, 20_000);

  it('DOOR-7 (Q13): a worker started while Redis is down waits without a MaxListenersExceededWarning and says it waits once', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const c = capture();
    try {
      const worker = await startDeliveryWorker({ env: env(`redis://127.0.0.1:${await deadPort()}`), logger: c.logger, migrate: false });
      // The readiness wait polls every 500 ms: 14 polls, past the 11 that leaked an abort listener each.
      await new Promise((r) => setTimeout(r, 7_000));
      await worker.stop();
      await new Promise((r) => setImmediate(r)); // a warning is emitted on the next tick
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
    expect(c.msgs().filter((m) => m.startsWith('waiting for redis'))).toHaveLength(1);
  }, 25_000);

  it('logs: a healthy worker logs `ready` once both answer, and one `stopped:` line with what it drained', async () => {
    const c = capture();
    const worker = await startDeliveryWorker({ env: env(TEST_REDIS_URL), logger: c.logger, migrate: false });
    await worker.ready;
    expect(c.msgs().filter((m) => m === 'ready')).toHaveLength(1);
    expect(c.msgs().some((m) => m.startsWith('waiting for'))).toBe(false);
    await worker.stop();
    await waitFor(() => c.msgs().some((m) => m.startsWith('stopped:')), 5_000, 'the shutdown line');
    const stopped = c.lines.filter((l) => l.msg.startsWith('stopped:'));
    expect(stopped).toHaveLength(1);
    expect(stopped[0]).toMatchObject({ inFlightAtStop: 0, drained: 0, cutOff: 0, graceful: true });
    expect(stopped[0]!.msg).toBe('stopped: 0 in-flight deliveries drained, ledger flushed');
  });
});
