/**
 * The worker's HTTP server: `GET /healthz` (the process is up), `GET /readyz` (Redis and
 * Postgres answer), `GET /metrics` (Prometheus), plus POST routes handed in by the caller (QStash
 * callbacks) and request handlers (the operator console under /console). A port already in use is
 * logged and the worker delivers on without it.
 *
 * Whoever can reach the port is a stranger until shown otherwise, so the server bounds what one
 * can hold: headers within seconds, the whole request within seconds more, a cap on open
 * connections, and bodies read only after the route's pre-read check passed (a callback's
 * signature header, a sign-in's origin), within the route's cap and one budget of memory shared by
 * every unauthenticated body (requestBody.ts). A request carrying a body is answered with
 * `Connection: close`, so a refused body is never read to reuse the connection. Each refusal is
 * counted (`onRefused`, the `hookrelay_http_refused_total` metric).
 *
 * `/healthz` answers anyone: liveness probes come from orchestrators' node addresses under any
 * Host, and "a process listens" is no more than the open port tells. `/metrics` and `/readyz`
 * answer callers allowed by the ops policy (opsAccess.ts: loopback by default) or bearing the
 * console token.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { sameSecret } from '../util/sameSecret.ts';
import type { CredentialGuard } from './credentialGuard.ts';
import type { Logger } from './logger.ts';
import { opsAccessPolicy, opsRefusal, type OpsAccessPolicy, type OpsRefusal } from './opsAccess.ts';
import { createBodyBudget, readRequestBody, type BodyRead, type BodyRefusal } from './requestBody.ts';

/** A readiness dependency that does not answer within this is reported down. */
const READINESS_TIMEOUT_MS = 2_000;

/** What a stranger may hold, by default. */
const DEFAULT_HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1_024,
  unauthenticatedBodyBudgetBytes: 16 * 1024 * 1024,
};

type HttpLimits = {
  /** The request line and headers must arrive within this (else 408 and the connection closes). */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection closes after this. */
  keepAliveTimeoutMs: number;
  /** Open connections at once; more are closed as they arrive. */
  maxConnections: number;
  /** Bytes held at once for bodies of callers not yet authenticated, all routes together. */
  unauthenticatedBodyBudgetBytes: number;
};

/** Why the server refused a request (a closed set: the metric's `reason` label). */
export type HttpRefusal = 'connection_limit' | BodyRefusal | 'pre_read' | 'throttled' | OpsRefusal;

type ReadinessCheck = () => Promise<boolean>;

/** What the server lends its handlers: the body reader within its limits, and the refusal count. */
export type HttpIo = {
  /** The body within `maxBytes`; an `unauthenticated` caller's within the server's shared budget. */
  readBody(req: IncomingMessage, res: ServerResponse, options: { maxBytes: number; unauthenticated: boolean }): Promise<BodyRead>;
  refused(reason: HttpRefusal): void;
};

/** Answers the requests it owns (true), or leaves them to the next handler (false) — e.g. the console under /console. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse, io: HttpIo) => Promise<boolean>;

export type RouteAnswer = { status: number; body: string; headers?: Readonly<Record<string, string>> };

/** A route's verdict on a request before its body is read. */
export type RouteAdmission =
  | { ok: false; answer: RouteAnswer }
  | {
      ok: true;
      /** Answers the request from its body (read within the route's cap). */
      handle(body: string): Promise<RouteAnswer>;
      /** Called once the request is over, answered or not (releases what `admit` held). */
      done?(): void;
    };

/**
 * A POST route: its body cap and a check made before any body byte is read. Its body counts
 * against the unauthenticated budget (the check admits a request, it does not yet trust it).
 */
export type PostRoute = {
  /** The largest body it reads: a larger Content-Length is 413 before reading, a longer chunked body 413 when it passes. */
  maxBodyBytes: number;
  admit(req: IncomingMessage): Promise<RouteAdmission>;
};

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
  /** Who may read /metrics and /readyz without a credential. Default: loopback, under loopback names or IP literals. */
  ops?: OpsAccessPolicy;
  /** With the console token set: a bearer of it may read /metrics and /readyz from anywhere (guesses throttled). */
  opsBearer?: { token: string; guard: CredentialGuard };
  limits?: Partial<HttpLimits>;
  /** Counts each refusal (the metric). */
  onRefused?: (reason: HttpRefusal) => void;
};

export type RunningHttpServer = { port: number | undefined; close(): Promise<void> };

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...options.limits };
  const refused = (reason: HttpRefusal) => options.onRefused?.(reason);
  const budget = createBodyBudget(limits.unauthenticatedBodyBudgetBytes);
  const io: HttpIo = {
    readBody: (req, res, o) => readRequestBody(req, res, { maxBytes: o.maxBytes, ...(o.unauthenticated ? { budget } : {}) }),
    refused,
  };
  const ops = options.ops ?? opsAccessPolicy({});
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle({ ...options, ops, io }, req, res).catch((error: unknown) => {
      options.logger.warn({ err: error, path: pathOf(req) }, 'http handler error');
      if (!res.headersSent) send(res, 500, 'internal error');
      else res.destroy();
    });
  };
  const server = http.createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Node checks the two timeouts above this often (default 30 s, which would let them run 30 s late).
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  server.on('request', onRequest);
  // Expect: 100-continue is answered by the route (requestBody.ts) only once it wants the body.
  server.on('checkContinue', onRequest);
  server.on('drop', () => refused('connection_limit'));
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

