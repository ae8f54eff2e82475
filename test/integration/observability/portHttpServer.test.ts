/**
 * Issue 51 (PORT-1): the HTTP server's own bounds, over real sockets on 127.0.0.1 — a route's
 * pre-read check answers before a byte of body is read, its cap refuses a larger body, the shared
 * budget refuses what would hold more than it, the connection cap and the header timeout close
 * what a stranger leaves open, and each refusal is counted.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttpServer, type HttpRefusal, type PostRoute, type RunningHttpServer } from '../../../src/observability/httpServer.ts';
import { silentLogger } from '../../../src/observability/logger.ts';

type Raw = { status: number; text: string; closed: boolean };

/** Writes `request` raw on a fresh connection; resolves with the status line once answered (or closed), within `timeoutMs`. */
function raw(port: number, request: string | Array<string | Buffer>, timeoutMs = 5_000): Promise<Raw & { socket: net.Socket }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text, closed, socket });
    };
    socket.on('data', (d) => {
      text += d.toString();
      if (text.includes('\r\n\r\n')) setTimeout(() => finish(socket.destroyed), 50);
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => undefined);
    for (const part of Array.isArray(request) ? request : [request]) socket.write(part);
    setTimeout(() => finish(false), timeoutMs).unref();
  });
}

describe('PORT-1 HTTP server bounds (real sockets)', () => {
  let server: RunningHttpServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const start = async (route: PostRoute, limits: Parameters<typeof startHttpServer>[0]['limits'] = {}) => {
    const refusals: HttpRefusal[] = [];
    server = await startHttpServer({
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger(),
      postRoutes: { '/in': route },
      limits,
      onRefused: (r) => refusals.push(r),
    });
    return { port: server.port as number, refusals };
  };

  it('PORT-1 (SEC-H8): a route refusing before the read answers at once and closes; the promised megabyte is never read', async () => {
    const { port, refusals } = await start({
      maxBodyBytes: 1024 * 1024,
      admit: async () => ({ ok: false, answer: { status: 401, body: 'no' } }),
    });
    const answer = await raw(port, [`POST /in HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: ${1024 * 1024}\r\n\r\n`, Buffer.alloc(1000)]);
    answer.socket.destroy();
    expect(answer.status).toBe(401);
    expect(answer.text).toMatch(/connection: close/i);
    expect(refusals).toEqual(['pre_read']);
  });

  it('PORT-1 (SEC-H8): a Content-Length over the route cap is 413 before reading; a chunked body over it is 413 when it passes the cap', async () => {
    const { port, refusals } = await start({
      maxBodyBytes: 100,
      admit: async () => ({ ok: true, handle: async (body) => ({ status: 200, body: `read ${body.length}` }) }),
    });
    const declared = await raw(port, `POST /in HTTP/1.1\r\nhost: x\r\ncontent-length: 101\r\n\r\n`);
    declared.socket.destroy();
    expect(declared.status).toBe(413);
    const chunked = await raw(port, `POST /in HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n64\r\n${'a'.repeat(100)}\r\n1\r\nb\r\n`);
    chunked.socket.destroy();
    expect(chunked.status).toBe(413);
    const fits = await raw(port, `POST /in HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n${'a'.repeat(100)}`);
    fits.socket.destroy();
    expect(fits.text).toMatch(/read 100/);
    expect(refusals).toEqual(['body_too_large', 'body_too_large']);
  });

  it('PORT-1 (SEC-H8): the shared budget: bodies that would hold more than it are answered 503 unread, and it frees as they end', async () => {
    const { port, refusals } = await start(
      { maxBodyBytes: 1_000, admit: async () => ({ ok: true, handle: async (body) => ({ status: 200, body: `read ${body.length}` }) }) },
      { unauthenticatedBodyBudgetBytes: 2_000 },
    );
    const hanging = [0, 1].map(() => raw(port, `POST /in HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\nabc`, 600));
    await new Promise((r) => setTimeout(r, 200));
    const third = await raw(port, `POST /in HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n`);
    third.socket.destroy();
    expect(third.status).toBe(503);
    expect(third.text).toMatch(/retry-after: 5/i);
    for (const h of await Promise.all(hanging)) h.socket.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const later = await raw(port, `POST /in HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n0123456789`);
    later.socket.destroy();
    expect(later.status).toBe(200);
    expect(refusals).toContain('body_budget');
  });

  it('PORT-1 (SEC-H8): headers that never end are cut at the header timeout; connections past the cap are closed and counted', async () => {
    const { port, refusals } = await start(
      { maxBodyBytes: 10, admit: async () => ({ ok: false, answer: { status: 401, body: 'no' } }) },
      { headersTimeoutMs: 1_000, maxConnections: 3 },
    );
    // Node's default would wait 60 s; the raw read gives up after 8 s (status 0).
    const slow = await raw(port, 'GET /healthz HTTP/1.1\r\nhost: x\r\n', 8_000);
    expect(slow.status).toBe(408);
    slow.socket.destroy();

    const held = Array.from({ length: 3 }, () => net.connect(port, '127.0.0.1').on('error', () => undefined));
    await Promise.all(held.map((s) => new Promise((r) => s.once('connect', r))));
    await new Promise((r) => setTimeout(r, 100));
    const fourth = await raw(port, 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n', 2_000);
    expect(fourth.status).toBe(0);
    expect(fourth.closed).toBe(true);
    for (const s of held) s.destroy();
    expect(refusals).toContain('connection_limit');
  });
});
