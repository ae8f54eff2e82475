/**
 * Reading (or not reading) a response stream with hard bounds: a capped read that stops as soon
 * as the cap is passed, and a bounded background discard whose failure is never reported (W3,
 * R5). A notification's body never becomes a stream: see discardExchange.ts.
 */
import type { Dispatcher } from 'undici';

export type ResponseBody = Dispatcher.ResponseData['body'];

export type CappedRead = { bytes: Uint8Array; tooLarge: false } | { tooLarge: true };

/**
 * Reads the whole body unless more than `maxBytes` arrive; then stops and drops the connection.
 * Event-driven rather than `for await`: a stream's async iterator costs several promises per
 * chunk on the decision hot path. A destroyed body (the deadline) rejects with its reason; a body
 * closed before its end rejects too.
 */
export function readCapped(body: ResponseBody, maxBytes: number): Promise<CappedRead> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const detach = () => {
      body.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > maxBytes) {
        detach();
        // undici's destroy emits an AbortError: it must find a listener, or it is an uncaught exception.
        body.on('error', ignore);
        body.destroy();
        resolve({ tooLarge: true });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      detach();
      resolve({ bytes: new Uint8Array(Buffer.concat(chunks, total)), tooLarge: false });
    };
    const onError = (error: Error) => {
      detach();
      reject(error);
    };
    const onClose = () => {
      detach();
      reject(Object.assign(new Error('response body closed before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    body.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/**
 * Lets the body drain in the background so the connection can be reused, reading at most
 * `limitBytes` and for at most `withinMs`, then drops it. Errors are swallowed on purpose.
 */
export function discardBody(body: ResponseBody, limitBytes: number, withinMs: number): void {
  // A plain timer, not AbortSignal.timeout (an AbortSignal per delivery is ~8 µs on the hot path).
  const timer = setTimeout(destroyBody, Math.max(1, Math.ceil(withinMs)), body);
  body.dump({ limit: limitBytes }).then(
    () => clearTimeout(timer),
    () => clearTimeout(timer),
  );
}

function ignore(): void {}

function destroyBody(body: ResponseBody): void {
  body.destroy();
}
