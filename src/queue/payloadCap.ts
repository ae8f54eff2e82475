/** Q8: the payload cap, checked at enqueue before anything is stored. */
import { HookrelayError } from '../contract/hookrelayError.ts';

const MAX_PAYLOAD_BYTES_ENV = 'HOOKRELAY_MAX_PAYLOAD_BYTES';

export class PayloadTooLargeError extends HookrelayError {
  readonly code = 'HOOKRELAY_PAYLOAD_TOO_LARGE' as const;
  override readonly name = 'PayloadTooLargeError';
  readonly errorClass = 'payload_too_large' as const;
  constructor(
    readonly sizeBytes: number,
    readonly capBytes: number,
  ) {
    super(`event payload is ${sizeBytes} bytes, over the cap of ${capBytes} bytes (${MAX_PAYLOAD_BYTES_ENV}); nothing was stored`);
  }
}

/** The event's serialized size in UTF-8 bytes; throws PayloadTooLargeError over the cap. */
export function assertPayloadWithinCap(serialized: string, capBytes: number): number {
  const size = Buffer.byteLength(serialized, 'utf8');
  if (size > capBytes) throw new PayloadTooLargeError(size, capBytes);
  return size;
}
