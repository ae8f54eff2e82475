/**
 * A local QStash-compatible server for tests.
 *
 * It speaks the wire protocol of `@upstash/qstash` 2.12.0 as described in
 * `../shared/research/qstash-protocol.md`, so the real `Client`
 * can publish to it and the real `Receiver` can verify what it delivers:
 *
 * - API (bearer token, or `?qstash_token=` outside publish routes):
 *   `POST /v2/publish/<destination>`, `POST /v2/enqueue/<queue>/<destination>`, `POST /v2/batch`,
 *   `GET|DELETE /v2/messages/:id`, `DELETE /v2/messages?messageIds=…|count=…`,
 *   `GET /v2/dlq`, `GET|DELETE /v2/dlq/:dlqId`, `DELETE /v2/dlq?dlqIds=…`, `GET /v2/keys`.
 * - Delivery engine: POSTs (or `Upstash-Method`) the exact body to the destination with the
 *   forwarded headers (`Upstash-Forward-X` → `X`, plus `Content-Type`), a fresh HS256
 *   `Upstash-Signature` per attempt, `Upstash-Message-Id`, `Upstash-Retried`; retries per
 *   `Upstash-Retries` (default 3, capped) with a short, test-configurable backoff; exhausted →
 *   DLQ + failure callback; `Upstash-Callback` after every attempt that got an HTTP response.
 * - Failure modes: `setDown(true)` (sockets destroyed → the client sees a network error),
 *   `setPublishStatus(401 | 429 | 503 | …)`, `setPublishDelayMs(ms)` (accepts, then answers late).
 *
 * Emulator choices where the real service is undocumented (kept deliberately simple):
 * - deliveries only go to `http://127.0.0.1` / `http://localhost` (anything else is refused at
 *   publish with 400), never over TLS;
 * - `Upstash-Delay` / `Upstash-Not-Before` are honoured but scaled by `delayScale` and capped;
 * - `Upstash-Retry-Delay` is honoured only when it is a plain number of ms (capped); expressions
 *   fall back to `retryBackoffMs`;
 * - an attempt with no HTTP response (timeout, connection error) sends no per-attempt callback;
 *   a failure callback after such an attempt carries `status: 0`;
 * - callbacks themselves get `callbackRetries` extra attempts (default 0) and no callbacks of
 *   their own.
 * Every loop and wait is bounded. Nothing leaves 127.0.0.1.
 */
import http from 'node:http';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

/** The fixed credentials of the official `qstash dev` server ("User 1"), also the SDK's dev mode. */
export const QSTASH_DEV_CREDENTIALS = {
  token: 'eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0=',
  currentSigningKey: 'sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r',
  nextSigningKey: 'sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs',
} as const;

export type QStashServerOptions = {
  /** Bearer token the API accepts. Default: random per server. */
  token?: string;
  /** Default: random `sig_…` per server. */
  currentSigningKey?: string;
  /** Default: random `sig_…` per server. */
  nextSigningKey?: string;
  /** Default 0 (any free port). Always bound to 127.0.0.1. */
  port?: number;
  /** Backoff before the retry that follows attempt `retried` (0-based). Default 20 ms. */
  retryBackoffMs?: number | ((retried: number) => number);
  /** Retries used when `Upstash-Retries` is absent. Default 3 (as the real service). */
  defaultRetries?: number;
  /** Cap on `Upstash-Retries` (the "plan maximum"). Default 5. */
  maxRetries?: number;
  /** Per-attempt timeout when `Upstash-Timeout` is absent, and cap on it. Default 5000 ms. */
  deliveryTimeoutMs?: number;
  /** Factor applied to `Upstash-Delay` / `Upstash-Not-Before` waits. Default 0.001 (10 s → 10 ms). */
  delayScale?: number;
  /** Cap on any scheduled wait (delay, retry delay, publish delay). Default 2000 ms. */
  maxWaitMs?: number;
  /** Deduplication window. Default: the server's lifetime. */
  dedupWindowMs?: number;
  /** Extra attempts for callback / failure-callback deliveries. Default 0. */
  callbackRetries?: number;
  /** Largest accepted API request body. Default 1 MiB. */
  maxRequestBodyBytes?: number;
  /** Largest destination response body kept (and echoed in callbacks). Default 64 KiB. */
  maxResponseBodyBytes?: number;
};

export type QStashMessageState = 'scheduled' | 'active' | 'retrying' | 'delivered' | 'failed' | 'cancelled';

export type QStashAttemptRecord = {
  retried: number;
  /** HTTP status of the destination, when it answered. */
  status?: number;
  /** Why there was no HTTP status. */
  error?: 'timeout' | 'network';
  responseBody: string;
  responseHeaders: Record<string, string>;
  startedAt: number;
  durationMs: number;
};

