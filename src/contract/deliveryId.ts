import { randomFillSync } from 'node:crypto';

/**
 * Q1: `dlv_<ULID>` delivery ids, fast. The `ulid` package's `ulid()` detects a PRNG on every call
 * and asks WebCrypto for one byte per character (~35 µs per id, on the decision hot path); this
 * encodes the same 26-character Crockford base32 ULID (48-bit millisecond time + 80 random bits)
 * from a pooled CSPRNG buffer (crypto.randomFillSync), refilled 4 KiB at a time.
 */
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;
const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let offset = POOL_BYTES;

export function newDeliveryId(now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < TIME_CHARS; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  if (offset + RANDOM_CHARS > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  let random = '';
  for (let i = 0; i < RANDOM_CHARS; i++) random += CROCKFORD[pool[offset++]! & 31]!;
  return `dlv_${time}${random}`;
}