type Handling = HttpServerOptions & { ops: OpsAccessPolicy; io: HttpIo };

async function handle(options: Handling, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = pathOf(req);
  // A body we may refuse unread must not keep its connection: reading it to reuse the connection is what a stranger wants.
  if (carriesBody(req)) res.setHeader('connection', 'close');
  if (req.method === 'GET' && path === '/healthz') return send(res, 200, 'ok');
  const isReadyz = req.method === 'GET' && path === '/readyz';
  const isMetrics = req.method === 'GET' && path === '/metrics' && options.registry !== undefined;
  if (isReadyz || isMetrics) {
    if (!(await opsAllowed(options, req, res))) return;
    if (isReadyz) return answerReadiness(options.readiness ?? {}, options.readinessDetails, res);
    const registry = options.registry as Registry;
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType });
    res.end(body);
    return;
  }
  const route = req.method === 'POST' ? options.postRoutes?.[path] : undefined;
  if (route) return answerPost(options, route, req, res);
  for (const handler of options.handlers ?? []) if (await handler(req, res, options.io)) return;
  send(res, 404, 'not found');
}

/** True when the caller may read an operational endpoint; otherwise answered (401, 403 or 429). */
async function opsAllowed(options: Handling, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const auth = req.headers.authorization;
  const bearer = options.opsBearer;
  if (bearer && typeof auth === 'string' && auth.startsWith('Bearer ')) {
    const verdict = await bearer.guard.judge('bearer', req, () => sameSecret(auth.slice(7).trim(), bearer.token));
    if (verdict.ok) return true;
    if (verdict.status === 429) {
      options.io.refused('throttled');
      send(res, 429, `too many wrong tokens: try again in ${verdict.retryAfterSeconds} s`, { 'retry-after': String(verdict.retryAfterSeconds) });
    } else send(res, 401, 'wrong token: send Authorization: Bearer <HOOKRELAY_CONSOLE_TOKEN>');
    return false;
  }
  const refusal = opsRefusal({ remoteAddress: req.socket.remoteAddress, headers: req.headers }, options.ops);
  if (refusal === undefined) return true;
  options.io.refused(refusal);
  send(
    res,
    403,
    refusal === 'ops_host'
      ? `forbidden: this server does not answer to the host "${hostForMessage(req.headers.host)}" here; list it in HOOKRELAY_OPS_HOSTS`
      : `forbidden: ${pathOf(req)} answers this machine (loopback), the addresses in HOOKRELAY_OPS_ALLOW_FROM, or Authorization: Bearer <HOOKRELAY_CONSOLE_TOKEN>`,
  );
  return false;
}

async function answerReadiness(
  readiness: Record<string, ReadinessCheck>,
  readinessDetails: HttpServerOptions['readinessDetails'],
  res: ServerResponse,
): Promise<void> {
  const results = await Promise.all(Object.entries(readiness).map(async ([name, check]) => [name, await withinTimeout(check)] as const));
  const ready = results.every(([, ok]) => ok);
  // F1: what the local spools hold, beside the checks (never deciding readiness).
  const details = readinessDetails ? await readinessDetails().catch(() => ({})) : {};
  res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ready, checks: Object.fromEntries(results), ...details }));
}

const BODY_REFUSAL_ANSWER: Readonly<Record<Exclude<BodyRefusal, 'body_aborted'>, RouteAnswer>> = {
  body_too_large: { status: 413, body: 'body too large for this route' },
  // Another request's body frees the budget within seconds (the request timeout): QStash retries.
  body_budget: { status: 503, body: 'busy: try again shortly', headers: { 'retry-after': '5' } },
};

async function answerPost(options: Handling, route: PostRoute, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const admission = await route.admit(req);
  if (!admission.ok) {
    options.io.refused('pre_read');
    return send(res, admission.answer.status, admission.answer.body, admission.answer.headers);
  }
  try {
    const read = await options.io.readBody(req, res, { maxBytes: route.maxBodyBytes, unauthenticated: true });
    if (!read.ok) {
      options.io.refused(read.reason);
      if (read.reason === 'body_aborted') return;
      const answer = BODY_REFUSAL_ANSWER[read.reason];
      return send(res, answer.status, answer.body, answer.headers);
    }
    const answer = await admission.handle(read.body.toString('utf8'));
    send(res, answer.status, answer.body, answer.headers);
  } finally {
    admission.done?.();
  }
}

function carriesBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
}

/** A Host header as printed in a refusal: printable ASCII only, cut short. */
function hostForMessage(host: string | undefined): string {
  return (host ?? '').replace(/[^\x21-\x7e]/g, '?').slice(0, 100);
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

function send(res: ServerResponse, status: number, body: string, headers: Readonly<Record<string, string>> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(body);
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
