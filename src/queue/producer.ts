/**
 * The producer a server app uses for durable delivery (Q1, Q1a, Q2, Q8): validate everything,
 * commit one ledger row per matching webhook in one multi-row INSERT, then add one BullMQ job
 * per new row (job id = delivery id). Once the ledger commit succeeded the ids are returned even
 * when Redis is away (`queued: false`); the worker's reconciler adds the missing jobs.
 */
import { Queue } from 'bullmq';
import { EventValidationError } from '../contract/errors.ts';
import { IngestEventSchema, serializeEventJson } from '../contract/events.ts';
import { isControlHook, type ParsedSerializedHook } from '../contract/hook.ts';
import { isHookType } from '../contract/hookTypes.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import { assertTemplateSources, parseSerializedHooks } from '../contract/validate.ts';
import { matchesHook } from '../contract/matcher.ts';
import { assertStorableEvent } from '../contract/storableText.ts';
import { isRowDataError, storageCall } from '../contract/storageError.ts';
import { silentLogger } from '../observability/logger.ts';
import { storeOf, type Db, type Store } from '../store/db.ts';
import { endpointKey } from '../contract/endpoint.ts';
import { getDelivery, insertDeliveries, matchIdempotentDeliveries, newDeliveryId, type NewDelivery } from '../store/deliveriesRepo.ts';
import { assignSequences } from '../store/orderingRepo.ts';
import { buildDeliveryBody } from '../payload/deliveryBody.ts';
import { createBatcher } from './batcher.ts';
import { IdempotencyConflictError } from './errors.ts';
import { addDeliveryJobs, QUEUE_STREAMS, withTimeout } from './jobs.ts';
import { assertPayloadWithinCap } from './payloadCap.ts';
import { openConfiguredStore } from '../store/openConfigured.ts';
import { StoreUnavailableError } from '../store/errors.ts';
import { isStoreUnreachable, storeUnavailable } from '../store/unreachable.ts';
import { resolveConfig } from '../config/resolveConfig.ts';
import { createQueueRedis, type QueueRedis } from './redisConnection.ts';
import { activeTracer, inSpan, serializeTraceContext, SpanKind, type Span } from '../observability/tracing.ts';
import type { DeliveryJobAttempt, DeliveryJobData, EnqueueInput, EnqueueManyResult, EnqueueResult, HookProducer, HookProducerOptions } from './types.ts';

/** Q2: how long an enqueue waits for Redis before answering `queued: false`. */
export const DEFAULT_QUEUE_TIMEOUT_MS = 2_000;
/** Q13: how long an enqueue waits for the ledger commit before failing with StoreUnavailableError. */
const DEFAULT_STORE_TIMEOUT_MS = 5_000;
/** Rows per INSERT statement (about 10 parameters a row, well under Postgres' 65,535). */
const INSERT_CHUNK_ROWS = 1_000;
/** A producer needs few connections: enqueue is one INSERT. */
const PRODUCER_POOL_SIZE = 10;
const PRODUCER_SETTINGS = [
  'HOOKRELAY_QUEUE',
  'REDIS_URL',
  'DATABASE_URL',
  'HOOKRELAY_DATA_DIR',
  'HOOKRELAY_MAX_PAYLOAD_BYTES',
  'HOOKRELAY_TEMPLATE_ENV',
  'HOOKRELAY_QUEUE_PREFIX',
  'HOOKRELAY_REDIS_CLUSTER',
] as const;
/**
 * Concurrent enqueue calls are group-committed: the calls that arrive while a commit runs share
 * the next INSERT and addBulk (each call still waits for its own rows and jobs). Server apps
 * enqueue one event per request; at 1,000 calls/s this is tens of statements a second, not 1,000.
 */
const ENQUEUE_GROUP_CALLS = 256;
const ENQUEUE_CONCURRENT_COMMITS = 2;
/** How long close() waits for the queue connection before dropping it. */
const CLOSE_TIMEOUT_MS = 2_000;

