/**
 * Reading (or not reading) a response body with hard bounds: a capped read that stops as soon
 * as the cap is passed, a short excerpt, and a bounded background discard whose failure is
 * never reported (W3, R5, Q8).
 */
import type { Dispatcher } from 'undici';

export type ResponseBody = Dispatcher.ResponseData['body'];

export type CappedRead = { bytes: Uint8Array; tooLarge: false } | { tooLarge: true };

/** Reads the whole body unless more than `maxBytes` arrive; then stops and drops the connection. */
export async function readCapped(body: ResponseBody, maxBytes: number): Promise<CappedRead> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) {
      body.destroy();
      return { tooLarge: true };
    }
    chunks.push(chunk);
  }
  return { bytes: new Uint8Array(Buffer.concat(chunks, total)), tooLarge: false };
}

/**
 * Collects up to `maxBytes` of the body as it flows (started before `discardBody`, which makes
 * it flow), resolving on the cap, the end of the body, an error, or after `waitMs`.
 * Never rejects: an excerpt is best effort.
 */
export function collectExcerpt(body: ResponseBody, maxBytes: number, waitMs: number): Promise<Uint8Array> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const finish = () => {
      clearTimeout(timer);
      body.off('data', onData).off('end', finish).off('close', finish).off('error', finish);
      resolve(new Uint8Array(Buffer.concat(chunks, total).subarray(0, maxBytes)));
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      total += chunk.length;
      if (total >= maxBytes) finish();
    };
    const timer = setTimeout(finish, waitMs);
    body.on('data', onData).once('end', finish).once('close', finish).once('error', finish);
  });
}

/**
 * Lets the body drain in the background so the connection can be reused, reading at most
 * `limitBytes` and for at most `withinMs`, then drops it. Errors are swallowed on purpose.
 */
export function discardBody(body: ResponseBody, limitBytes: number, withinMs: number): void {
  const signal = AbortSignal.timeout(Math.max(1, Math.ceil(withinMs)));
  body.dump({ limit: limitBytes, signal }).catch(() => undefined);
}
