/** Q8: the payload cap, checked at enqueue before anything is stored. */
import { PayloadTooLargeError } from '../contract/errors.ts';

/** The event's serialized size in UTF-8 bytes; throws PayloadTooLargeError over the cap. */
export function assertPayloadWithinCap(serialized: string, capBytes: number): number {
  const size = Buffer.byteLength(serialized, 'utf8');
  if (size > capBytes) throw new PayloadTooLargeError(size, capBytes);
  return size;
}
