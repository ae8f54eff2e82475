/**
 * A receiver for hookrelay deliveries (docs/receiving-webhooks.md): a plain node:http server that
 *
 * - verifies `webhook-signature` (Standard Webhooks) with the `standardwebhooks` package, using
 *   the secret(s) hookrelay signs with (HOOKRELAY_SIGNING_SECRETS: space-separated `whsec_…`);
 *   a missing or wrong signature is refused with 401, and so is a `webhook-timestamp` more than
 *   five minutes old or ahead (the library's tolerance), which stops a captured request from being
 *   replayed later;
 * - processes each `webhook-id` once: delivery is at least once, so the same delivery (same id)
 *   can arrive again after a lost response, a worker restart or an operator's replay. A duplicate
 *   is answered 2xx without running the handler again; one still being processed gets 409, which
 *   hookrelay retries later.
 *
 *   HOOKRELAY_SIGNING_SECRETS=whsec_… PORT=4000 npx tsx examples/receiver.ts
 *
 * The id memory here is in-process (lost on restart). A real receiver records the id in its own
 * database, in the same transaction as the effects of the event (a unique key on the id).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';

/** One verified delivery, as the handler sees it. */
export type VerifiedDelivery = {
  /** `webhook-id`: the ledger's `dlv_…` id, the same on every attempt and replay. */
  id: string;
  /** `webhook-timestamp` of this attempt (unix seconds). */
  timestamp: number;
  /** The JSON payload: event fields, `hookId`, `hookType`, `deliveryId`, `occurredAt`, … */
  payload: Record<string, unknown>;
};

/** Remembers which delivery ids were processed (swap in a database table for production). */
export type ProcessedIds = {
  /** 'new' claims the id for processing; 'done' = processed before; 'busy' = being processed now. */
  claim(id: string): 'new' | 'done' | 'busy';
  /** The handler finished: the id is processed for good. */
  complete(id: string): void;
  /** The handler failed: forget the claim so a retry can process it. */
  release(id: string): void;
};

export function memoryProcessedIds(): ProcessedIds {
  const state = new Map<string, 'busy' | 'done'>();
  return {
    claim(id) {
      const current = state.get(id);
      if (current) return current;
      state.set(id, 'busy');
      return 'new';
    },
    complete: (id) => void state.set(id, 'done'),
    release: (id) => void state.delete(id),
  };
}

export type ReceiverOptions = {
  /** Space-separated `whsec_…` secrets, as in HOOKRELAY_SIGNING_SECRETS; any one of them may verify (rotation). */
  secrets: string;
  /** Runs once per delivery id. Throw (or reject) to answer 500: hookrelay retries the delivery. */
  onDelivery: (delivery: VerifiedDelivery) => void | Promise<void>;
  port?: number;
  host?: string;
  processed?: ProcessedIds;
  /** Larger bodies are refused with 413 (hookrelay's default payload cap is 256 KiB). */
  maxBodyBytes?: number;
};

export type RunningReceiver = { url: string; close(): Promise<void> };

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export async function startReceiver(options: ReceiverOptions): Promise<RunningReceiver> {
  const verifiers = options.secrets
    .split(/\s+/)
    .filter((s) => s !== '')
    .map((secret) => new Webhook(secret));
  if (verifiers.length === 0) throw new Error('startReceiver: no signing secret given (HOOKRELAY_SIGNING_SECRETS)');
  const processed = options.processed ?? memoryProcessedIds();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;

  /** The verified payload, or undefined: bad signature, missing headers, stale or future timestamp. */
  const verify = (body: string, headers: http.IncomingHttpHeaders): Record<string, unknown> | undefined => {
    const signed = {
      'webhook-id': String(headers['webhook-id'] ?? ''),
      'webhook-timestamp': String(headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(headers['webhook-signature'] ?? ''),
    };
    for (const verifier of verifiers) {
      try {
        return verifier.verify(body, signed) as Record<string, unknown>;
      } catch {
        // Not this secret (or not valid at all): try the next one.
      }
    }
    return undefined;
  };

  const server = http.createServer(async (req, res) => {
    const answer = (status: number, result: string) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ result }));
    if (req.method !== 'POST') return answer(405, 'method_not_allowed');
    // Verify the exact bytes received: re-serialized JSON would not match the signature.
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBodyBytes) return answer(413, 'too_large');
      chunks.push(chunk);
    }
    const body = Buffer.concat(chunks).toString('utf8');
    let payload: Record<string, unknown> | undefined;
    try {
      payload = verify(body, req.headers);
    } catch {
      payload = undefined;
    }
    // 401 is permanent for hookrelay (no retry): a misconfigured secret shows up as failed deliveries.
    if (payload === undefined) return answer(401, 'invalid_signature');

    const id = String(req.headers['webhook-id']);
    const claim = processed.claim(id);
    if (claim === 'done') return answer(200, 'duplicate');
    if (claim === 'busy') return answer(409, 'in_progress'); // retried by hookrelay (Q3)
    try {
      await options.onDelivery({ id, timestamp: Number(req.headers['webhook-timestamp']), payload });
    } catch {
      processed.release(id);
      return answer(500, 'handler_failed');
    }
    processed.complete(id);
    return answer(200, 'processed');
  });

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// Run directly: print each verified delivery once.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const receiver = await startReceiver({
    secrets: process.env.HOOKRELAY_SIGNING_SECRETS ?? '',
    port: Number(process.env.PORT ?? 4000),
    host: process.env.HOST ?? '127.0.0.1',
    onDelivery: ({ id, payload }) => {
      process.stdout.write(`${id} ${String(payload.hookType)} ${String(payload.operationId)}\n`);
    },
  });
  process.stdout.write(`receiving on ${receiver.url}\n`);
  const stop = () => void receiver.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
