/**
 * The service's ordered, bounded stop (Q9): the sweeps, then jobs waiting in memory go back and
 * attempts under way drain within HOOKRELAY_SHUTDOWN_TIMEOUT_MS, then the ledger flush, the
 * endpoint leases, the HTTP server, Redis and the fetch sockets — each closing step bounded, and
 * all of them together within CLOSE_BUDGET_MS past the bound. One line says how it went.
 */
import { withTimeout } from '../util/withTimeout.ts';
import type { Queue, Worker } from 'bullmq';
import type { RunningHttpServer } from '../observability/httpServer.ts';
import type { Logger } from '../observability/logger.ts';
import type { QueueRedis } from '../queue/redisConnection.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import type { FetchTransport } from '../send/fetchTransport.ts';
import type { Admission } from './attempt/admission.ts';
import type { TurnKeeper } from './attempt/ordering.ts';
import type { AttemptAccounting } from './attemptAccounting.ts';
import { closeDeliveryWorker } from './bullWorker.ts';
import type { DependencyHealth } from './dependencyHealth.ts';
import type { PostgresWait } from './postgresWait.ts';
import type { WorkerIsolation } from './workerIsolation.ts';

/** Bound on each closing step (Redis, the HTTP server, the ledger flush) once the worker itself has stopped. */
const CLOSE_STEP_TIMEOUT_MS = 3_000;
/** Q9: what a stop may take past HOOKRELAY_SHUTDOWN_TIMEOUT_MS, all closing steps together. */
const CLOSE_BUDGET_MS = 5_000;

type StoppingService = {
  /** HOOKRELAY_SHUTDOWN_TIMEOUT_MS: how long attempts under way may take to drain. */
  boundMs: number;
  logger: Logger;
  sweeps: { stop(): Promise<unknown> };
  admission: Admission;
  ordering: TurnKeeper;
  worker: Worker<DeliveryJobData>;
  accounting: AttemptAccounting;
  /** B5: aborted at the bound; deliveries still waiting on an email look-up give up. */
  abandon: AbortController;
  gate: PostgresWait & { stopResuming(): void };
  health: DependencyHealth;
  connection: QueueRedis;
  redisReady: () => boolean;
  endpoints: WorkerIsolation | undefined;
  http: RunningHttpServer | undefined;
  queue: Queue<DeliveryJobData>;
  fetchTransport: FetchTransport;
};

/** The service's stop: the first call runs the sequence; every call returns its result (true when nothing was cut off). */
export function orderedStop(s: StoppingService): () => Promise<boolean> {
  let stopped: Promise<boolean> | undefined;
  return () => {
    stopped ??= stopInOrder(s);
    return stopped;
  };
}

async function stopInOrder(s: StoppingService): Promise<boolean> {
  const { logger, accounting, gate, health, connection, redisReady } = s;
  const isolationRedis = s.endpoints?.redis;
  s.gate.stopResuming();
  const started = Date.now();
  const inFlightAtStop = accounting.running();
  const bound = s.boundMs;
  // Q9: past the bound every remaining step shares CLOSE_BUDGET_MS, whatever Redis and Postgres do.
  const hardDeadline = started + bound + CLOSE_BUDGET_MS;
  await boundedStep(s.sweeps.stop(), hardDeadline);
  // Jobs waiting in memory (no attempt yet) go back to the queue now; attempts under way drain.
  s.admission.close();
  s.ordering.close();
  let cutOff = 0;
  const ended = await closeDeliveryWorker(s.worker, {
    timeoutMs: Math.max(0, bound - (Date.now() - started)),
    logger,
    onTimeout: () => {
      cutOff = accounting.unrecorded();
      s.abandon.abort();
      // Outcomes waiting for Postgres give up: their rows stay in_flight / queued and the reconciler re-enqueues them.
      gate.close();
    },
    idleWithoutRedis: () => accounting.unrecorded() === 0 && health.isDown('redis'),
    // Only when Redis is away: with Redis up, BullMQ's own close finishes once the cut-off jobs unwind.
    disconnect: () => {
      if (redisReady()) return;
      connection.disconnect();
      isolationRedis?.disconnect();
    },
    forceTimeoutMs: CLOSE_STEP_TIMEOUT_MS,
  });
  const drained = ended !== 'bound' || cutOff === 0;
  // Past the bound, the deliveries abandoned above still get their outcome written if they can.
  const flushed = await boundedStep(accounting.ledger.drain(), hardDeadline);
  accounting.inFlight.stop();
  // The leases go back before the isolation connection closes (else the next worker waits for them to lapse).
  await boundedStep(s.endpoints?.isolation.stop(), hardDeadline);
  gate.close();
  health.stop();
  await boundedStep(s.http?.close(), hardDeadline);
  // Redis away: closing the queue would wait on it; dropping the connection below is the close.
  if (redisReady()) await boundedStep(s.queue.close(), hardDeadline);
  connection.disconnect();
  isolationRedis?.disconnect();
  await boundedStep(s.fetchTransport.close(), hardDeadline);
  const clean = drained && flushed;
  const away = health.downNow();
  const fields = { inFlightAtStop, drained: inFlightAtStop - cutOff, cutOff, graceful: clean, unreachable: away, ms: Date.now() - started };
  const awayNote = away.length > 0 ? `; ${away.join(' and ')} unreachable at stop` : '';
  if (clean) logger.info(fields, `stopped: ${inFlightAtStop} in-flight deliveries drained, ledger flushed${awayNote}`);
  else
    logger.warn(
      fields,
      cutOff > 0
        ? `stopped uncleanly: ${inFlightAtStop - cutOff} of ${inFlightAtStop} in-flight deliveries drained; ${cutOff} cut off at the ${bound} ms bound (their ledger rows stay; the reconciler re-enqueues them)${awayNote}`
        : `stopped uncleanly: the ledger could not be flushed (the rows stay; the reconciler re-enqueues them)${awayNote}`,
    );
  return clean;
}

/** Waits for `step` at most CLOSE_STEP_TIMEOUT_MS and never past `deadline`; true when it settled without error in time. */
async function boundedStep(step: Promise<unknown> | undefined, deadline: number): Promise<boolean> {
  if (!step) return true;
  const waitMs = Math.max(0, Math.min(CLOSE_STEP_TIMEOUT_MS, deadline - Date.now()));
  return withTimeout(
    step.then(
      () => true,
      () => false,
    ),
    waitMs,
    false,
  );
}
