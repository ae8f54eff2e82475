import type { Logger } from '../observability/logger.ts';
import { assemblePayload, emailUserId, wantsEmail, type AssemblePayloadInput, type WebhookPayload } from './assemblePayload.ts';
import { createEmailResolver, type EmailLookup } from './emailCache.ts';

export type WebhookPayloadBuilderOptions = {
  /** Reads a user's email; without it no `userEmail` is ever added. */
  emailLookup?: EmailLookup;
  logger?: Pick<Logger, 'warn'>;
  /** Clock for the email cache TTL (tests inject one). */
  now?: () => number;
};

export type BuildPayloadInput = AssemblePayloadInput & {
  /** Cancels this build only (B5): `build` then resolves to undefined. */
  signal?: AbortSignal;
};

export type WebhookPayloadBuilder = {
  /** False when no email look-up is configured: `build` then never waits, and `assemblePayload` gives the same payload synchronously. */
  readonly enrichesEmail: boolean;
  /**
   * The JSON payload for one (event, hook) delivery, identical for fetch and QStash (B6);
   * `undefined` when `signal` aborted, so the caller abandons that delivery.
   */
  build(input: BuildPayloadInput): Promise<WebhookPayload | undefined>;
  /**
   * B3 on a body already built (buildDeliveryBody): the same JSON with `userEmail` added when a
   * look-up is configured, the hook wants it and one is found; unchanged (no parse) otherwise.
   * `undefined` when `signal` aborted.
   */
  withEmail(input: { hook: AssemblePayloadInput['hook']; body: string; emailUserId: string | undefined; signal?: AbortSignal }): Promise<string | undefined>;
};

/**
 * B1–B6: one builder per dispatcher, so the email cache (B4) is shared by that dispatcher's
 * deliveries and by nobody else.
 */
export function createWebhookPayloadBuilder(options: WebhookPayloadBuilderOptions = {}): WebhookPayloadBuilder {
  const { emailLookup, logger, now } = options;
  const emails = emailLookup ? createEmailResolver({ lookup: emailLookup, logger, now }) : undefined;

  return {
    enrichesEmail: emails !== undefined,
    async build(input) {
      const { signal } = input;
      if (signal?.aborted) return undefined;
      const payload = assemblePayload(input);
      if (!emails || !wantsEmail(input.hook.webhook.eventFields)) return payload;
      const userId = emailUserId(payload, input.event);
      if (userId === undefined) return payload;
      const email = await emails.resolve(userId, { signal });
      if (signal?.aborted) return undefined;
      if (email !== undefined) payload.userEmail = email;
      return payload;
    },
    async withEmail({ hook, body, emailUserId: userId, signal }) {
      if (signal?.aborted) return undefined;
      if (!emails || userId === undefined || !wantsEmail(hook.webhook.eventFields)) return body;
      const email = await emails.resolve(userId, { signal });
      if (signal?.aborted) return undefined;
      if (email === undefined) return body;
      const payload = JSON.parse(body) as WebhookPayload;
      payload.userEmail = email;
      return JSON.stringify(payload);
    },
  };
}
