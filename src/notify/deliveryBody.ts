/**
 * The body of one queued delivery, built once: by the producer at enqueue (it travels in the job,
 * so the worker's hot path neither reads the ledger nor rebuilds it) and by the worker from the
 * ledger row for jobs that carry none (reconciler, replay, stalled re-runs). Both paths call this,
 * so the bytes cannot differ. The email (B3) is added at send time, never stored.
 */
import { assemblePayload, emailUserId, type PayloadHook } from './assemblePayload.ts';

export type DeliveryBody = {
  /** The payload JSON (B1/B2/B4a; `deliveryId` and `occurredAt` included, Q1). */
  body: string;
  /** The user whose email B3 would add: the payload's `userId`, else the event's. */
  emailUserId?: string;
};

export function buildDeliveryBody(input: {
  hook: PayloadHook;
  event: Record<string, unknown>;
  deliveryId: string;
  occurredAt: Date;
  /** An ordered delivery's sequence; set last (SEC-H7: assemblePayload drops any other `sequence`, so only this one is ever sent). */
  sequence?: number | null | undefined;
}): DeliveryBody {
  const payload = assemblePayload({
    hook: input.hook,
    event: input.event,
    extra: { deliveryId: input.deliveryId, occurredAt: input.occurredAt.toISOString() },
  });
  if (typeof input.sequence === 'number') payload.sequence = input.sequence;
  const userId = emailUserId(payload, input.event);
  return userId === undefined ? { body: JSON.stringify(payload) } : { body: JSON.stringify(payload), emailUserId: userId };
}
