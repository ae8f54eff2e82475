/** Constant-time comparison of a presented secret with the expected one, of any lengths. */
import { createHash, timingSafeEqual } from 'node:crypto';

export function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
