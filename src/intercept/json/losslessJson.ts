import { isInteger, parse } from 'lossless-json';

/**
 * JSON at a trust boundary (a remote interceptor's response, a conformance vector) read without
 * losing precision. `JSON.parse` rounds an integer token beyond ±(2^53−1) to the nearest
 * double before any guard can see it — `9007199254740993` silently becomes `…992`. Here such a
 * token becomes a `bigint`, which the I-JSON domain check then rejects fail-closed
 * (`host_error:context_invalid`) wherever it would enter a context. Every other number is an
 * ordinary `number`; duplicate member names are an error (I-JSON, RFC 7493 section 2.3).
 */
export function parseJsonLossless(text: string): unknown {
  return parse(text, null, parseNumberToken);
}

function parseNumberToken(token: string): number | bigint {
  if (isInteger(token)) {
    const n = Number(token);
    return Number.isSafeInteger(n) ? n : BigInt(token);
  }
  return Number.parseFloat(token);
}
