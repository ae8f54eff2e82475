/** Delivery: transports, header templates, signing, SSRF guard, retry policy. */
export { DeliveryConfigError, SsrfBlockedError, describeError, redactUrl } from './errors.ts';
export type { QStashPublishRequest, QStashPublishResult, QStashPublisher, TransportErrorClass } from './types.ts';
export {
  ALLOWED_CIDRS_ENV,
  parseAllowedCidrs,
  isAddressAllowed,
  checkDestination,
  resolveAllowedAddresses,
  systemResolver,
  type Cidr,
  type DestinationCheck,
  type ResolveHost,
  type ResolvedAddress,
} from './ssrfGuard.ts';
export { resolveHeaderTemplates } from './headerTemplates.ts';
export { signatureHeaders, parseSigningSecrets, SIGNING_SECRETS_ENV, type SignatureInput } from './signing.ts';
export {
  FetchTransport,
  MAX_EXCERPT_BYTES,
  type FetchTransportOptions,
  type SendRequest,
  type SendOutcome,
  type ResponseHeaders,
} from './fetchTransport.ts';
export {
  isPermanentStatus,
  parseRetryAfter,
  nextDelayMs,
  parseRetrySchedule,
  DEFAULT_RETRY_SCHEDULE_SECONDS,
  MAX_RETRY_DELAY_MS,
  RETRY_SCHEDULE_ENV,
  type NextDelayInput,
} from './retryPolicy.ts';
export { resolveWebhookUrl, type ResolvedUrl } from './resolveUrl.ts';
export {
  deliverNotification,
  type DeliverNotificationInput,
  type NotificationResult,
  type NotificationSuccess,
  type NotificationFailure,
  type NotificationErrorClass,
  type NotificationTransport,
} from './deliver.ts';
