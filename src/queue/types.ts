/**
 * Public shapes of the durable-delivery queue: what a server app hands the producer and what it
 * gets back. Producer and worker share only `DeliveryJobData` (BullMQ's Queue/Worker split).
 */
import type { Cluster, Redis } from 'ioredis';
import type { Delivery } from '../contract/delivery.ts';
import type { SerializedHook } from '../contract/hook.ts';
import type { DeliveryEventType } from '../contract/hookTypes.ts';
import type { Logger } from '../observability/logger.ts';
import type { StoreHandle } from '../store/types.ts';

/** The documented defaults (defined once, in the contract). */
export { DEFAULT_QUEUE_NAME, DEFAULT_REDIS_URL, DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_QUEUE_PREFIX } from '../contract/defaults.ts';
/** The BullMQ job name of every delivery job. */
export const DELIVERY_JOB_NAME = 'deliver';

/**
 * The BullMQ job payload (Q1). A job the producer adds carries what its first attempt needs, so
 * the worker's hot path never reads the ledger; a job the reconciler or a replay re-adds carries
 * only the id and generation, and its worker reads the row (as it does for a stalled re-run).
 */
export type DeliveryJobData = {
  deliveryId: string;
  generation: number;
  attempt?: DeliveryJobAttempt;
  /** Q3: this generation's deadline (ms since the epoch), once a worker started its clock; the ledger row keeps it too. */
  deadlineAt?: number;
};

/**
 * Job data "at rest" in Redis: the hook config exactly as the ledger stores it (header templates
 * unresolved, W2) and the payload before email enrichment — never a resolved header or secret.
 */
export type DeliveryJobAttempt = {
  operationId: string;
  /** The serialized hook (JSON), as in the ledger row. */
  hook: string;
  /** The webhook payload (JSON) as assemblePayload builds it (B1–B4a), before email (B3). */
  body: string;
  /** The user whose email is added at send time (B3), when a look-up is configured; no email is stored. */
  emailUserId?: string;
  /** Attempts made before this one, across every generation and in the current one (Q3). */
  attemptCount: number;
  generationAttemptCount: number;
  /** W3C trace context of the enqueueing span, as the ledger row stores it (only when tracing is on). */
  trace?: string;
  /** The ordered delivery's sequence (SEC-H7) (absent when unordered); its endpoint key is the hook's. */
  sequence?: number;
  /** N1: the row's tenant (absent: 'default'); its endpoint state is that tenant's. */
  tenant?: string;
};

export type EnqueueInput = {
  operationId: string;
  /** A lifecycle event, or an approval event (A3: the approval queue enqueues those). */
  type: DeliveryEventType;
  /** The event (D10: any object; a string `operationId` is filled in from the input when absent). */
  event: Record<string, unknown>;
  /** Serialized hooks; re-validated (D4b). Controls and non-matching hooks are skipped. */
  hooks: readonly SerializedHook[];
  /** Q1a: the same key returns the same delivery ids and stores nothing new. */
  idempotencyKey?: string;
  /**
   * N1: the tenant the server app enqueues it for (default 'default'; 1–128 characters of
   * `[A-Za-z0-9._:-]`). Its endpoint state (breaker, limits, disable) is that tenant's (N2).
   * Never read from the hooks or the event.
   */
  tenant?: string;
  /** When the event happened (payload `occurredAt`); default now. */
  occurredAt?: Date | string;
};

export type EnqueueResult = {
  /** One id per matching webhook hook, in hook order. */
  deliveryIds: string[];
  /** false when the ledger rows are committed but the BullMQ job(s) could not be added (Q2), or when spooled. */
  queued: boolean;
  /**
   * F1: true when Postgres could not take the event and it was written (fsync'd) to the local
   * spool instead; the producer drains it into the ledger, with these ids, when Postgres answers.
   */
  spooled: boolean;
};

export type EnqueueManyResult = {
  /** Every id, item order then hook order. */
  deliveryIds: string[];
  /** The ids of each item. */
  perItem: string[][];
  queued: boolean;
  /** F1: the call went to the local spool (see EnqueueResult). */
  spooled: boolean;
};

/** F1: the producer's local spool now (`producer.spoolStatus()`). */
export type SpoolStatus = {
  /** The spool's folder. */
  dir: string;
  /** Calls waiting to be drained into the ledger (each one enqueue / enqueueMany call). */
  events: number;
  bytes: number;
  /** When the oldest waiting call was spooled (its segment's time); null when empty. */
  oldestAt: Date | null;
};

export type HookProducerOptions = {
  /** Default `REDIS_URL`, else `redis://127.0.0.1:6379`. */
  redisUrl?: string;
  /** Default `DATABASE_URL`; none → the running `start` process's embedded store, else PGlite. */
  databaseUrl?: string;
  /** Default `HOOKRELAY_QUEUE`, else `hookrelay-deliveries`. */
  queueName?: string;
  /** An open store (not closed by the producer). */
  store?: StoreHandle;
  /** An ioredis connection, or a Cluster (not closed by the producer). */
  redis?: Redis | Cluster;
  /** BullMQ key prefix; default HOOKRELAY_QUEUE_PREFIX, else `bull` (a hash tag such as `{hookrelay}` on Redis Cluster). */
  queuePrefix?: string;
  /** Q8 cap; default `HOOKRELAY_MAX_PAYLOAD_BYTES`, else 262,144. */
  maxPayloadBytes?: number;
  /** Q2: how long enqueue waits for Redis before answering `queued: false`. */
  queueTimeoutMs?: number;
  /**
   * Q13: how long enqueue waits for Postgres (the ledger commit) before failing with a
   * StoreUnavailableError (default 5,000 ms); an unreachable Postgres fails it at once.
   */
  storeTimeoutMs?: number;
  logger?: Logger;
  /**
   * F1: the local spool for events Postgres cannot take (unreachable, refused, not migrated yet):
   * an append-only, fsync'd file under `<HOOKRELAY_DATA_DIR>/spool/`, at most
   * `HOOKRELAY_SPOOL_MAX_BYTES` (default 64 MiB), drained into the ledger by this producer when
   * Postgres answers. `false` (or `HOOKRELAY_SPOOL_MAX_BYTES=0`) turns it off: enqueue then throws
   * EventNotAcceptedError while Postgres is away. `dir` is the spool's own folder.
   */
  spool?: false | { dir?: string; maxBytes?: number };
  /** Where defaults are read from (default `process.env`, read when the producer is created). */
  env?: Record<string, string | undefined>;
  /** W2: which variables hook templates may read; default `HOOKRELAY_TEMPLATE_ENV`, else `none`. */
  templateEnv?: string;
  /**
   * The default for fetch webhooks whose config says no `ordering`: `operation` delivers
   * each operation's events to each endpoint in enqueue order. Default `none` (unordered).
   */
  ordering?: 'operation' | 'none';
};

/** What the dispatcher's queue mode calls. */
export interface HookProducer {
  enqueue(input: EnqueueInput): Promise<EnqueueResult>;
  enqueueMany(items: readonly EnqueueInput[]): Promise<EnqueueManyResult>;
  getDelivery(id: string): Promise<Delivery | undefined>;
  /** F1: the local spool now — calls waiting for Postgres (undefined when the spool is off). */
  spoolStatus(): SpoolStatus | undefined;
  close(): Promise<void>;
}
