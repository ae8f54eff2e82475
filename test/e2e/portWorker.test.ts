/**
 * Issue 51 (PORT-): the worker's HTTP port as a stranger meets it, against the worker as a process
 * (its resident memory read from /proc, its log read from its output). Hanging connections that
 * promise a megabyte each do not pin memory; unsigned callbacks do not flood the log; `/metrics`
 * answers loopback callers under names it knows, or the console token. Every connection is made
 * from 127.0.0.1 to 127.0.0.1, bounded in number, and destroyed after.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, type TestStore } from '../support/db.ts';
import { spawnWorker, type HookrelayProcess } from '../support/hookrelayProcess.ts';
import { freePort, rawGet } from '../support/loopbackHttp.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';

const TOKEN = `console-token-${randomBytes(12).toString('hex')}`;
const MIB = 1024 * 1024;
/** What the worker's memory may grow under the hanging connections (issue 51: ~100 MB of idle). */
const MEMORY_MARGIN_BYTES = 100 * 1024 * 1024;

/** The process's resident set, from /proc (bytes). */
function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(kb?.[1] ?? 0) * 1024;
}

/** The largest RSS seen while sampling every 100 ms for `ms`. */
async function peakRss(pid: number, ms: number): Promise<number> {
  let peak = 0;
  const end = Date.now() + ms;
  while (Date.now() < end) {
    peak = Math.max(peak, rssOf(pid));
    await new Promise((r) => setTimeout(r, 100));
  }
  return peak;
}

/**
 * `count` connections, each a POST promising 1 MiB, sending all but 16 bytes of it and then
 * waiting. One shared buffer is written to every socket, so the test itself holds 1 MiB.
 * `sent` resolves once every socket has handed its bytes to the worker or was closed by it
 * (bounded): only then does the worker hold what it chose to read.
 */
function hangingPosts(port: number, count: number, head: (i: number) => string): { sockets: net.Socket[]; sent: Promise<void> } {
  const body = Buffer.alloc(MIB - 16, 0x61);
  const done: Promise<void>[] = [];
  const sockets = Array.from({ length: count }, (_, i) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => undefined); // refused and closed by the worker: expected
    socket.write(`${head(i)}content-length: ${MIB}\r\n\r\n`);
    done.push(
      new Promise<void>((resolve) => {
        socket.write(body, () => resolve());
        socket.once('close', () => resolve());
      }),
    );
    return socket;
  });
  const bound = new Promise<void>((resolve) => setTimeout(resolve, 20_000).unref());
  return { sockets, sent: Promise.race([Promise.all(done).then(() => undefined), bound]) };
}