/** A ledger row and what its job carries, so the worker's first attempt reads nothing back. */
type PreparedRow = NewDelivery & {
  job: DeliveryJobAttempt;
  /** Numbered at commit (SEC-H7) (its body, which carries the number, is built then). */
  ordered: boolean;
  endpointKey: string;
};
type PreparedItem = { rows: PreparedRow[]; idempotencyKey: string | undefined };
/** One call's part of a group commit: its ids per item, or why they could not be resolved. */
type CallOutcome = { perItem: string[][]; queued: boolean } | { error: unknown };
/** What one commit stored: the ids inserted, the sequence of each ordered one (SEC-H7), and the id an idempotency key already had for each row not inserted (Q1a). */
type Stored = { ids: string[]; sequences: Map<string, number>; existing: Map<string, string> };

export function createHookProducer(options: HookProducerOptions = {}): HookProducer {
  const logger = options.logger ?? silentLogger();
  // Resolved once (a bad value throws a SettingsError naming the variable); explicit options win
  // over the environment. Redis Cluster: the prefix must be a hash tag (one slot per queue),
  // refused here, not at the first enqueue.
  const config = resolveConfig(PRODUCER_SETTINGS, {
    env: options.env,
    templateEnv: options.templateEnv,
    queuePrefix: options.queuePrefix,
    ownsRedis: !options.redis,
  });
  const settings = config.settings;
  const queueName = options.queueName ?? settings.HOOKRELAY_QUEUE;
  const redisUrl = options.redisUrl ?? settings.REDIS_URL;
  const databaseUrl = options.databaseUrl ?? settings.DATABASE_URL;
  const maxPayloadBytes = options.maxPayloadBytes ?? settings.HOOKRELAY_MAX_PAYLOAD_BYTES;
  const queueTimeoutMs = options.queueTimeoutMs ?? DEFAULT_QUEUE_TIMEOUT_MS;
  const storeTimeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  // W2: an invalid pattern fails here (TemplateEnvPatternError names the variable).
  const templateEnv = config.templateEnv;
  const queuePrefix = config.queuePrefix;
  const orderingDefault = options.ordering ?? 'none';
  if (orderingDefault !== 'operation' && orderingDefault !== 'none') throw new TypeError("createHookProducer: ordering must be 'operation' or 'none'");

  let storePromise: Promise<Store> | undefined;
  let queue: Queue<DeliveryJobData> | undefined;
  let ownedRedis: QueueRedis | undefined;
  let closed = false;
  let closing = false;

  const db = async (): Promise<Db> => {
    if (closed) throw new Error('the hook producer is closed');
    storePromise ??= options.store
      ? Promise.resolve(storeOf(options.store))
      : openConfiguredStore({ databaseUrl, dataDir: settings.HOOKRELAY_DATA_DIR, maxConnections: PRODUCER_POOL_SIZE });
    try {
      return (await storePromise).db;
    } catch (error) {
      storePromise = undefined; // a failed open is retried by the next call
      throw error;
    }
  };

  const getQueue = (): Queue<DeliveryJobData> => {
    if (queue) return queue;
    let connection: QueueRedis | undefined = options.redis;
    if (!connection) {
      ownedRedis = createQueueRedis(redisUrl, config.redisCluster);
      // Reconnection is ioredis' job; a down Redis must not crash the server app.
      ownedRedis.on('error', (err: Error) => logger.debug({ err: err }, 'producer redis connection error'));
      connection = ownedRedis;
    }
    queue = new Queue<DeliveryJobData>(queueName, { connection, prefix: queuePrefix, streams: QUEUE_STREAMS });
    queue.on('error', (err: Error) => logger.debug({ err: err }, 'producer queue error'));
    return queue;
  };

  /** Adds the jobs of newly stored rows; false (never a throw) when Redis does not take them in time. */
  const addJobs = async (rows: readonly PreparedRow[]): Promise<boolean> => {
    if (rows.length === 0) return true;
    const adding = addDeliveryJobs(
      getQueue(),
      rows.map((r) => ({ deliveryId: r.id, generation: 0, attempt: r.job })),
    ).then(
      () => true,
      (err: unknown) => {
        logger.warn({ err: err, deliveries: rows.length }, 'could not add delivery jobs; the reconciler will');
        return false;
      },
    );
    const added = await withTimeout(adding, queueTimeoutMs, false);
    if (!added)
      logger.warn(
        { deliveries: rows.length, timeoutMs: queueTimeoutMs },
        'redis did not take the delivery jobs in time; ledger rows are committed, the reconciler will enqueue them',
      );
    return added;
  };

  const runCommit = async (calls: PreparedItem[][]): Promise<CallOutcome[]> => {
    const database = await db();
    const rows = calls.flatMap((items) => items.flatMap((p) => p.rows));
    // One statement (one transaction beyond INSERT_CHUNK_ROWS, or with ordered rows): all of these calls or none.
    const { inserted, refused, sequences, existing } = await insertCalls(database, calls, rows);
    if (sequences.size > 0) numberBodies(rows, sequences);
    // Every stored row gets its job, whatever happens to a sibling call below.
    const queued = await addJobs(rows.filter((r) => inserted.has(r.id)));
    return Promise.all(
      calls.map(async (items, i): Promise<CallOutcome> => {
        if (refused.has(i)) return { error: refused.get(i) };
        try {
          return { perItem: resolveIds(items, inserted, existing), queued };
        } catch (error) {
          return { error };
        }
      }),
    );
  };
  const commits = createBatcher<PreparedItem[], CallOutcome>({
    maxBatch: ENQUEUE_GROUP_CALLS,
    maxConcurrent: ENQUEUE_CONCURRENT_COMMITS,
    run: runCommit,
  });
  // Calls with ordered rows commit one group at a time, in call order, so one
  // producer's sequences follow the order its enqueue calls were made (not which commit won a race).
  const orderedCommits = createBatcher<PreparedItem[], CallOutcome>({ maxBatch: ENQUEUE_GROUP_CALLS, maxConcurrent: 1, run: runCommit });

  const commit = async (prepared: PreparedItem[], span: Span | undefined): Promise<EnqueueManyResult> => {
    // The worker's attempt spans continue this trace: its context travels with each row and job.
    const trace = serializeTraceContext(span);
    if (trace !== undefined) {
      for (const p of prepared) {
        for (const row of p.rows) {
          row.traceContext = trace;
          row.job.trace = trace;
        }
      }
    }
    const ordered = prepared.some((p) => p.rows.some((r) => r.ordered));
    // Q13: a request handler never hangs on Postgres: past the timeout the call fails (its commit
    // may still land later: retry with the same idempotencyKey to get the same ids, Q1a).
    const outcome = await withTimeout(
      (ordered ? orderedCommits : commits).submit(prepared).catch((error: unknown): CallOutcome => ({ error })),
      storeTimeoutMs,
      {
        error: new StoreUnavailableError(
          `the ledger store (Postgres at DATABASE_URL) did not answer within ${storeTimeoutMs} ms (storeTimeoutMs): the event may or may not be stored; retry with the same idempotencyKey`,
        ),
      },
    );
    if ('error' in outcome) {
      throw isStoreUnreachable(outcome.error) ? storeUnavailable(outcome.error, 'nothing was enqueued; retry once it answers') : outcome.error;
    }
    span?.setAttribute('hookrelay.queued', outcome.queued);
    return { deliveryIds: outcome.perItem.flat(), perItem: outcome.perItem, queued: outcome.queued };
  };

  const enqueueMany = async (items: readonly EnqueueInput[]): Promise<EnqueueManyResult> => {
    // Everything is validated before anything is stored (D4b, Q8).
    // Items of one call often share one hooks array: validate it once (nothing can change it
    // during this synchronous pass).
    const hooksSeen = new Map<unknown, ParsedSerializedHook[]>();
    const prepared = items.map((item) => prepareItem(item, maxPayloadBytes, templateEnv, hooksSeen, orderingDefault));
    if (prepared.every((p) => p.rows.length === 0)) return { deliveryIds: [], perItem: prepared.map(() => []), queued: true };
    if (closed || closing) throw new Error('the hook producer is closed');
    if (activeTracer() === undefined) return commit(prepared, undefined);
    const first = items[0];
    return inSpan(
      'hookrelay.enqueue',
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'bullmq',
          'messaging.operation.type': 'send',
          'messaging.destination.name': queueName,
          'hookrelay.deliveries': prepared.reduce((n, p) => n + p.rows.length, 0),
          ...(items.length === 1 && first
            ? { 'hookrelay.operation_id': first.operationId, 'hookrelay.hook_type': first.type }
            : { 'hookrelay.events': items.length }),
        },
      },
      (span) => commit(prepared, span),
    );
  };

  return {
    async enqueue(input) {
      const { deliveryIds, queued } = await enqueueMany([input]);
      return { deliveryIds, queued } satisfies EnqueueResult;
    },
    enqueueMany,
    async getDelivery(id) {
      return getDelivery(await db(), id);
    },
    async close() {
      if (closed || closing) return;
      // New calls are refused at once; the calls already submitted finish their commit first —
      // for at most their store timeout (Q13: a Postgres or Redis that does not answer never holds close()).
      closing = true;
      await withTimeout(
        Promise.all([commits.drain(), orderedCommits.drain()]).then(() => true),
        storeTimeoutMs + queueTimeoutMs,
        false,
      );
      closed = true;
      if (queue)
        await withTimeout(
          queue.close().then(() => true),
          CLOSE_TIMEOUT_MS,
          false,
        );
      ownedRedis?.disconnect();
      if (storePromise && !options.store) {
        const store = await withTimeout(
          storePromise.catch(() => undefined),
          CLOSE_TIMEOUT_MS,
          undefined,
        );
        if (store)
          await withTimeout(
            store.close().then(() => true),
            CLOSE_TIMEOUT_MS,
            false,
          );
      }
    },
  };
}

