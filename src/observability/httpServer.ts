/**
 * The worker's HTTP server: `GET /healthz` (the process is up), `GET /readyz` (Redis and
 * Postgres answer), `GET /metrics` (Prometheus), plus POST routes handed in by the caller (QStash
 * callbacks) and request handlers (the operator console under /console). A port already in use is logged and the worker delivers on without it (§13).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from './logger.ts';

/** Largest POST body read (QStash callbacks carry a base64 response excerpt). */
const MAX_POST_BODY_BYTES = 1024 * 1024;
/** A readiness dependency that does not answer within this is reported down. */
const READINESS_TIMEOUT_MS = 2_000;

type ReadinessCheck = () => Promise<boolean>;
/** Answers the requests it owns (true), or leaves them to the next handler (false) — e.g. the console under /console. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
export type PostRoute = (input: { path: string; rawUrl: string; signature: string | undefined; body: string }) => Promise<{ status: number; body: string }>;

export type HttpServerOptions = {
  port: number;
  host?: string;
  logger: Logger;
  registry?: Registry;
  readiness?: Record<string, ReadinessCheck>;
  /** More of `/readyz`'s body, read per request (F1: the local spool), never deciding readiness. */
  readinessDetails?: () => Promise<Record<string, unknown>>;
  /** POST routes by path (query string excluded). */
  postRoutes?: Record<string, PostRoute>;
  /** Tried in order before the 404 (each owns its own path prefix). */
  handlers?: RequestHandler[];
};

export type RunningHttpServer = { port: number | undefined; close(): Promise<void> };

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const server = http.createServer((req, res) => {
    handle(options, req, res).catch((error: unknown) => {
      options.logger.warn({ err: error, path: pathOf(req) }, 'http handler error');
      if (!res.headersSent) send(res, 500, 'internal error');
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5_000;
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      options.logger.error(
        { port: options.port, code: error.code },
        'worker http server could not listen; health, metrics and QStash callbacks are off, delivery goes on',
      );
      resolve(false);
    });
    server.listen(options.port, options.host, () => resolve(true));
  });
  if (!listening) return { port: undefined, close: async () => undefined };
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeIdleConnections();
        server.close(() => resolve());
        setTimeout(() => server.closeAllConnections(), READINESS_TIMEOUT_MS).unref();
      }),
  };
}

async function handle(options: HttpServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = pathOf(req);
  if (req.method === 'GET' && path === '/healthz') return send(res, 200, 'ok');
  if (req.method === 'GET' && path === '/readyz') {
    const checks = Object.entries(options.readiness ?? {});
    const results = await Promise.all(checks.map(async ([name, check]) => [name, await withinTimeout(check)] as const));
    const ready = results.every(([, ok]) => ok);
    const details = options.readinessDetails ? await options.readinessDetails().catch(() => ({})) : {};
    res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ready, checks: Object.fromEntries(results), ...details }));
    return;
  }
  if (req.method === 'GET' && path === '/metrics' && options.registry) {
    const body = await options.registry.metrics();
    res.writeHead(200, { 'content-type': options.registry.contentType });
    res.end(body);
    return;
  }
  const route = req.method === 'POST' ? options.postRoutes?.[path] : undefined;
  if (route) {
    const body = await readBody(req);
    if (body === undefined) return send(res, 413, 'body too large');
    const signature = req.headers['upstash-signature'];
    const answer = await route({ path, rawUrl: req.url ?? path, signature: Array.isArray(signature) ? signature[0] : signature, body });
    return send(res, answer.status, answer.body);
  }
  for (const handler of options.handlers ?? []) if (await handler(req, res)) return;
  send(res, 404, 'not found');
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_POST_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function withinTimeout(check: ReadinessCheck): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), READINESS_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check().catch(() => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