export type QStashServerMessage = {
  messageId: string;
  /** The destination, rebuilt exactly as the JWT `sub`. */
  url: string;
  method: string;
  body: string;
  contentType?: string;
  /** Headers delivered to the destination (names lower-case, `Upstash-Forward-` stripped). */
  forwardHeaders: Record<string, string>;
  /** The `upstash-*` control headers as received (lower-case names). */
  controlHeaders: Record<string, string>;
  deduplicationId?: string;
  maxRetries: number;
  timeoutMs: number;
  callback?: string;
  failureCallback?: string;
  queueName?: string;
  label?: string;
  createdAt: number;
  notBefore: number;
  state: QStashMessageState;
  attempts: QStashAttemptRecord[];
  /** Publishes answered with this message as a deduplication hit. */
  dedupHits: number;
  dlqId?: string;
};

export type QStashDlqEntry = {
  dlqId: string;
  messageId: string;
  url: string;
  method: string;
  body: string;
  header: Record<string, string[]>;
  maxRetries: number;
  createdAt: number;
  notBefore: number;
  callback?: string;
  failureCallback?: string;
  queueName?: string;
  label?: string;
  responseStatus: number;
  responseHeader: Record<string, string[]>;
  responseBody: string;
};

export type QStashIncomingRequest = {
  method: string;
  /** Raw request target (path + query) as received. */
  path: string;
  route: string;
  headers: Record<string, string>;
  body: string;
  /** Status answered; 0 when the socket was destroyed (`setDown`). */
  status: number;
  at: number;
};

export type QStashOutgoingRequest = {
  kind: 'destination' | 'callback' | 'failureCallback';
  /** The message this request belongs to (for callbacks: the source message). */
  messageId: string;
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  retried: number;
  status?: number;
  error?: 'timeout' | 'network';
  responseBody: string;
  at: number;
};

export type QStashServer = {
  url: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
  /** Every accepted message, in publish order (live view). */
  messages: QStashServerMessage[];
  /** DLQ entries still present (live view). */
  dlq: QStashDlqEntry[];
  /** Every API request received, in order (live view). */
  requests: QStashIncomingRequest[];
  /** Every delivery / callback request the server made, in order (live view). */
  outgoing: QStashOutgoingRequest[];
  /** Down: every API request's socket is destroyed without an answer (a client network error). */
  setDown(down: boolean): void;
  /** Forces publish/enqueue/batch answers to this status (401/429/503/…); `undefined` restores. */
  setPublishStatus(status: number | undefined): void;
  /** Accept publishes but answer them only after this many ms (capped at 10 s). */
  setPublishDelayMs(ms: number): void;
  /** Count of publish/enqueue/batch requests received (including refused ones). */
  publishRequestCount(): number;
  /** Resolves when no delivery or callback is scheduled or in flight; rejects after `timeoutMs`. */
  idle(timeoutMs?: number): Promise<void>;
  /** Polls `predicate` every 10 ms; rejects after `timeoutMs` (default 3000). */
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
};

type Outcome = { status: number; json: unknown; headers?: Record<string, string> };

const MAX_PUBLISH_DELAY_MS = 10_000;
const JWT_LIFETIME_SECONDS = 300;
const HOP_BY_HOP = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-connection',
  'expect',
]);

