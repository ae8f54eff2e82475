/**
 * The direct HTTP transport: one pooled keep-alive undici Agent whose connector is guarded by
 * the SSRF guard (Q5), plus an unguarded one for operator-trusted targets. `send` POSTs once,
 * never follows a redirect, bounds the whole attempt by one deadline (W4) and never throws for
 * an HTTP status or a network problem: it returns a typed outcome.
 */
import type { EventEmitter } from 'node:events';
import { userAgent } from './userAgent.ts';
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { discardBody, readCapped } from './bodyReader.ts';
import { startDeadline, type Deadline } from './deadline.ts';
import { dispatchDiscarding, type DiscardLimits, type ResponseHeaders } from './discardExchange.ts';
import { describeError, isSsrfBlockedError, SSRF_BLOCKED_HINT } from '../contract/errors.ts';
import { createGuardedConnector, createTrustedConnector } from './guardedConnector.ts';
import { checkDestination, ipLiteralHost, isAddressAllowed, parseAllowedCidrs, type Cidr, type DestinationCheck, type ResolveHost } from './ssrfGuard.ts';
import type { TransportErrorClass } from './types.ts';

/** Largest timer Node accepts (2^31-1 ms, W1). */
const MAX_TIMEOUT_MS = 2_147_483_647;
/** Q8: a notification response is kept as at most this many bytes. */
const MAX_EXCERPT_BYTES = 2048;
/** How long a notification waits for its excerpt once the status is known. */
const EXCERPT_WAIT_MS = 1000;
/** A discarded body is drained (to keep the connection) up to this size, else the socket is dropped. */
const DISCARD_LIMIT_BYTES = 1024 * 1024;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 4_000;
const DEFAULT_KEEP_ALIVE_MAX_TIMEOUT_MS = 60_000;
const DEFAULT_CONNECTIONS_PER_ORIGIN = 64;
/** Distinct IP literals whose SSRF verdict is remembered per transport. */
const LITERAL_VERDICT_CACHE_SIZE = 1024;

export type FetchTransportOptions = {
  /** HOOKRELAY_ALLOWED_CIDRS (string, parsed here) or already-parsed ranges; default none. */
  allowedCidrs?: string | readonly Cidr[];
  /** DNS resolution for guarded requests (tests inject a stub). */
  resolve?: ResolveHost;
  connectTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  keepAliveMaxTimeoutMs?: number;
  connectionsPerOrigin?: number;
};

export type SendRequest = {
  url: string;
  body: string;
  /** Already resolved (templates expanded, forbidden names rejected). */
  headers: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Operator-trusted target: skips the SSRF guard (env hooks, APP_URL, QSTASH_URL). */
  trusted?: boolean;
  /** 'discard': the body is not interpreted (notifications); else a capped read of a 2xx body. */
  read: 'discard' | { maxBytes: number };
  /** With 'discard': keep up to this many bytes (≤ 2048) of the body as an excerpt (Q8). */
  excerptBytes?: number;
};

export type SendOutcome =
  | {
      kind: 'response';
      status: number;
      headers: ResponseHeaders;
      /** The 2xx body, in capped mode, when not over the cap. */
      body?: Uint8Array;
      /** Capped mode: more than maxBytes arrived; reading stopped. */
      tooLarge?: boolean;
      /** Discard mode with excerptBytes: the first bytes of the body. */
      excerpt?: Uint8Array;
      durationMs: number;
    }
  | { kind: 'error'; errorClass: TransportErrorClass; durationMs: number /** error code only, never remote text */; detail?: string };

const TIMEOUT_ERROR_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Where a request goes, from a checked URL. */
type Target = { readonly origin: string; readonly path: string };
/** Distinct URLs remembered per transport (cleared when full). */
const TARGET_CACHE_SIZE = 1024;

export class FetchTransport {
  readonly #allowed: readonly Cidr[];
  readonly #resolve: ResolveHost | undefined;
  readonly #guarded: Agent;
  readonly #trusted: Agent;
  readonly #literalVerdicts = new Map<string, boolean>();
  readonly #targets = new Map<string, TransportErrorClass | Target>();
  #closed = false;

