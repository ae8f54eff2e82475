/**
 * Q7: the QStash callback endpoints as routes of the worker's HTTP server. Before a byte of body
 * is read, the `Upstash-Signature` token must verify on its own (signing key, issuer, subject =
 * this exact URL, not expired: qstashCallbacksVerify.ts) — a stranger without the signing keys is
 * answered at once, whatever body it promises — and no other connection may be reading a body
 * under the same token. The body is then read within what QStash can send (see
 * `qstashCallbackBodyCap`) and handed to the handler, which checks it against the token's hash,
 * accepts it once (the token's `jti` remembered in Redis, qstashCallbackReplay.ts) and records it.
 * Refusals are logged one line per reason per minute, with a count.
 */
import type { IncomingMessage } from 'node:http';
import { createLogLimiter } from '../../observability/logLimiter.ts';
import type { PostRoute, RouteAdmission, RouteAnswer } from '../../observability/httpServer.ts';
import type { CallbackReplayGuard } from './callbackReplay.ts';
import { callbackKindOf, createQStashCallbackHandler, type CallbackKind, type QStashCallbackHandlerOptions } from './callbacks.ts';
import { publicBase } from './callbackUrls.ts';
import { verifyQStashSignatureHeader, type QStashTokenClaims } from './verifyCallback.ts';

/** A refused callback's reason gets one log line per this window (the first), then one with the count. */
const REFUSAL_LOG_WINDOW_MS = 60_000;
/** The replay memory outlives the token by this much (clock skew between QStash and this host). */
const REPLAY_MEMORY_SLACK_MS = 60_000;
/** The webhook body hookrelay publishes around the event payload: ids, hook, operation fields. */
const WEBHOOK_ENVELOPE_BYTES = 16 * 1024;
/**
 * Of the destination's response, what a callback may carry that the route still reads. QStash
 * echoes the response (base64) up to the plan's message size; the ledger keeps 2 KiB of it, and
 * webhook receivers answer far less than this. A larger callback is refused 413 (and logged).
 */
const RESPONSE_ALLOWANCE_BYTES = 256 * 1024;
/** The rest of a callback: the response's and the source message's headers, ids, URLs, numbers. */
const CALLBACK_ENVELOPE_BYTES = 32 * 1024;

const base64Length = (bytes: number) => 4 * Math.ceil(bytes / 3);

/**
 * The largest callback body read. QStash's callback echoes, in base64, both the message it
 * delivered (`sourceBody`: the webhook body, at most HOOKRELAY_MAX_PAYLOAD_BYTES plus its
 * envelope) and the destination's response (`body`), plus headers and ids:
 * 736 KiB with the default 256 KiB payload cap.
 */
export function qstashCallbackBodyCap(maxPayloadBytes: number): number {
  return base64Length(maxPayloadBytes + WEBHOOK_ENVELOPE_BYTES) + base64Length(RESPONSE_ALLOWANCE_BYTES) + CALLBACK_ENVELOPE_BYTES;
}

export type QStashCallbackRouteOptions = Omit<QStashCallbackHandlerOptions, 'logRefusal' | 'acceptOnce'> & {
  /** HOOKRELAY_MAX_PAYLOAD_BYTES: sizes the body cap. */
  maxPayloadBytes: number;
  replay: CallbackReplayGuard;
};

const REFUSED: Readonly<Record<'configuration' | 'other', RouteAnswer>> = {
  configuration: { status: 503, body: 'callback verification not configured' },
  other: { status: 401, body: 'invalid signature' },
};

export function createQStashCallbackRoute(options: QStashCallbackRouteOptions): PostRoute {
  const limit = createLogLimiter({ windowMs: REFUSAL_LOG_WINDOW_MS });
  const logRefusal = (kind: CallbackKind, reason: string) =>
    limit(`${kind}:${reason}`, (repeats) =>
      repeats > 0
        ? options.logger.warn({ kind, reason, refused: repeats }, `qstash callbacks refused: ${repeats} more (${reason}) in the last minute`)
        : options.logger.warn({ kind, reason }, 'qstash callback refused'),
    );
  const refuse = (kind: CallbackKind, reason: string, answer: RouteAnswer): RouteAdmission => {
    options.metrics?.qstashCallbacks.inc({ kind, result: reason });
    logRefusal(kind, reason);
    return { ok: false, answer };
  };
  /** Tokens whose body is being read or recorded now (a captured token opens one body read at a time), with what they claimed. */
  const reading = new Map<string, { claims: QStashTokenClaims; claimed?: string }>();

  const handler = createQStashCallbackHandler({
    ...options,
    logRefusal,
    async acceptOnce({ kind, callback, signature }) {
      const request = reading.get(signature);
      if (!request) return { status: 401, body: 'invalid signature' };
      // The token's id; a token without one (QStash always sends one) by its message's attempt.
      const { claims } = request;
      const identity = claims.jti !== undefined ? `jti:${claims.jti}` : `message:${kind}:${callback.sourceMessageId}:${callback.retried ?? '-'}`;
      let claim: 'first' | 'seen';
      try {
        claim = await options.replay.claim(identity, claims.exp * 1000 - Date.now() + REPLAY_MEMORY_SLACK_MS);
      } catch {
        logRefusal(kind, 'replay_check_unavailable');
        return { status: 503, body: 'cannot check this callback for a replay now (Redis): try again', headers: { 'retry-after': '10' } };
      }
      if (claim === 'seen') {
        options.metrics?.qstashCallbacks.inc({ kind, result: 'replayed' });
        logRefusal(kind, 'replayed');
        return { status: 200, body: 'already recorded: nothing changed' };
      }
      request.claimed = identity;
      return undefined;
    },
  });

  return {
    maxBodyBytes: qstashCallbackBodyCap(options.maxPayloadBytes),
    async admit(req: IncomingMessage) {
      const rawUrl = req.url ?? '/';
      const path = pathOf(rawUrl);
      const kind = callbackKindOf(path);
      if (!kind) return { ok: false, answer: { status: 404, body: 'not found' } };
      const signature = firstHeader(req.headers['upstash-signature']);
      const checked = await verifyQStashSignatureHeader({
        signature,
        url: `${publicBase(options.publicUrl)}${rawUrl}`,
        currentSigningKey: options.currentSigningKey,
        nextSigningKey: options.nextSigningKey,
      });
      if (!checked.valid) return refuse(kind, checked.reason, checked.reason === 'configuration' ? REFUSED.configuration : REFUSED.other);
      const token = signature as string;
      if (reading.has(token)) return refuse(kind, 'replayed', { status: 409, body: 'this callback is being recorded already' });
      const request: { claims: QStashTokenClaims; claimed?: string } = { claims: checked.claims };
      reading.set(token, request);
      return {
        ok: true,
        async handle(body) {
          try {
            return await handler({ path, rawUrl, signature: token, body });
          } catch (error) {
            // Not recorded: QStash's retry of it (or this token again) must still be able to record it.
            if (request.claimed !== undefined) await options.replay.release(request.claimed);
            throw error;
          }
        },
        done: () => reading.delete(token),
      };
    },
  };
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
