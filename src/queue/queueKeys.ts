/**
 * The Redis keys of a delivery queue: BullMQ's (the layout of its QueueKeys: `prefix:name:type`)
 * and hookrelay's beside them, built in this one place. Kept free of BullMQ and ioredis at
 * run time so the CLI's read commands load neither (issue 50: a read command ≤ 300 ms);
 * test/unit/queue/queueKeys.test.ts holds the layout to BullMQ's own QueueKeys.
 */

/** The Redis keys of one queue. */
export type DeliveryQueueKeys = {
  /** `prefix:name`: BullMQ's qualified queue name. */
  readonly base: string;
  /** Where the queue's endpoint state lives (the endpoint gate's and policy acknowledgements' prefix): `base`, like BullMQ's own keys. */
  readonly endpointPrefix: string;
  /** A BullMQ key of the queue (`wait`, `active`, `delayed`, `meta`, …). */
  bull(type: string): string;
  /** The hash of a job (delivery id = job id, Q1). */
  job(id: string): string;
  /** Replay guard of QStash callbacks (a hashed identity is appended). */
  readonly qstashSeen: string;
  /** Console sessions (an HMAC of the session id is appended). */
  readonly consoleSessions: string;
};

export function deliveryQueueKeys(prefix: string, queueName: string): DeliveryQueueKeys {
  const base = `${prefix}:${queueName}`;
  return {
    base,
    endpointPrefix: base,
    bull: (type) => `${base}:${type}`,
    job: (id) => `${base}:${id}`,
    qstashSeen: `${base}:qstash:seen:`,
    consoleSessions: `${base}:console:session:`,
  };
}

/** The job states an operator reads, as BullMQ's getJobCounts names them. */
export const JOB_COUNT_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;
export type JobCountState = (typeof JOB_COUNT_STATES)[number];

/** The commands jobCounts needs of a connection (an ioredis Redis or Cluster has them). */
type CountingRedis = {
  pipeline(): { llen(key: string): unknown; zcard(key: string): unknown; exec(): Promise<Array<[Error | null, unknown]> | null> };
};

/**
 * Job counts per state in one round trip, as BullMQ 6's getCounts script counts them (lists:
 * LLEN; sorted sets: ZCARD) — without loading BullMQ, for the CLI's `stats` and the console.
 */
export async function jobCounts<S extends JobCountState>(redis: CountingRedis, keys: DeliveryQueueKeys, states: readonly S[]): Promise<Record<S, number>> {
  const pipeline = redis.pipeline();
  for (const state of states) {
    if (state === 'waiting') pipeline.llen(keys.bull('wait'));
    else if (state === 'active') pipeline.llen(keys.bull('active'));
    else pipeline.zcard(keys.bull(state));
  }
  const replies = (await pipeline.exec()) ?? [];
  const counts = {} as Record<S, number>;
  states.forEach((state, i) => {
    const [err, n] = replies[i] ?? [new Error('no reply'), 0];
    if (err) throw err;
    counts[state] = Number(n);
  });
  return counts;
}
