import type { DeliveryEventType, WebhookConfig } from '../contract/index.ts';
import { redactResultForEvents } from './redactResult.ts';

export type WebhookPayload = Record<string, unknown>;

/** What the payload needs to know about the hook; a parsed `WebhookConfig` fits. */
export type PayloadHook = {
  id: string;
  type: DeliveryEventType;
  webhook: Pick<WebhookConfig, 'body' | 'eventFields'>;
};

export type AssemblePayloadInput = {
  hook: PayloadHook;
  event: Record<string, unknown>;
  /** A decision control (`responseHandling: 'toolCall'`) reviews the full, unredacted result (B2). */
  control?: boolean;
  /** Delivery fields added by the worker, e.g. `{ deliveryId, occurredAt }` (Q1). */
  extra?: Record<string, unknown>;
};

/**
 * B4a: keys that never reach a webhook, whoever supplied them. SEC-H7: `sequence` is hookrelay's
 * alone (an ordered delivery's place, set after this by buildDeliveryBody, with its
 * `hookrelay-sequence` header): neither the event nor a hook's `body` can put one in a payload.
 */
const STRIPPED_KEYS = ['finalState', 'mock', 'userEmail', 'sequence'] as const;

/** All event keys, or only the `eventFields` the event actually has (B1). */
function project(event: Record<string, unknown>, eventFields: readonly string[]): WebhookPayload {
  const selected: WebhookPayload = {};
  for (const field of eventFields) {
    if (Object.hasOwn(event, field)) selected[field] = event[field];
  }
  return selected;
}

/**
 * B1/B2/B4a, without the email: projection, then `hookId`/`hookType`, then `extra`, then
 * `webhook.body` (the body wins every clash). The event's afterToolCall `result` is redacted
 * for notifications; a `result` written in the body is the operator's own and left alone.
 */
export function assemblePayload({ hook, event, control = false, extra }: AssemblePayloadInput): WebhookPayload {
  const { body, eventFields } = hook.webhook;
  // One copy: the projection (or the whole event), then hookId/hookType, `extra`, `body`.
  const payload: WebhookPayload = eventFields
    ? { ...project(event, eventFields), hookId: hook.id, hookType: hook.type, ...extra, ...body }
    : { ...event, hookId: hook.id, hookType: hook.type, ...extra, ...body };
  // The event's result is redacted for notifications; a `result` from `extra` or the body is not the event's.
  if (hook.type === 'afterToolCall' && !control && payload.result !== undefined && !hasOwn(extra, 'result') && !hasOwn(body, 'result')) {
    payload.result = redactResultForEvents(payload.result);
  }
  // `delete` only when present: deleting turns the object into a slow dictionary (JSON.stringify of it is slower).
  for (const key of STRIPPED_KEYS) if (Object.hasOwn(payload, key)) delete payload[key];
  return payload;
}

function hasOwn(value: object | undefined, key: string): boolean {
  return value !== undefined && Object.hasOwn(value, key);
}

/** B3/B4a: email is looked up with no projection, or when the projection names `userEmail`. */
export function wantsEmail(eventFields: readonly string[] | undefined): boolean {
  return !eventFields || eventFields.includes('userEmail');
}

/**
 * B3/B4a: the id whose email is sent: the payload's `userId` when the key is present (the body
 * may set it, and an invalid value there does not fall back), else the event's. Undefined when
 * it is not a non-empty string, which means no look-up.
 */
export function emailUserId(payload: WebhookPayload, event: Record<string, unknown>): string | undefined {
  const id = Object.hasOwn(payload, 'userId') ? payload.userId : event.userId;
  return typeof id === 'string' && id !== '' ? id : undefined;
}
