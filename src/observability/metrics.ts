/**
 * Prometheus metrics of the delivery worker, on a registry of its own (no global state, so tests
 * and several workers in one process do not collide). Names are documented in the README.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DELIVERY_STATUSES } from '../contract/delivery.ts';
import { ENDPOINT_STATES, type EndpointState } from '../contract/endpoint.ts';

/** Every status the ledger gauge reports (0 when none), so an alert never sees a missing series. */
const LEDGER_STATUSES: readonly string[] = DELIVERY_STATUSES;
const LEDGER_CACHE_MS = 10_000;

type LedgerStatsFn = NonNullable<DeliveryMetricsOptions['ledgerStats']>;

/** One Postgres read per 10 s whatever the scrape rate (and whichever gauge asks first); undefined while it fails. */
function cachedLedgerStats(read: LedgerStatsFn | undefined): () => Promise<Awaited<ReturnType<LedgerStatsFn>> | undefined> {
  let at = 0;
  let pending: Promise<Awaited<ReturnType<LedgerStatsFn>> | undefined> | undefined;
  return () => {
    if (!read) return Promise.resolve(undefined);
    if (pending === undefined || Date.now() - at > LEDGER_CACHE_MS) {
      at = Date.now();
      pending = read().catch(() => undefined);
    }
    return pending;
  };
}

/** Attempt latency buckets (seconds): loopback receivers to slow remote ones. */
const ATTEMPT_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** BullMQ states reported as queue depth. */
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;
type QueueState = (typeof QUEUE_STATES)[number];

export type DeliveryMetrics = {
  registry: Registry;
  /** Attempts (every try, retries included) by outcome (delivered, accepted_by_qstash, retrying, failed) and transport. */
  attempts: Counter<'outcome' | 'transport'>;
  /** Deliveries that reached a final outcome (delivered, accepted_by_qstash, failed, skipped), once each. */
  finished: Counter<'outcome' | 'transport'>;
  /** N1: final outcomes by tenant (bounded: HOOKRELAY_METRICS_TENANTS names the tenants, every other one is `other`). */
  tenantFinished: Counter<'tenant' | 'outcome'>;
  attemptDuration: Histogram<'transport'>;
  reconciled: Counter;
  criticalFailures: Counter;
  retentionPruned: Counter;
  retentionDeleted: Counter;
  qstashCallbacks: Counter<'kind' | 'result'>;
  /** Requests and connections the HTTP server refused (connection cap, body cap or budget, pre-read check, throttle, ops access). */
  httpRefused: Counter<'reason'>;
  /** Breaker transitions (to open, half_open, closed, disabled, enabled), each counted by the process that made it. */
  endpointTransitions: Counter<'to'>;
  /** Jobs put back without an attempt because their endpoint was busy, rate-limited or open. */
  endpointDeferrals: Counter<'reason'>;
  /** Jobs held (not attempted) because their endpoint is disabled. */
  endpointHeld: Counter;
  /** SEC-H7: ordered deliveries that became blocked behind a failed `onFailure: 'block'` delivery of their hook. */
  orderingBlocked: Counter;
};

export type DeliveryMetricsOptions = {
  /** Read at scrape time for the queue-depth gauge. */
  queueCounts?: () => Promise<Partial<Record<QueueState, number>>>;
  /** Read at scrape time for the endpoint-state gauge: how many endpoints are in each state. */
  endpointStates?: () => Promise<Partial<Record<EndpointState, number>>>;
  /** Read at scrape time (at most every 10 s) for the ledger gauges: rows by status, oldest undelivered. */
  ledgerStats?: () => Promise<{ byStatus: ReadonlyArray<{ status: string; count: number }>; oldestUndeliveredAt: Date | null }>;
  /** Read at scrape time (at most every 10 s) for the approvals gauge: approvals by status and outcome (A1, A2). */
  approvalStats?: () => Promise<ReadonlyArray<{ status: string; outcome: string | null; count: number }>>;
  /** Read at scrape time: does each dependency (redis, postgres) answer, and the seconds it spent unreachable (Q13). */
  dependencies?: () => ReadonlyArray<{ dependency: string; up: boolean; outageSeconds: number }>;
  /** Read at scrape time: ledger operations (mostly attempt outcomes) waiting for Postgres (Q13). */
  ledgerWritesWaiting?: () => number;
  /** Read at scrape time (F1): what the producers' spools under this host's data dir hold. */
  spool?: () => Promise<{ events: number; bytes: number; oldestAt: Date | null }>;
  /** Process metrics (CPU, RSS, event loop lag). Default true. */
  processMetrics?: boolean;
};

/**
 * A Redis read at scrape time gives up after this: a command sent just as the connection drops
 * waits in ioredis for the reconnect, which would hold /metrics for the whole outage (Q13).
 */