/**
 * The group's rows in one statement. When Postgres refuses it for its data (one call's text it
 * cannot store got past the checks), or one call's idempotency key conflicts (Q1a), each call is
 * inserted again on its own: the other calls are stored exactly once (the failed statement stored
 * nothing) and only the bad call gets the error — a StorageError that names no parameter, or an
 * IdempotencyConflictError — never another caller's payload.
 */
async function insertCalls(
  db: Db,
  calls: readonly PreparedItem[][],
  rows: readonly PreparedRow[],
): Promise<{ inserted: Set<string>; refused: Map<number, unknown>; sequences: Map<string, number>; existing: Map<string, string> }> {
  const refused = new Map<number, unknown>();
  try {
    const stored = await insertAll(db, rows);
    return { inserted: new Set(stored.ids), refused, sequences: stored.sequences, existing: stored.existing };
  } catch (error) {
    if (calls.length === 1 || !(isRowDataError(error) || error instanceof IdempotencyConflictError)) throw error;
  }
  const inserted = new Set<string>();
  const sequences = new Map<string, number>();
  const existing = new Map<string, string>();
  for (const [i, items] of calls.entries()) {
    try {
      const stored = await insertAll(
        db,
        items.flatMap((p) => p.rows),
      );
      for (const id of stored.ids) inserted.add(id);
      for (const [id, n] of stored.sequences) sequences.set(id, n);
      for (const [id, found] of stored.existing) existing.set(id, found);
    } catch (error) {
      refused.set(i, error);
    }
  }
  return { inserted, refused, sequences, existing };
}

