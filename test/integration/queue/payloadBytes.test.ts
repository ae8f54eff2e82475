/**
 * What reaches the receiver is what was enqueued: the event's JSON text appears verbatim in the
 * request body (key order, non-ASCII and emoji as literal UTF-8, integers as JavaScript prints
 * them), and the signature over those exact bytes verifies with the standardwebhooks library.
 * The event is a JavaScript object, so a number beyond 2^53 is already rounded before enqueue;
 * an exact 64-bit id travels as a string and arrives exact.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStack, fetchHook, type Stack, waitFor } from './harness.ts';

type RawRequest = { headers: http.IncomingHttpHeaders; body: Buffer };

async function startRawReceiver(): Promise<{ url: string; requests: RawRequest[]; close(): Promise<void> }> {
  const requests: RawRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));

describe('durable delivery: payload bytes', () => {
  let stack: Stack;
  let rx: Awaited<ReturnType<typeof startRawReceiver>>;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;

  beforeAll(async () => {
    stack = await createStack('bytes');
    rx = await startRawReceiver();
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
  });

  it('PERF-1 (B1, Q6): the enqueued event reaches the receiver byte-for-byte inside the body, and standardwebhooks verifies the signature over the raw bytes', async () => {
    await stack.startWorker({ HOOKRELAY_SIGNING_SECRETS: secret });
    // Keys deliberately unsorted (a jsonb round trip would reorder them), text that JSON.stringify
    // escapes (quotes, backslash, U+2028), and text it must not escape (non-ASCII, emoji, ZWJ).
    const event = {
      operationId: 'op-bytes',
      zLast: 1,
      aFirst: 2,
      id64: '12345678901234567890',
      maxSafe: 9007199254740991,
      minSafe: -9007199254740991,
      beyondSafe: Number('12345678901234567890'),
      float: 0.1,
      exp: 1e21,
      text: 'naïve café — 日本語 — Ωμέγα — "quoted" \\ back\u2028sep',
      emoji: '😀👩‍👩‍👧‍👦🏳️‍🌈',
      nested: { ü: [1, 'ß', { '🔑': null }] },
    };
    const { deliveryIds, queued } = await stack.producer.enqueue({
      operationId: 'op-bytes',
      type: 'onComplete',
      event,
      hooks: [fetchHook('bytes', `${rx.url}/in`)],
    });
    expect(queued).toBe(true);
    await waitFor(() => rx.requests.length >= 1, 30_000, 'the delivery');
    const [req] = rx.requests;
    if (!req) throw new Error('no request');

    // The body is valid UTF-8, its length is what the header says, and it opens with the event's
    // own JSON text verbatim (B1: the event's fields, then hookId, hookType, deliveryId, occurredAt).
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(req.body)).not.toThrow();
    expect(Number(one(req.headers['content-length']))).toBe(req.body.length);
    const eventText = Buffer.from(`${JSON.stringify(event).slice(0, -1)},"hookId":"bytes","hookType":"onComplete","deliveryId":"${deliveryIds[0]}"`, 'utf8');
    expect(req.body.subarray(0, eventText.length).equals(eventText)).toBe(true);
    // Spelled out: the 64-bit id as a string is exact; emoji and non-ASCII are literal UTF-8, not \u escapes.
    expect(req.body.includes(Buffer.from('"id64":"12345678901234567890"'))).toBe(true);
    expect(req.body.includes(Buffer.from('"maxSafe":9007199254740991,"minSafe":-9007199254740991'))).toBe(true);
    expect(req.body.includes(Buffer.from('👩‍👩‍👧‍👦', 'utf8'))).toBe(true);
    expect(req.body.includes(Buffer.from('日本語', 'utf8'))).toBe(true);
    expect(req.body.includes(Buffer.from('\\ud83d'))).toBe(false);
    // A JavaScript number beyond 2^53 was rounded before it was enqueued; what arrives is that number as JS prints it.
    expect(req.body.includes(Buffer.from(`"beyondSafe":${String(event.beyondSafe)}`))).toBe(true);

    const parsed = JSON.parse(req.body.toString('utf8')) as Record<string, unknown>;
    const { hookId, hookType, deliveryId, occurredAt, ...rest } = parsed;
    expect({ hookId, hookType, deliveryId }).toEqual({ hookId: 'bytes', hookType: 'onComplete', deliveryId: deliveryIds[0] });
    expect(typeof occurredAt).toBe('string');
    expect(Object.keys(rest)).toEqual(Object.keys(event));
    expect(rest).toEqual(event);

    // standardwebhooks verifies over the raw bytes; one flipped byte fails.
    const headers = {
      'webhook-id': one(req.headers['webhook-id']),
      'webhook-timestamp': one(req.headers['webhook-timestamp']),
      'webhook-signature': one(req.headers['webhook-signature']),
    };
    expect(headers['webhook-id']).toBe(deliveryIds[0]);
    const wh = new Webhook(secret);
    expect(wh.verify(req.body, headers)).toEqual(parsed);
    const tampered = Buffer.from(req.body);
    tampered[tampered.indexOf(Buffer.from('日'))] ^= 1;
    expect(() => wh.verify(tampered, headers)).toThrow();
  }, 60_000);
});