const SCRAPE_READ_TIMEOUT_MS = 1_000;

async function withinScrapeTimeout<T>(read: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('scrape read timed out')), SCRAPE_READ_TIMEOUT_MS);
  });
  try {
    return await Promise.race([read, timeout]);
  } finally {
    clearTimeout(timer);
    read.catch(() => undefined);
  }
}

export function createDeliveryMetrics(options: DeliveryMetricsOptions = {}): DeliveryMetrics {
  const registry = new Registry();
  // Standard names (process_cpu_seconds_total, nodejs_eventloop_lag_seconds, …) so stock dashboards and alerts work.
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const queueCounts = options.queueCounts;
  new Gauge({
    name: 'hookrelay_queue_jobs',
    help: 'BullMQ jobs of the delivery queue by state',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      if (!queueCounts) return;
      try {
        const counts = await withinScrapeTimeout(queueCounts());
        for (const state of QUEUE_STATES) this.set({ state }, counts[state] ?? 0);
      } catch {
        // Redis away: the gauge keeps its last values; /readyz reports the outage.
      }
    },
  });
  const endpointStates = options.endpointStates;
  new Gauge({
    name: 'hookrelay_endpoint_state',
    help: 'Endpoints by isolation state (closed, open, half_open, disabled)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      if (!endpointStates) return;
      try {
        const counts = await withinScrapeTimeout(endpointStates());
        for (const state of ENDPOINT_STATES) this.set({ state }, counts[state] ?? 0);
      } catch {
        // Redis or Postgres away: the gauge keeps its last values.
      }
    },
  });
  // The ledger is the record: "nothing lost" is an alert on these (rows waiting, and for how long).
  const ledger = cachedLedgerStats(options.ledgerStats);
  new Gauge({
    name: 'hookrelay_ledger_rows',
    help: 'Ledger rows (deliveries) by status, read from Postgres at scrape time (cached 10 s)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const stats = await ledger();
      if (!stats) return;
      for (const status of LEDGER_STATUSES) this.set({ status }, 0);
      for (const s of stats.byStatus) this.set({ status: s.status }, s.count);
    },
  });
  new Gauge({
    name: 'hookrelay_oldest_undelivered_age_seconds',
    help: 'Age of the oldest delivery still queued, in flight or retrying (0 when none), read at scrape time (cached 10 s)',
    registers: [registry],
    async collect() {
      const stats = await ledger();
      if (!stats) return;
      this.set(stats.oldestUndeliveredAt ? Math.max(0, (Date.now() - stats.oldestUndeliveredAt.getTime()) / 1000) : 0);
    },
  });
  // A1/A2: pending approvals waiting on people, and what became of decisions (applied, expired, ambiguous, identity_mismatch).
  const approvalStats = options.approvalStats;
  if (approvalStats) {
    let at = 0;
    let read: Promise<ReadonlyArray<{ status: string; outcome: string | null; count: number }> | undefined> | undefined;
    new Gauge({
      name: 'hookrelay_approvals',
      help: 'Approvals by status (pending, approved, rejected, expired, cancelled) and outcome (none, applied, expired, cancelled, ambiguous, identity_mismatch), read from Postgres at scrape time (cached 10 s)',
      labelNames: ['status', 'outcome'],
      registers: [registry],
      async collect() {
        if (read === undefined || Date.now() - at > LEDGER_CACHE_MS) {
          at = Date.now();
          read = withinScrapeTimeout(approvalStats()).catch(() => undefined);
        }
        const rows = await read;
        if (!rows) return;
        this.reset();
        for (const r of rows) this.set({ status: r.status, outcome: r.outcome ?? 'none' }, r.count);
      },
    });
  }
  // Q13: what an operator alerts on during an outage.
  const dependencies = options.dependencies;
  if (dependencies) {
    new Gauge({
      name: 'hookrelay_dependency_up',
      help: 'Does the dependency (redis, postgres) answer: 1 up, 0 unreachable',
      labelNames: ['dependency'],
      registers: [registry],
      collect() {
        for (const d of dependencies()) this.set({ dependency: d.dependency }, d.up ? 1 : 0);
      },
    });
    new Counter({
      name: 'hookrelay_dependency_outage_seconds_total',
      help: 'Seconds the dependency (redis, postgres) was unreachable since the worker started, the current outage included',
      labelNames: ['dependency'],
      registers: [registry],
      collect() {
        this.reset();
        for (const d of dependencies()) this.inc({ dependency: d.dependency }, d.outageSeconds);
      },
    });
  }
  const writesWaiting = options.ledgerWritesWaiting;
  if (writesWaiting) {
    new Gauge({
      name: 'hookrelay_ledger_writes_waiting',
      help: 'Ledger operations (mostly outcomes of finished attempts) waiting for Postgres to answer; bounded by the concurrency',
      registers: [registry],
      collect() {
        this.set(writesWaiting());
      },
    });
  }
  const spool = options.spool;
  if (spool) {
    // F1: events accepted by a producer on this host and not yet in the ledger (Postgres was away).
    const read = () => withinScrapeTimeout(spool()).catch(() => undefined);
    new Gauge({
      name: 'hookrelay_spool_events',
      help: "Events in the producers' local spools under HOOKRELAY_DATA_DIR (accepted while Postgres was away, not yet drained into the ledger)",
      registers: [registry],
      async collect() {
        const s = await read();
        if (s) this.set(s.events);
      },
    });
    new Gauge({
      name: 'hookrelay_spool_oldest_age_seconds',
      help: 'Age of the oldest event waiting in a local spool (0 when none)',
      registers: [registry],
      async collect() {
        const s = await read();
        if (s) this.set(s.oldestAt ? Math.max(0, (Date.now() - s.oldestAt.getTime()) / 1000) : 0);
      },
    });
  }
  return {
    registry,
    endpointTransitions: new Counter({
      name: 'hookrelay_endpoint_transitions_total',
      help: 'Endpoint state transitions by the state entered',
      labelNames: ['to'],
      registers: [registry],
    }),
    endpointDeferrals: new Counter({
      name: 'hookrelay_endpoint_deferrals_total',
      help: 'Jobs put back without an attempt: endpoint busy (at its cap), rate-limited, open or probing',
      labelNames: ['reason'],
      registers: [registry],
    }),
    endpointHeld: new Counter({
      name: 'hookrelay_endpoint_held_total',
      help: 'Deliveries held without an attempt because their endpoint is disabled',
      registers: [registry],
    }),
    orderingBlocked: new Counter({
      name: 'hookrelay_ordering_blocked_total',
      help: "Ordered deliveries that became blocked behind a failed onFailure 'block' delivery of their hook (replay or skip it)",
      registers: [registry],
    }),
    attempts: new Counter({
      name: 'hookrelay_delivery_attempts_total',
      help: 'Delivery attempts, every try counted (retries included), by outcome (delivered, accepted_by_qstash, retrying, failed) and transport',
      labelNames: ['outcome', 'transport'],
      registers: [registry],
    }),
    finished: new Counter({
      name: 'hookrelay_deliveries_total',
      help: 'Deliveries that reached a final outcome (delivered, accepted_by_qstash, failed; skipped: an environment hook the worker no longer has), each counted once (every try is in hookrelay_delivery_attempts_total; a later QStash callback in hookrelay_qstash_callbacks_total)',
      labelNames: ['outcome', 'transport'],
      registers: [registry],
    }),
    tenantFinished: new Counter({
      name: 'hookrelay_tenant_deliveries_total',
      help: 'Deliveries that reached a final outcome, by tenant (the tenants HOOKRELAY_METRICS_TENANTS names; every other tenant is `other`) and outcome',
      labelNames: ['tenant', 'outcome'],
      registers: [registry],
    }),
    attemptDuration: new Histogram({
      name: 'hookrelay_attempt_duration_seconds',
      help: 'Duration of one delivery attempt (publish or fetch, fallback included)',
      labelNames: ['transport'],
      buckets: ATTEMPT_DURATION_BUCKETS,
      registers: [registry],
    }),
    reconciled: new Counter({ name: 'hookrelay_reconciled_total', help: 'Ledger rows whose lost job the reconciler added again', registers: [registry] }),
    criticalFailures: new Counter({
      name: 'hookrelay_critical_failures_total',
      help: "Deliveries of fallback 'none' hooks that failed for good (their operation is flagged)",
      registers: [registry],
    }),
    retentionPruned: new Counter({
      name: 'hookrelay_retention_pruned_total',
      help: 'Finished ledger rows whose payload and attempts were pruned past HOOKRELAY_RETENTION_DAYS',
      registers: [registry],
    }),
    retentionDeleted: new Counter({
      name: 'hookrelay_retention_deleted_total',
      help: 'Finished ledger rows deleted past HOOKRELAY_RETENTION_DELETE_DAYS',
      registers: [registry],
    }),
    qstashCallbacks: new Counter({
      name: 'hookrelay_qstash_callbacks_total',
      help: 'QStash callbacks received, by kind (callback, failure) and result (delivered, attempt_failed, failed, stale, replayed, or why refused)',
      labelNames: ['kind', 'result'],
      registers: [registry],
    }),
    httpRefused: new Counter({
      name: 'hookrelay_http_refused_total',
      help: 'Requests (and connections) the worker HTTP server refused, by reason: connection_limit, body_too_large, body_budget, body_aborted, pre_read, throttled, ops_address, ops_host',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
}