/**
 * One statement when it fits and nothing is ordered or keyed, else one transaction: enqueue stores
 * all of a call or nothing. A row its idempotency key already stored (same operation, hook and
 * key) is the same delivery when the event and hook config are the same, else the whole
 * transaction is rolled back with an IdempotencyConflictError (Q1a). Ordered rows that were
 * inserted are numbered in the same transaction (SEC-H7): contiguous, and never a number for a
 * row that does not exist.
 */
async function insertAll(db: Db, rows: readonly PreparedRow[]): Promise<Stored> {
  const ordered = rows.some((r) => r.ordered);
  const keyed = rows.some((r) => r.idempotencyKey != null);
  if (rows.length <= INSERT_CHUNK_ROWS && !ordered && !keyed) return { ids: await insertDeliveries(db, rows), sequences: new Map(), existing: new Map() };
  const conflict: { error?: IdempotencyConflictError } = {};
  const stored = await storageCall('insert deliveries', () =>
    db.transaction(async (tx) => {
      const ids: string[] = [];
      for (let i = 0; i < rows.length; i += INSERT_CHUNK_ROWS) {
        ids.push(...(await insertDeliveries(tx as unknown as Db, rows.slice(i, i + INSERT_CHUNK_ROWS))));
      }
      const inserted = new Set(ids);
      const repeated = rows.filter((r) => !inserted.has(r.id));
      const matches = await matchIdempotentDeliveries(tx as unknown as Db, repeated);
      const existing = new Map<string, string>();
      for (const row of repeated) {
        const match = matches.get(row.id);
        if (!match) throw new Error(`delivery for hook "${row.hookId}" was neither stored nor found under its idempotency key`);
        if (!match.same) {
          // Rolled back: nothing of this statement is stored. Thrown below, past storageCall (it is no storage failure).
          conflict.error = new IdempotencyConflictError(row.operationId, row.hookId, row.idempotencyKey ?? '');
          tx.rollback();
        }
        existing.set(row.id, match.id);
      }
      const toNumber = rows.filter((r) => r.ordered && inserted.has(r.id)).map((r) => ({ id: r.id, operationId: r.operationId, hookId: r.hookId }));
      return { ids, sequences: await assignSequences(tx as unknown as Db, toNumber), existing };
    }),
  ).catch((error: unknown) => {
    throw conflict.error ?? error;
  });
  return stored;
}