describe('PORT: the worker HTTP port under strangers (worker process)', () => {
  let db: TestStore;
  let worker: HookrelayProcess;
  let port: number;
  const queue = `port-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestStore('e2e_port');
    port = await freePort();
    worker = spawnWorker({
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: queue,
      HOOKRELAY_HTTP_PORT: String(port),
      HOOKRELAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
      QSTASH_CURRENT_SIGNING_KEY: `sig_${randomBytes(12).toString('hex')}`,
      QSTASH_NEXT_SIGNING_KEY: `sig_${randomBytes(12).toString('hex')}`,
      HOOKRELAY_CONSOLE_TOKEN: TOKEN,
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '2000',
    });
    await worker.ready(45_000);
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await deleteKeys(queueKeys(queue));
    await db?.cleanup();
  });

  it('PORT-1 (SEC-H8): 500 callbacks and 400 sign-ins each hanging on a 1 MiB body leave the worker within 100 MB of idle, during and after', async () => {
    const pid = worker.child.pid as number;
    await new Promise((r) => setTimeout(r, 1_000));
    const idle = await peakRss(pid, 1_000);

    const callbacks = hangingPosts(
      port,
      500,
      (i) => `POST /qstash/callback?deliveryId=dlv_${i}&generation=0 HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nupstash-signature: forged.${i}.token\r\n`,
    );
    const signIns = hangingPosts(
      port,
      400,
      () =>
        `POST /console/login HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\norigin: http://127.0.0.1:${port}\r\ncontent-type: application/x-www-form-urlencoded\r\n`,
    );
    try {
      await Promise.all([callbacks.sent, signIns.sent]);
      const during = await peakRss(pid, 2_000);
      expect(during - idle, `RSS ${Math.round(idle / MIB)} MB idle → ${Math.round(during / MIB)} MB with 900 hanging 1 MiB bodies`).toBeLessThan(
        MEMORY_MARGIN_BYTES,
      );
    } finally {
      for (const s of [...callbacks.sockets, ...signIns.sockets]) s.destroy();
    }
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await peakRss(pid, 1_000);
    expect(after - idle, `RSS ${Math.round(idle / MIB)} MB idle → ${Math.round(after / MIB)} MB after`).toBeLessThan(MEMORY_MARGIN_BYTES);
    // The worker still answers.
    expect((await rawGet(port, '/healthz', {})).status).toBe(200);
  }, 60_000);

  it('PORT-5 (SEC-H8, Q7): 1,000 unsigned callbacks are each refused 401 and write at most a handful of log lines', async () => {
    const linesBefore = worker
      .output()
      .split('\n')
      .filter((l) => l.includes('qstash callback')).length;
    const statuses = new Map<number, number>();
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          fetch(`http://127.0.0.1:${port}/qstash/callback?deliveryId=dlv_${batch}_${i}&generation=0`, {
            method: 'POST',
            headers: i % 2 === 0 ? {} : { 'upstash-signature': 'not-a-jwt' },
            body: JSON.stringify({ status: 500, sourceMessageId: 'forged' }),
          }).then((r) => r.status),
        ),
      );
      for (const s of answers) statuses.set(s, (statuses.get(s) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 401: 1000 });
    await new Promise((r) => setTimeout(r, 300));
    const lines = worker
      .output()
      .split('\n')
      .filter((l) => l.includes('qstash callback'));
    // Two reasons (no signature, an invalid one): one line each now; their counts come at the minute's end.
    expect(lines.length - linesBefore).toBeLessThanOrEqual(5);
    expect(lines.length - linesBefore).toBeGreaterThanOrEqual(1);
  });

  it('PORT-4 (SEC-H8): /metrics and /readyz refuse a foreign Host (DNS rebinding) and a proxied caller by default; loopback names and the console token pass', async () => {
    for (const path of ['/metrics', '/readyz']) {
      const rebound = await rawGet(port, path, { host: `attacker.example:${port}` });
      expect(rebound.status, path).toBe(403);
      expect(rebound.body).toMatch(/HOOKRELAY_OPS_HOSTS/);
      expect(rebound.body).not.toMatch(/hookrelay_/);
      const proxied = await rawGet(port, path, { 'x-forwarded-for': '203.0.113.9' });
      expect(proxied.status, path).toBe(403);
      expect(proxied.body).toMatch(/HOOKRELAY_OPS_ALLOW_FROM/);
      expect((await rawGet(port, path, { host: `localhost:${port}` })).status, path).toBeLessThan(400);
      expect((await rawGet(port, path, {})).status, path).toBeLessThan(400);
      // The console token as a bearer opens it from anywhere, under any name.
      const bearer = await rawGet(port, path, { host: `attacker.example:${port}`, 'x-forwarded-for': '203.0.113.9', authorization: `Bearer ${TOKEN}` });
      expect(bearer.status, path).toBeLessThan(400);
      if (path === '/metrics') expect(bearer.body).toMatch(/hookrelay_http_refused_total\{reason="ops_host"\} [1-9]/);
    }
    // /healthz stays open to every caller: liveness probes come from orchestrators' addresses under any name.
    expect((await rawGet(port, '/healthz', { host: 'attacker.example', 'x-forwarded-for': '203.0.113.9' })).status).toBe(200);
  });
});