  constructor(options: FetchTransportOptions = {}) {
    this.#allowed = typeof options.allowedCidrs === 'string' ? parseAllowedCidrs(options.allowedCidrs) : [...(options.allowedCidrs ?? [])];
    this.#resolve = options.resolve;
    const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const pool = {
      keepAliveTimeout: options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
      keepAliveMaxTimeout: options.keepAliveMaxTimeoutMs ?? DEFAULT_KEEP_ALIVE_MAX_TIMEOUT_MS,
      connections: options.connectionsPerOrigin ?? DEFAULT_CONNECTIONS_PER_ORIGIN,
      pipelining: 1,
      // The per-attempt deadline (W4) governs; undici's own idle timers are off.
      headersTimeout: 0,
      bodyTimeout: 0,
    };
    this.#guarded = new Agent({ ...pool, connect: createGuardedConnector({ allowed: this.#allowed, resolve: this.#resolve, connectTimeoutMs }) });
    this.#trusted = new Agent({ ...pool, connect: createTrustedConnector(connectTimeoutMs) });
  }

  /** Q5: checks a destination without connecting (used before a QStash publish). */
  checkDestination(url: string, trusted = false): Promise<DestinationCheck> {
    if (trusted) return Promise.resolve({ ok: true });
    return checkDestination(url, this.#allowed, this.#resolve);
  }

  async send(req: SendRequest): Promise<SendOutcome> {
    const startedAt = performance.now();
    const target = this.#checkTarget(req);
    if (typeof target === 'string') return failure(target, startedAt, target === 'ssrf_blocked' ? SSRF_BLOCKED_HINT : undefined);
    if (req.signal?.aborted) return failure('cancelled', startedAt);

    const deadline = startDeadline(req.timeoutMs, req.signal);
    const dispatcher = req.trusted ? this.#trusted : this.#guarded;
    const options = {
      origin: target.origin,
      path: target.path,
      method: 'POST' as const,
      // hookrelay's own user agent, always: a caller's header never replaces it.
      headers: { ...req.headers, 'user-agent': userAgent() },
      body: req.body,
    };
    if (req.read === 'discard') return this.#sendDiscarding(req, dispatcher, options, deadline, startedAt);
    try {
      const response = await dispatcher.request({
        ...options,
        // The deadline is the signal (EventEmitter-shaped, which undici accepts): no AbortController per request.
        signal: deadline as unknown as EventEmitter,
      });
      return await this.#readCapped(req.read, response, deadline, startedAt);
    } catch (error) {
      return thrown(error, deadline, startedAt);
    } finally {
      deadline.dispose();
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([this.#guarded.close(), this.#trusted.close()]);
  }

  /**
   * Refuses a bad URL or a blocked IP literal before anything touches the network; else where to
   * send. The answer depends only on the URL, `trusted` and this transport's fixed allow-list:
   * memoized per URL (a hook sends to the same URL again and again).
   */
  #checkTarget(req: SendRequest): TransportErrorClass | Target {
    if (this.#closed) return 'configuration';
    if (!Number.isFinite(req.timeoutMs) || req.timeoutMs <= 0 || req.timeoutMs > MAX_TIMEOUT_MS) return 'configuration';
    const key = req.trusted ? `t ${req.url}` : `g ${req.url}`;
    let verdict = this.#targets.get(key);
    if (verdict === undefined) {
      verdict = this.#parseTarget(req.url, req.trusted === true);
      if (this.#targets.size >= TARGET_CACHE_SIZE) this.#targets.clear();
      this.#targets.set(key, verdict);
    }
    return verdict;
  }

  #parseTarget(raw: string, trusted: boolean): TransportErrorClass | Target {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return 'configuration';
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'configuration';
    if (url.username !== '' || url.password !== '') return 'configuration';
    if (url.port === '0') return 'configuration'; // W1: never a real listener
    const target = Object.freeze({ origin: url.origin, path: `${url.pathname}${url.search}` });
    if (trusted) return target;
    const literal = ipLiteralHost(url.hostname);
    if (literal !== undefined && !this.#literalAllowed(literal)) return 'ssrf_blocked';
    return target;
  }

  /** The verdict for an IP literal depends only on it and this transport's fixed allow-list: memoized. */
  #literalAllowed(literal: string): boolean {
    let verdict = this.#literalVerdicts.get(literal);
    if (verdict === undefined) {
      verdict = isAddressAllowed(literal, this.#allowed);
      if (this.#literalVerdicts.size >= LITERAL_VERDICT_CACHE_SIZE) this.#literalVerdicts.clear();
      this.#literalVerdicts.set(literal, verdict);
    }
    return verdict;
  }

  /** W3: the body is not interpreted: one dispatch, no response stream (discardExchange.ts), which disposes the deadline. */
  async #sendDiscarding(
    req: SendRequest,
    dispatcher: Dispatcher,
    options: Dispatcher.DispatchOptions,
    deadline: Deadline,
    startedAt: number,
  ): Promise<SendOutcome> {
    const excerptBytes = Math.min(Math.max(0, Math.floor(req.excerptBytes ?? 0)), MAX_EXCERPT_BYTES);
    try {
      const { status, headers, excerpt } = await dispatchDiscarding(dispatcher, options, deadline, discardLimits(excerptBytes));
      return excerpt
        ? { kind: 'response', status, headers, excerpt, durationMs: performance.now() - startedAt }
        : { kind: 'response', status, headers, durationMs: performance.now() - startedAt };
    } catch (error) {
      return thrown(error, deadline, startedAt);
    }
  }

  async #readCapped(read: { maxBytes: number }, response: Dispatcher.ResponseData, deadline: Deadline, startedAt: number): Promise<SendOutcome> {
    const status = response.statusCode;
    const headers = response.headers as ResponseHeaders;
    if (status < 200 || status >= 300) {
      // R5-order: a non-2xx body is not read.
      discardBody(response.body, DISCARD_LIMIT_BYTES, deadline.remainingMs());
      return { kind: 'response', status, headers, durationMs: performance.now() - startedAt };
    }
    const body = await readCapped(response.body, read.maxBytes);
    return body.tooLarge
      ? { kind: 'response', status, headers, tooLarge: true, durationMs: performance.now() - startedAt }
      : { kind: 'response', status, headers, body: body.bytes, durationMs: performance.now() - startedAt };
  }
}

/** The limits of a discarding exchange, one object per excerpt size (most senders use one or two). */
const discardLimitsBySize = new Map<number, DiscardLimits>();
function discardLimits(excerptBytes: number): DiscardLimits {
  let limits = discardLimitsBySize.get(excerptBytes);
  if (limits === undefined) {
    limits = Object.freeze({ excerptBytes, excerptWaitMs: EXCERPT_WAIT_MS, discardLimitBytes: DISCARD_LIMIT_BYTES });
    discardLimitsBySize.set(excerptBytes, limits);
  }
  return limits;
}

function thrown(error: unknown, deadline: Deadline, startedAt: number): SendOutcome {
  const errorClass = classify(error, deadline);
  return failure(errorClass, startedAt, errorClass === 'ssrf_blocked' ? SSRF_BLOCKED_HINT : describeError(error));
}

function failure(errorClass: TransportErrorClass, startedAt: number, detail?: string): SendOutcome {
  return { kind: 'error', errorClass, durationMs: performance.now() - startedAt, ...(detail ? { detail } : {}) };
}

function classify(error: unknown, deadline: Deadline): TransportErrorClass {
  const cause = deadline.cause();
  if (cause !== undefined) return cause;
  if (isSsrfBlockedError(error)) return 'ssrf_blocked';
  if (error instanceof undiciErrors.InvalidArgumentError) return 'configuration';
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && TIMEOUT_ERROR_CODES.has(code)) return 'timeout';
  return 'network_error';
}