/** An ordered row's job carries its sequence, and its body carries it too (built now, once). */
function numberBodies(rows: readonly PreparedRow[], sequences: ReadonlyMap<string, number>): void {
  for (const row of rows) {
    const sequence = sequences.get(row.id);
    if (sequence === undefined) continue;
    const { body } = buildDeliveryBody({
      hook: row.hook as ParsedSerializedHook,
      event: row.payload as Record<string, unknown>,
      deliveryId: row.id,
      occurredAt: row.occurredAt,
      sequence,
    });
    row.job.body = body;
    row.job.sequence = sequence;
  }
}

/** Q1a: rows that were not inserted already exist under their (operation, hook, key); use those ids. */
function resolveIds(prepared: readonly PreparedItem[], inserted: ReadonlySet<string>, existing: ReadonlyMap<string, string>): string[][] {
  return prepared.map((p) =>
    p.rows.map((row) => {
      if (inserted.has(row.id)) return row.id;
      const found = existing.get(row.id);
      if (found === undefined) throw new Error(`delivery for hook "${row.hookId}" was neither stored nor found under its idempotency key`);
      return found;
    }),
  );
}

/** Validates one item and builds its ledger rows (one per matching webhook, hook order). */
function prepareItem(
  input: EnqueueInput,
  maxPayloadBytes: number,
  templateEnv: TemplateEnvPattern,
  hooksSeen: Map<unknown, ParsedSerializedHook[]>,
  orderingDefault: 'operation' | 'none',
): PreparedItem {
  if (typeof input.operationId !== 'string' || input.operationId === '') throw new TypeError('enqueue: operationId must be a non-empty string');
  if (!isHookType(input.type)) throw new TypeError(`enqueue: unknown hook type ${JSON.stringify(input.type)}`);
  if (input.idempotencyKey !== undefined && (typeof input.idempotencyKey !== 'string' || input.idempotencyKey === '')) {
    throw new TypeError('enqueue: idempotencyKey must be a non-empty string when given');
  }
  // Text Postgres cannot store is refused here, so it never reaches (and fails) a shared INSERT.
  assertStorableEvent(input.operationId, 'enqueue', 'operationId');
  if (input.idempotencyKey !== undefined) assertStorableEvent(input.idempotencyKey, 'enqueue', 'idempotencyKey');
  const event = normalizeEvent(input);
  assertStorableEvent(event, 'enqueue');
  // D10: too deep (or cyclic) is a typed error, never a raw RangeError from JSON.stringify.
  assertPayloadWithinCap(serializeEventJson(event, 'enqueue: event'), maxPayloadBytes);
  const occurredAt = parseOccurredAt(input.occurredAt);
  let hooks = hooksSeen.get(input.hooks);
  if (hooks === undefined) {
    // E4: a reserved id only on the environment hooks queue-mode dispatch marked itself; a caller's is refused.
    hooks = parseSerializedHooks(input.hooks as readonly unknown[], { allowMarkedEnvironmentHooks: true });
    assertTemplateSources(hooks, templateEnv, { allowMarkedEnvironmentHooks: true }); // W2: refused before anything is stored
    hooksSeen.set(input.hooks, hooks);
  }
  const rows = hooks
    .filter((hook) => hook.type === input.type && !isControlHook(hook) && matchesHook(hook, event))
    .map((hook: ParsedSerializedHook): PreparedRow => {
      const id = newDeliveryId();
      const { body, emailUserId } = buildDeliveryBody({ hook, event, deliveryId: id, occurredAt });
      const key = endpointKey(hook.webhook);
      return {
        id,
        ordered: isOrdered(hook, orderingDefault),
        operationId: input.operationId,
        eventType: input.type,
        hookId: hook.id,
        hook,
        transport: hook.webhook.delivery,
        payload: event,
        idempotencyKey: input.idempotencyKey ?? null,
        endpointKey: key,
        occurredAt,
        // Templates stay unresolved and no email is added: this is data at rest in Redis (W2, B3).
        job: {
          operationId: input.operationId,
          hook: hookJson(hook),
          body,
          ...(emailUserId !== undefined ? { emailUserId } : {}),
          attemptCount: 0,
          generationAttemptCount: 0,
        },
      };
    });
  return { rows, idempotencyKey: input.idempotencyKey };
}

