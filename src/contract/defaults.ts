/**
 * The one place each default lives (docs/configuration.md lists them). Settings, the producer, the store and the worker
 * read these names; no other module writes the literal again.
 */
export const DEFAULT_DATA_DIR = '.hookrelay';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
export const DEFAULT_QUEUE_NAME = 'hookrelay-deliveries';
/** BullMQ's own default key prefix. */
export const DEFAULT_QUEUE_PREFIX = 'bull';
export const DEFAULT_MAX_PAYLOAD_BYTES = 262_144;
/** F1: the producer's local spool, at most this many bytes (HOOKRELAY_SPOOL_MAX_BYTES). */
export const DEFAULT_SPOOL_MAX_BYTES = 64 * 1024 * 1024;
/** Q3: seconds before each retry. */
export const DEFAULT_RETRY_SCHEDULE_SECONDS: readonly number[] = [5, 300, 1800, 7200, 18000, 36000, 36000];
/** A webhook's own `timeout` when its config names none (seconds). */
export const DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 30;
export const DEFAULT_CONCURRENCY = 64;
export const DEFAULT_HTTP_PORT = 8787;
export const DEFAULT_RECONCILE_INTERVAL_MS = 15_000;
export const DEFAULT_LOCK_DURATION_MS = 30_000;
export const DEFAULT_STALLED_INTERVAL_MS = 30_000;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;
export const DEFAULT_RETENTION_DAYS = 30;
export const DEFAULT_LOG_LEVEL = 'info';
/** A3: the worker's approval sweep (expiry, events not announced yet). */
export const DEFAULT_APPROVAL_SWEEP_MS = 2_000;

/** Endpoint isolation: a fixed cap on concurrent attempts per endpoint (HOOKRELAY_ENDPOINT_CONCURRENCY); 0 = none, the adaptive limit alone. */
export const DEFAULT_ENDPOINT_CONCURRENCY = 0;
