/**
 * A real node:http receiver on 127.0.0.1 (port 0) that misbehaves on request: status, headers,
 * body, delay, trickled body, socket reset, redirects, big bodies. Records every request
 * (method, path, headers, body) and counts TCP connections (keep-alive checks).
 */
import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type RecordedRequest = {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Remote port of the socket it came on (same port = same connection). */
  remotePort: number;
};

export type Behaviour = {
  status?: number;
  headers?: Record<string, string>;
  /** Sent as the body (after `delayMs`). */
  body?: string | Uint8Array;
  /** Generate a body of this many bytes ('a'), streamed in chunks. */
  bodyBytes?: number;
  /** Wait before sending the status line. */
  delayMs?: number;
  /** After the headers, send `chunk` every `intervalMs`, `count` times, then end. */
  trickle?: { chunk: string; intervalMs: number; count: number };
  /** Reset the TCP connection (RST) instead of answering. */
  reset?: boolean;
  /** Send headers then never finish the body (until close). */
  hangBody?: boolean;
};

export type Handler = Behaviour | ((req: RecordedRequest) => Behaviour | Promise<Behaviour>);

export type Receiver = {
  url: string;
  port: number;
  requests: RecordedRequest[];
  setHandler(handler: Handler): void;
  /** TCP connections accepted so far. */
  connectionCount(): number;
  close(): Promise<void>;
};

const STREAM_CHUNK_BYTES = 16 * 1024;

export async function startReceiver(initial: Handler = { status: 200 }): Promise<Receiver> {
  let handler: Handler = initial;
  let connections = 0;
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  const later = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      remotePort: req.socket.remotePort ?? 0,
    };
    requests.push(recorded);
    try {
      const behaviour = typeof handler === 'function' ? await handler(recorded) : handler;
      await respond(behaviour, req.socket, res, later);
    } catch {
      res.destroy();
    }
  });
  server.keepAliveTimeout = 30_000;
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    setHandler: (next) => {
      handler = next;
    },
    connectionCount: () => connections,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function respond(b: Behaviour, socket: Socket, res: ServerResponse, later: (ms: number) => Promise<void>): Promise<void> {
  if (b.delayMs) await later(b.delayMs);
  if (b.reset) {
    socket.resetAndDestroy();
    return;
  }
  res.writeHead(b.status ?? 200, b.headers ?? {});
  if (b.hangBody) {
    res.flushHeaders();
    return;
  }
  if (b.trickle) {
    res.flushHeaders();
    for (let i = 0; i < b.trickle.count && !res.destroyed; i += 1) {
      await later(b.trickle.intervalMs);
      if (res.destroyed) return;
      res.write(b.trickle.chunk);
    }
    res.end();
    return;
  }
  if (b.bodyBytes !== undefined) {
    let left = b.bodyBytes;
    const chunk = Buffer.alloc(STREAM_CHUNK_BYTES, 'a');
    while (left > 0 && !res.destroyed) {
      const n = Math.min(left, STREAM_CHUNK_BYTES);
      left -= n;
      if (!res.write(n === STREAM_CHUNK_BYTES ? chunk : chunk.subarray(0, n))) {
        await new Promise<void>((resolve) => {
          res.once('drain', resolve);
          res.once('close', resolve);
        });
      }
    }
    res.end();
    return;
  }
  res.end(b.body ?? '');
}