/**
 * The hook's own `ordering`, else the producer's default — for fetch webhooks only
 * (QStash sends on its own schedule; the schema refuses `ordering: 'operation'` with it).
 */
function isOrdered(hook: ParsedSerializedHook, orderingDefault: 'operation' | 'none'): boolean {
  const own = hook.webhook.ordering;
  if (own !== undefined) return own === 'operation';
  return orderingDefault === 'operation' && hook.webhook.delivery === 'fetch';
}

/** A parsed hook's JSON, once per parsed object (hookrelay's own, never mutated). */
const hookJsonCache = new WeakMap<ParsedSerializedHook, string>();
function hookJson(hook: ParsedSerializedHook): string {
  let json = hookJsonCache.get(hook);
  if (json === undefined) {
    json = JSON.stringify(hook);
    hookJsonCache.set(hook, json);
  }
  return json;
}

/** D10: any object with a string operationId (taken from the input when the event has none). */
function normalizeEvent(input: EnqueueInput): Record<string, unknown> {
  const raw: unknown = input.event;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new EventValidationError('enqueue: event must be an object');
  const given = (raw as Record<string, unknown>).operationId;
  // D10: the event is stored under input.operationId; an event naming another operation
  // would tell the receiver the other id. A caller bug, refused, never guessed between.
  if (given !== undefined && given !== input.operationId) {
    const shown = typeof given === 'string' ? JSON.stringify(given.slice(0, 200)) : `(a ${given === null ? 'null' : typeof given})`;
    throw new EventValidationError(
      `enqueue: event.operationId ${shown} does not match operationId ${JSON.stringify(input.operationId.slice(0, 200))}: leave it out or give the same id`,
    );
  }
  const event = given === undefined ? { ...(raw as Record<string, unknown>), operationId: input.operationId } : (raw as Record<string, unknown>);
  const checked = IngestEventSchema.safeParse(event);
  if (!checked.success) {
    const fields = checked.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new EventValidationError(`enqueue: invalid event (${fields})`);
  }
  return event;
}

/** D10: the dates a payload's ISO `occurredAt` and a Postgres timestamptz both hold (years 1-9999). */
const EARLIEST_OCCURRED_AT_MS = new Date('0001-01-01T00:00:00.000Z').getTime();
const LATEST_OCCURRED_AT_MS = new Date('9999-12-31T23:59:59.999Z').getTime();

function parseOccurredAt(value: Date | string | undefined): Date {
  if (value === undefined) return new Date();
  const date = value instanceof Date ? value : new Date(value);
  const ms = date.getTime();
  // Out of range failed later as a StorageError from the INSERT, naming nothing.
  if (Number.isNaN(ms) || ms < EARLIEST_OCCURRED_AT_MS || ms > LATEST_OCCURRED_AT_MS)
    throw new EventValidationError('enqueue: occurredAt must be a valid date between 0001-01-01 and 9999-12-31 (a Date or an ISO 8601 string)');
  return date;
}
