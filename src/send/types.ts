/** Shapes shared by the delivery transports (fetch, QStash) and their callers. */

/** Error classes a single transport attempt can end with (a subset of DELIVERY_ERROR_CLASSES). */
export type TransportErrorClass = 'timeout' | 'network_error' | 'cancelled' | 'ssrf_blocked' | 'configuration';

export type QStashPublishRequest = {
  destination: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  deduplicationId: string;
  retries?: number;
  callbackUrl?: string;
  failureCallbackUrl?: string;
  signal?: AbortSignal;
};

export type QStashPublishResult =
  | { ok: true; messageId: string; deduplicated: boolean }
  | { ok: false; errorClass: 'configuration' | 'http_error' | 'network_error' | 'timeout'; httpStatus?: number };

export interface QStashPublisher {
  publish(req: QStashPublishRequest): Promise<QStashPublishResult>;
}