function randomId(prefix: string, bytes = 12): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`;
}

function base64url(input: Buffer | string): string {
  return Buffer.from(input).toString('base64url');
}

/** HS256 JWT exactly as QStash signs deliveries (see the research note). */
export function signQStashJwt(args: { key: string; url: string; body: Buffer | string; nowSeconds?: number }): string {
  const now = args.nowSeconds ?? Math.floor(Date.now() / 1000);
  const header = { alg: 'HS256', typ: 'JWT' };
  // Standard base64url of the SHA-256, keeping the one `=` pad as the real tokens do.
  const digest = createHash('sha256').update(args.body).digest('base64').replace(/\+/g, '-').replace(/\//g, '_');
  const claims = {
    iss: 'Upstash',
    sub: args.url,
    exp: now + JWT_LIFETIME_SECONDS,
    nbf: now,
    iat: now,
    jti: randomId('jwt_', 16),
    body: digest,
  };
  const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  const signature = createHmac('sha256', Buffer.from(args.key, 'utf8')).update(signingInput).digest('base64url');
  return `${signingInput}.${signature}`;
}

function headerRecord(raw: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function lowerCaseRecord(input: unknown): Record<string, string> | undefined {
  if (input === undefined) return {};
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    if (typeof value !== 'string') return undefined;
    out[name.toLowerCase()] = value;
  }
  return out;
}

function toMultiValue(record: Record<string, string>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(record)) out[k] = [v];
  return out;
}

/** Go-style durations (`30s`, `1m30s`, `1.5s`, `500ms`, `1d10h`) or a bare number of seconds → ms. */
export function parseQStashDuration(value: string): number | undefined {
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let consumed = 0;
  let match: RegExpExecArray | null;
  while ((match = re.exec(trimmed)) !== null) {
    total += Number(match[1]) * unitMs[match[2]];
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== trimmed.length) return undefined;
  return total;
}

function isLoopbackHttpUrl(value: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return false;
  }
  return parsed.protocol === 'http:' && (parsed.hostname === '127.0.0.1' || parsed.hostname === 'localhost');
}

function error(status: number, message: string): Outcome {
  return { status, json: { error: message } };
}

export async function startQStashServer(opts: QStashServerOptions = {}): Promise<QStashServer> {
  const token = opts.token ?? randomId('qstash_test_', 18);
  const currentSigningKey = opts.currentSigningKey ?? randomId('sig_', 18);
  const nextSigningKey = opts.nextSigningKey ?? randomId('sig_', 18);
  const defaultRetries = opts.defaultRetries ?? 3;
  const maxRetriesCap = opts.maxRetries ?? 5;
  const deliveryTimeoutMs = opts.deliveryTimeoutMs ?? 5000;
  const delayScale = opts.delayScale ?? 0.001;
  const maxWaitMs = opts.maxWaitMs ?? 2000;
  const dedupWindowMs = opts.dedupWindowMs ?? Number.POSITIVE_INFINITY;
  const callbackRetries = Math.min(opts.callbackRetries ?? 0, 5);
  const maxRequestBodyBytes = opts.maxRequestBodyBytes ?? 1024 * 1024;
  const maxResponseBodyBytes = opts.maxResponseBodyBytes ?? 64 * 1024;
  const backoff = (retried: number): number => {
    const raw = typeof opts.retryBackoffMs === 'function' ? opts.retryBackoffMs(retried) : (opts.retryBackoffMs ?? 20);
    return Math.min(Math.max(0, raw), maxWaitMs);
  };

  const messages: QStashServerMessage[] = [];
  const byId = new Map<string, QStashServerMessage>();
  const bodies = new Map<string, Buffer>();
  const dedup = new Map<string, { messageId: string; at: number }>();
  const dlq: QStashDlqEntry[] = [];
  const requests: QStashIncomingRequest[] = [];
  const outgoing: QStashOutgoingRequest[] = [];
  const timers = new Map<string, NodeJS.Timeout>();
  const inflight = new Set<AbortController>();
  let pendingWork = 0;
  let idleWaiters: Array<() => void> = [];
  let down = false;
  let forcedPublishStatus: number | undefined;
  let publishDelayMs = 0;
  let closed = false;
  let dlqSeq = 0;

  const beginWork = (): void => {
    pendingWork += 1;
  };
  const endWork = (): void => {
    pendingWork -= 1;
    if (pendingWork === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  };

  /** Runs `fn` after `ms` unless the server closes; the wait counts as pending work. */
  const schedule = (key: string, ms: number, fn: () => Promise<void>): void => {
    beginWork();
    const timer = setTimeout(
      () => {
        timers.delete(key);
        if (closed) {
          endWork();
          return;
        }
        fn().finally(endWork);
      },
      Math.min(Math.max(0, ms), maxWaitMs),
    );
    timers.set(key, timer);
  };

  const cancelScheduled = (key: string): void => {
    const timer = timers.get(key);
    if (timer) {
      clearTimeout(timer);
      timers.delete(key);
      endWork();
    }
  };

  type SendResult = {
    status?: number;
    error?: 'timeout' | 'network';
    body: Buffer;
    headers: Record<string, string>;
  };

  /** One HTTP request to a loopback URL, with a timeout and a capped response body. */
  const send = (url: string, method: string, headers: Record<string, string>, body: Buffer, timeoutMs: number): Promise<SendResult> =>
    new Promise((resolve) => {
      if (!isLoopbackHttpUrl(url)) {
        resolve({ error: 'network', body: Buffer.alloc(0), headers: {} });
        return;
      }
      const target = new URL(url);
      const controller = new AbortController();
      inflight.add(controller);
      let settled = false;
      const finish = (result: SendResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        inflight.delete(controller);
        resolve(result);
      };
      const timer = setTimeout(() => {
        controller.abort();
        finish({ error: 'timeout', body: Buffer.alloc(0), headers: {} });
      }, timeoutMs);
      const hasBody = method !== 'GET' && method !== 'HEAD';
      const outgoingHeaders: Record<string, string> = { ...headers };
      if (hasBody) outgoingHeaders['content-length'] = String(body.length);
      const req = http.request(
        {
          host: '127.0.0.1',
          port: target.port === '' ? 80 : Number(target.port),
          path: `${target.pathname}${target.search}`,
          method,
          headers: { ...outgoingHeaders, host: target.host },
          agent: false,
          signal: controller.signal,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            if (size < maxResponseBodyBytes) {
              const slice = chunk.subarray(0, maxResponseBodyBytes - size);
              chunks.push(slice);
              size += slice.length;
            }
          });
          res.on('end', () => finish({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: headerRecord(res.headers) }));
          res.on('error', () => finish({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: headerRecord(res.headers) }));
        },
      );
      req.on('error', () => finish({ error: controller.signal.aborted ? 'timeout' : 'network', body: Buffer.alloc(0), headers: {} }));
      if (hasBody) req.end(body);
      else req.end();
    });

  const callbackBody = (msg: QStashServerMessage, attempt: QStashAttemptRecord, dlqId?: string): string =>
    JSON.stringify({
      status: attempt.status ?? 0,
      header: toMultiValue(attempt.responseHeaders),
      body: Buffer.from(attempt.responseBody, 'utf8').toString('base64'),
      retried: attempt.retried,
      maxRetries: msg.maxRetries,
      sourceMessageId: msg.messageId,
      topicName: '',
      endpointName: '',
      url: msg.url,
      method: msg.method,
      sourceHeader: toMultiValue(msg.forwardHeaders),
      sourceBody: (bodies.get(msg.messageId) ?? Buffer.alloc(0)).toString('base64'),
      notBefore: String(msg.notBefore),
      createdAt: String(msg.createdAt),
      scheduleId: '',
      callerIP: '127.0.0.1',
      ...(dlqId !== undefined ? { dlqId } : {}),
    });

  const sendCallback = async (kind: 'callback' | 'failureCallback', url: string, msg: QStashServerMessage, payload: string): Promise<void> => {
    const callbackMessageId = randomId('msg_');
    const bytes = Buffer.from(payload, 'utf8');
    for (let retried = 0; retried <= callbackRetries && !closed; retried++) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'Upstash-QStash',
        'upstash-signature': signQStashJwt({ key: currentSigningKey, url, body: bytes }),
        'upstash-message-id': callbackMessageId,
        'upstash-retried': String(retried),
        'upstash-caller-ip': '127.0.0.1',
      };
      const result = await send(url, 'POST', headers, bytes, deliveryTimeoutMs);
      outgoing.push({
        kind,
        messageId: msg.messageId,
        url,
        method: 'POST',
        headers,
        body: payload,
        retried,
        ...(result.status !== undefined ? { status: result.status } : {}),
        ...(result.error !== undefined ? { error: result.error } : {}),
        responseBody: result.body.toString('utf8'),
        at: Date.now(),
      });
      if (result.status !== undefined && result.status >= 200 && result.status < 300) return;
    }
  };

  const moveToDlq = (msg: QStashServerMessage, last: QStashAttemptRecord): string => {
    dlqSeq += 1;
    const dlqId = `${Date.now()}-${dlqSeq}`;
    msg.state = 'failed';
    msg.dlqId = dlqId;
    dlq.push({
      dlqId,
      messageId: msg.messageId,
      url: msg.url,
      method: msg.method,
      body: msg.body,
      header: toMultiValue(msg.forwardHeaders),
      maxRetries: msg.maxRetries,
      createdAt: msg.createdAt,
      notBefore: msg.notBefore,
      ...(msg.callback !== undefined ? { callback: msg.callback } : {}),
      ...(msg.failureCallback !== undefined ? { failureCallback: msg.failureCallback } : {}),
      ...(msg.queueName !== undefined ? { queueName: msg.queueName } : {}),
      ...(msg.label !== undefined ? { label: msg.label } : {}),
      responseStatus: last.status ?? 0,
      responseHeader: toMultiValue(last.responseHeaders),
      responseBody: last.responseBody,
    });
    return dlqId;
  };

  const attemptDelivery = async (msg: QStashServerMessage): Promise<void> => {
    if (msg.state === 'cancelled' || closed) return;
    msg.state = 'active';
    const retried = msg.attempts.length;
    const body = bodies.get(msg.messageId) ?? Buffer.alloc(0);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(msg.forwardHeaders)) {
      if (!HOP_BY_HOP.has(name)) headers[name] = value;
    }
    if (msg.contentType !== undefined) headers['content-type'] = msg.contentType;
    headers['user-agent'] = 'Upstash-QStash';
    headers['upstash-signature'] = signQStashJwt({ key: currentSigningKey, url: msg.url, body });
    headers['upstash-message-id'] = msg.messageId;
    headers['upstash-retried'] = String(retried);
    headers['upstash-caller-ip'] = '127.0.0.1';
    if (msg.queueName !== undefined) headers['upstash-queue-name'] = msg.queueName;

    const startedAt = Date.now();
    const result = await send(msg.url, msg.method, headers, body, msg.timeoutMs);
    const attempt: QStashAttemptRecord = {
      retried,
      ...(result.status !== undefined ? { status: result.status } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
      responseBody: result.body.toString('utf8'),
      responseHeaders: result.headers,
      startedAt,
      durationMs: Date.now() - startedAt,
    };
    msg.attempts.push(attempt);
    outgoing.push({
      kind: 'destination',
      messageId: msg.messageId,
      url: msg.url,
      method: msg.method,
      headers,
      body: body.toString('utf8'),
      retried,
      ...(attempt.status !== undefined ? { status: attempt.status } : {}),
      ...(attempt.error !== undefined ? { error: attempt.error } : {}),
      responseBody: attempt.responseBody,
      at: Date.now(),
    });
    if (closed) return;

    const success = attempt.status !== undefined && attempt.status >= 200 && attempt.status < 300;
    if (success && !isCancelled(msg)) msg.state = 'delivered';
    if (msg.callback !== undefined && attempt.status !== undefined) {
      await sendCallback('callback', msg.callback, msg, callbackBody(msg, attempt));
    }
    // A message cancelled while its attempt was in flight is not retried.
    if (success || isCancelled(msg) || closed) return;
    const nonRetryable = attempt.status === 489 && (result.headers['upstash-nonretryable-error'] ?? '').toLowerCase() === 'true';
    if (nonRetryable || retried >= msg.maxRetries) {
      const dlqId = moveToDlq(msg, attempt);
      if (msg.failureCallback !== undefined) {
        await sendCallback('failureCallback', msg.failureCallback, msg, callbackBody(msg, attempt, dlqId));
      }
      return;
    }
    msg.state = 'retrying';
    const retryDelayHeader = msg.controlHeaders['upstash-retry-delay'];
    const explicit = retryDelayHeader !== undefined && /^\d+$/.test(retryDelayHeader.trim()) ? Number(retryDelayHeader) : undefined;
    schedule(msg.messageId, explicit ?? backoff(retried), () => attemptDelivery(msg));
  };

  type AcceptInput = { destination: string; headers: Record<string, string>; body: Buffer; queueName?: string };

  /** Validates and stores one message (publish, enqueue or batch item); schedules its delivery. */
  const acceptMessage = (input: AcceptInput): Outcome => {
    const { destination, headers, body } = input;
    let destUrl: URL;
    try {
      destUrl = new URL(destination);
    } catch {
      return error(400, 'invalid destination url: endpoint has invalid scheme, add http:// or https://');
    }
    if (destUrl.protocol !== 'http:' && destUrl.protocol !== 'https:') {
      return error(400, 'invalid destination url: endpoint has invalid scheme, add http:// or https://');
    }
    if (!isLoopbackHttpUrl(destination)) {
      return error(400, 'invalid destination url: the local QStash server only delivers to http://127.0.0.1');
    }
    const callback = headers['upstash-callback'];
    const failureCallback = headers['upstash-failure-callback'];
    for (const cb of [callback, failureCallback]) {
      if (cb !== undefined && !isLoopbackHttpUrl(cb)) {
        return error(400, 'invalid callback url: the local QStash server only delivers to http://127.0.0.1');
      }
    }
    const deduplicationId = headers['upstash-deduplication-id'];
    if (deduplicationId?.includes(':')) {
      return error(400, "DeduplicationId cannot contain ':'");
    }
    let maxRetries = defaultRetries;
    const retriesHeader = headers['upstash-retries'];
    if (retriesHeader !== undefined) {
      if (!/^\d+$/.test(retriesHeader.trim())) return error(400, 'invalid Upstash-Retries header');
      maxRetries = Number(retriesHeader);
    }
    maxRetries = Math.min(maxRetries, maxRetriesCap);
    let timeoutMs = deliveryTimeoutMs;
    const timeoutHeader = headers['upstash-timeout'];
    if (timeoutHeader !== undefined) {
      const parsed = parseQStashDuration(timeoutHeader);
      if (parsed === undefined || parsed <= 0) return error(400, 'invalid Upstash-Timeout header');
      timeoutMs = Math.min(parsed, deliveryTimeoutMs);
    }
    const now = Date.now();
    let waitMs = 0;
    const notBeforeHeader = headers['upstash-not-before'];
    const delayHeader = headers['upstash-delay'];
    if (notBeforeHeader !== undefined) {
      if (!/^\d+$/.test(notBeforeHeader.trim())) return error(400, 'invalid Upstash-Not-Before header');
      waitMs = Math.max(0, Number(notBeforeHeader) * 1000 - now) * delayScale;
    } else if (delayHeader !== undefined) {
      const parsed = parseQStashDuration(delayHeader);
      if (parsed === undefined) return error(400, 'invalid Upstash-Delay header');
      waitMs = parsed * delayScale;
    }

    const forwardHeaders: Record<string, string> = {};
    const controlHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name.startsWith('upstash-forward-')) {
        const stripped = name.slice('upstash-forward-'.length);
        if (stripped !== '') forwardHeaders[stripped] = value;
      } else if (name.startsWith('upstash-')) {
        controlHeaders[name] = value;
      }
    }
    const contentType = headers['content-type'];

    let dedupKey: string | undefined;
    if (deduplicationId !== undefined) {
      dedupKey = `id:${deduplicationId}`;
    } else if ((headers['upstash-content-based-deduplication'] ?? '').toLowerCase() === 'true') {
      const h = createHash('sha256');
      h.update(destination)
        .update('\0')
        .update(body)
        .update('\0')
        .update(contentType ?? '');
      for (const [k, v] of Object.entries(forwardHeaders).sort(([a], [b]) => a.localeCompare(b))) {
        h.update('\0').update(k).update('=').update(v);
      }
      dedupKey = `content:${h.digest('hex')}`;
    }
    if (dedupKey !== undefined) {
      const hit = dedup.get(dedupKey);
      if (hit !== undefined && now - hit.at < dedupWindowMs) {
        const existing = byId.get(hit.messageId);
        if (existing) existing.dedupHits += 1;
        return { status: 202, json: { messageId: hit.messageId, url: destination, deduplicated: true } };
      }
    }

    const messageId = randomId('msg_');
    const msg: QStashServerMessage = {
      messageId,
      url: destination,
      method: (headers['upstash-method'] ?? 'POST').toUpperCase(),
      body: body.toString('utf8'),
      ...(contentType !== undefined ? { contentType } : {}),
      forwardHeaders,
      controlHeaders,
      ...(deduplicationId !== undefined ? { deduplicationId } : {}),
      maxRetries,
      timeoutMs,
      ...(callback !== undefined ? { callback } : {}),
      ...(failureCallback !== undefined ? { failureCallback } : {}),
      ...(input.queueName !== undefined ? { queueName: input.queueName } : {}),
      ...(headers['upstash-label'] !== undefined ? { label: headers['upstash-label'] } : {}),
      createdAt: now,
      notBefore: Math.round(now + waitMs / (delayScale === 0 ? 1 : delayScale)),
      state: 'scheduled',
      attempts: [],
      dedupHits: 0,
    };
    messages.push(msg);
    byId.set(messageId, msg);
    bodies.set(messageId, body);
    if (dedupKey !== undefined) dedup.set(dedupKey, { messageId, at: now });
    schedule(messageId, waitMs, () => attemptDelivery(msg));
    return { status: 201, json: { messageId, url: destination } };
  };

  const messageView = (msg: QStashServerMessage): Record<string, unknown> => ({
    messageId: msg.messageId,
    url: msg.url,
    method: msg.method,
    header: toMultiValue(msg.forwardHeaders),
    body: msg.body,
    maxRetries: msg.maxRetries,
    notBefore: msg.notBefore,
    createdAt: msg.createdAt,
    callerIP: '127.0.0.1',
    ...(msg.callback !== undefined ? { callback: msg.callback } : {}),
    ...(msg.failureCallback !== undefined ? { failureCallback: msg.failureCallback } : {}),
    ...(msg.queueName !== undefined ? { queueName: msg.queueName } : {}),
    ...(msg.label !== undefined ? { label: msg.label } : {}),
  });

  const cancelMessage = (msg: QStashServerMessage): boolean => {
    if (msg.state !== 'scheduled' && msg.state !== 'retrying' && msg.state !== 'active') return false;
    msg.state = 'cancelled';
    cancelScheduled(msg.messageId);
    return true;
  };

  const removeDlq = (ids: ReadonlySet<string> | undefined): number => {
    let removed = 0;
    for (let i = dlq.length - 1; i >= 0; i--) {
      if (ids === undefined || ids.has(dlq[i].dlqId)) {
        dlq.splice(i, 1);
        removed += 1;
      }
    }
    return removed;
  };

  /** Query values, repeated keys and comma-separated values both accepted. */
  const multi = (q: URLSearchParams, key: string): string[] | undefined => {
    const values = q
      .getAll(key)
      .flatMap((v) => v.split(','))
      .filter((v) => v !== '');
    return values.length > 0 ? values : undefined;
  };

  const listDlq = (q: URLSearchParams): Outcome => {
    const count = Math.min(Math.max(Number(q.get('count') ?? '100') || 100, 1), 100);
    const start = Number(q.get('cursor') ?? '0') || 0;
    const ids = multi(q, 'dlqIds');
    const urls = multi(q, 'url');
    const statuses = multi(q, 'responseStatus')?.map(Number);
    const labels = multi(q, 'label');
    const queues = multi(q, 'queueName');
    const from = q.get('fromDate') !== null ? Number(q.get('fromDate')) : undefined;
    const to = q.get('toDate') !== null ? Number(q.get('toDate')) : undefined;
    const filtered = dlq.filter(
      (e) =>
        (ids === undefined || ids.includes(e.dlqId)) &&
        (urls === undefined || urls.includes(e.url)) &&
        (statuses === undefined || statuses.includes(e.responseStatus)) &&
        (labels === undefined || (e.label !== undefined && labels.includes(e.label))) &&
        (queues === undefined || (e.queueName !== undefined && queues.includes(e.queueName))) &&
        (from === undefined || e.createdAt >= from) &&
        (to === undefined || e.createdAt <= to),
    );
    const page = filtered.slice(start, start + count);
    const next = start + count < filtered.length ? String(start + count) : undefined;
    return { status: 200, json: { messages: page, ...(next !== undefined ? { cursor: next } : {}) } };
  };

  const forcedOutcome = (status: number): Outcome => {
    if (status === 429) {
      const reset = String(Math.floor(Date.now() / 1000) + 1);
      return {
        status,
        json: { error: 'Exceeded burst rate limit' },
        headers: { 'Burst-RateLimit-Limit': '100', 'Burst-RateLimit-Remaining': '0', 'Burst-RateLimit-Reset': reset },
      };
    }
    if (status === 401) return error(401, 'unauthorized');
    return error(status, `forced status ${status}`);
  };

  const handle = async (
    req: http.IncomingMessage,
    rawPath: string,
    headers: Record<string, string>,
    body: Buffer,
  ): Promise<{ route: string; outcome: Outcome }> => {
    const method = (req.method ?? 'GET').toUpperCase();
    const [pathname, query = ''] = splitOnce(rawPath, '?');
    const q = new URLSearchParams(query);
    const isPublish = pathname.startsWith('/v2/publish/') || pathname.startsWith('/v2/enqueue/');
    const route = routeName(method, pathname);

    const auth = headers.authorization;
    const presented = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : isPublish ? undefined : (q.get('qstash_token') ?? undefined);
    if (presented !== token) return { route, outcome: error(401, 'unauthorized') };

    if ((isPublish || route === 'batch') && forcedPublishStatus !== undefined) {
      return { route, outcome: forcedOutcome(forcedPublishStatus) };
    }

    if (method === 'POST' && pathname.startsWith('/v2/publish/')) {
      // The destination is everything after the prefix in the RAW target, query included.
      const destination = rawPath.slice('/v2/publish/'.length);
      return { route, outcome: acceptMessage({ destination, headers, body }) };
    }
    if (method === 'POST' && pathname.startsWith('/v2/enqueue/')) {
      const rest = rawPath.slice('/v2/enqueue/'.length);
      const slash = rest.indexOf('/');
      if (slash <= 0) return { route, outcome: error(400, 'queue name and destination required') };
      return {
        route,
        outcome: acceptMessage({ destination: rest.slice(slash + 1), headers, body, queueName: decodeURIComponent(rest.slice(0, slash)) }),
      };
    }
    if (method === 'POST' && pathname === '/v2/batch') {
      let items: unknown;
      try {
        items = JSON.parse(body.toString('utf8'));
      } catch {
        return { route, outcome: error(400, 'invalid request body') };
      }
      if (!Array.isArray(items) || items.length === 0 || items.length > 100) {
        return { route, outcome: error(400, 'batch must be a non-empty array of at most 100 messages') };
      }
      const prepared: AcceptInput[] = [];
      for (const item of items as unknown[]) {
        if (item === null || typeof item !== 'object') return { route, outcome: error(400, 'invalid batch item') };
        const rec = item as Record<string, unknown>;
        const itemHeaders = lowerCaseRecord(rec.headers);
        if (typeof rec.destination !== 'string' || itemHeaders === undefined) return { route, outcome: error(400, 'invalid batch item') };
        if (rec.body !== undefined && typeof rec.body !== 'string') return { route, outcome: error(400, 'invalid batch item') };
        prepared.push({
          destination: rec.destination,
          headers: itemHeaders,
          body: Buffer.from(typeof rec.body === 'string' ? rec.body : '', 'utf8'),
          ...(typeof rec.queue === 'string' ? { queueName: rec.queue } : {}),
        });
      }
      const results: unknown[] = [];
      for (const p of prepared) {
        const outcome = acceptMessage(p);
        if (outcome.status >= 400) return { route, outcome };
        results.push(outcome.json);
      }
      return { route, outcome: { status: 200, json: results } };
    }
    if (pathname === '/v2/keys' && method === 'GET') {
      return { route, outcome: { status: 200, json: { current: currentSigningKey, next: nextSigningKey } } };
    }
    const messageMatch = /^\/v2\/messages\/([^/]+)$/.exec(pathname);
    if (messageMatch) {
      const msg = byId.get(decodeURIComponent(messageMatch[1]));
      const live = msg !== undefined && (msg.state === 'scheduled' || msg.state === 'active' || msg.state === 'retrying');
      if (method === 'GET') {
        return { route, outcome: live && msg ? { status: 200, json: messageView(msg) } : error(404, 'message not found') };
      }
      if (method === 'DELETE') {
        return { route, outcome: msg && cancelMessage(msg) ? { status: 202, json: { cancelled: 1 } } : error(404, 'message not found') };
      }
    }
    if (pathname === '/v2/messages' && method === 'DELETE') {
      const ids = multi(q, 'messageIds');
      let cancelled = 0;
      const targets = ids === undefined ? messages : ids.map((id) => byId.get(id)).filter((m): m is QStashServerMessage => m !== undefined);
      const limit = ids === undefined ? Math.min(Number(q.get('count') ?? '100') || 100, 100) : targets.length;
      for (const m of targets) {
        if (cancelled >= limit) break;
        if (cancelMessage(m)) cancelled += 1;
      }
      return { route, outcome: { status: 202, json: { cancelled } } };
    }
    if (pathname === '/v2/dlq' && method === 'GET') return { route, outcome: listDlq(q) };
    if (pathname === '/v2/dlq' && method === 'DELETE') {
      const ids = multi(q, 'dlqIds');
      const deleted = removeDlq(ids === undefined ? undefined : new Set(ids));
      return { route, outcome: { status: 200, json: { deleted } } };
    }
    const dlqMatch = /^\/v2\/dlq\/([^/]+)$/.exec(pathname);
    if (dlqMatch) {
      const id = decodeURIComponent(dlqMatch[1]);
      const entry = dlq.find((e) => e.dlqId === id);
      if (method === 'GET') return { route, outcome: entry ? { status: 200, json: entry } : error(404, 'dlq message not found') };
      if (method === 'DELETE') {
        return { route, outcome: entry ? { status: 200, json: { deleted: removeDlq(new Set([id])) } } : error(404, 'dlq message not found') };
      }
    }
    return { route, outcome: error(404, 'not found') };
  };

  const server = http.createServer((req, res) => {
    const rawPath = req.url ?? '/';
    const headers = headerRecord(req.headers);
    const method = (req.method ?? 'GET').toUpperCase();
    const route = routeName(method, splitOnce(rawPath, '?')[0]);
    const record: QStashIncomingRequest = { method, path: rawPath, route, headers, body: '', status: 0, at: Date.now() };
    requests.push(record);
    if (down) {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxRequestBodyBytes) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('error', () => req.socket.destroy());
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      record.body = body.toString('utf8');
      const respond = (outcome: Outcome): void => {
        record.status = outcome.status;
        if (res.destroyed) return;
        const payload = JSON.stringify(outcome.json);
        res.writeHead(outcome.status, { 'content-type': 'application/json', ...(outcome.headers ?? {}) });
        res.end(payload);
      };
      if (tooLarge) {
        respond(error(413, 'request body too large'));
        return;
      }
      handle(req, rawPath, headers, body).then(
        ({ outcome }) => {
          const delayed = (record.route === 'publish' || record.route === 'enqueue' || record.route === 'batch') && publishDelayMs > 0;
          if (delayed) setTimeout(() => respond(outcome), Math.min(publishDelayMs, MAX_PUBLISH_DELAY_MS));
          else respond(outcome);
        },
        () => respond(error(500, 'internal error')),
      );
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    token,
    currentSigningKey,
    nextSigningKey,
    messages,
    dlq,
    requests,
    outgoing,
    setDown(value: boolean) {
      down = value;
    },
    setPublishStatus(status: number | undefined) {
      forcedPublishStatus = status;
    },
    setPublishDelayMs(ms: number) {
      publishDelayMs = Math.max(0, Math.min(ms, MAX_PUBLISH_DELAY_MS));
    },
    publishRequestCount() {
      return requests.filter((r) => r.route === 'publish' || r.route === 'enqueue' || r.route === 'batch').length;
    },
    idle(timeoutMs = 5000) {
      if (pendingWork === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          idleWaiters = idleWaiters.filter((w) => w !== done);
          reject(new Error(`qstash server not idle after ${timeoutMs} ms (${pendingWork} pending)`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          resolve();
        };
        idleWaiters.push(done);
      });
    },
    async waitFor(predicate: () => boolean, timeoutMs = 3000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const key of [...timers.keys()]) cancelScheduled(key);
      for (const controller of inflight) controller.abort();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** Reads the state afresh (a cancel may land while an attempt is awaited). */
function isCancelled(msg: QStashServerMessage): boolean {
  return msg.state === 'cancelled';
}

function splitOnce(value: string, sep: string): [string, string | undefined] {
  const i = value.indexOf(sep);
  return i < 0 ? [value, undefined] : [value.slice(0, i), value.slice(i + 1)];
}

function routeName(method: string, pathname: string): string {
  if (pathname.startsWith('/v2/publish/')) return 'publish';
  if (pathname.startsWith('/v2/enqueue/')) return 'enqueue';
  if (pathname === '/v2/batch') return 'batch';
  if (pathname === '/v2/keys') return 'keys';
  if (pathname.startsWith('/v2/messages')) return method === 'GET' ? 'messages.get' : 'messages.cancel';
  if (pathname.startsWith('/v2/dlq')) return method === 'GET' ? 'dlq.list' : 'dlq.delete';
  return 'unknown';
}

export type LoopbackRequest = { method: string; url: string; headers: Record<string, string>; body: string; at: number };

export type LoopbackReceiver = {
  /** Base URL, `http://127.0.0.1:<port>`. */
  url: string;
  requests: LoopbackRequest[];
  close(): Promise<void>;
};

/**
 * A node:http receiver on 127.0.0.1 recording every request (raw body text); `respond` picks the
 * answer (default 200 `ok`). For QStash destinations and callback endpoints in tests.
 */
export async function startLoopbackReceiver(
  respond: (req: LoopbackRequest, index: number) => { status: number; body?: string; headers?: Record<string, string> } = () => ({ status: 200, body: 'ok' }),
): Promise<LoopbackReceiver> {
  const requests: LoopbackRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const record: LoopbackRequest = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: headerRecord(req.headers),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      requests.push(record);
      const answer = respond(record, requests.length - 1);
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...(answer.headers ?? {}) });
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
