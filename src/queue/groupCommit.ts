/**
 * Group commit of concurrent enqueue calls: the calls that arrive while a commit runs share the
 * next one (each call still waits for its own rows and jobs, and gets its own answer). Server
 * apps enqueue one event per request; at 1,000 calls/s this is tens of statements a second, not
 * 1,000. One commit runs the steps of an enqueue after prepare (prepareEnqueue.ts), in order:
 * store (storeRows.ts) → number (enqueueBodies.ts) → add jobs (addStoredJobs.ts) → answer
 * (answerCalls.ts).
 */
import type { Logger } from '../observability/logger.ts';
import type { Db } from '../store/db.ts';
import { addStoredJobs, stageJobs } from './addStoredJobs.ts';
import { answerCalls, type CallOutcome } from './answerCalls.ts';
import { createBatcher } from './batcher.ts';
import { numberOrderedRows, writeJobBodies } from './enqueueBodies.ts';
import type { PreparedItem } from './prepareEnqueue.ts';
import type { RedisAvailability } from './redisAvailability.ts';
import { storeGroup } from './storeRows.ts';
import type { DeliveryQueueConnection } from './queueConnection.ts';

/** Most calls per commit. */
const ENQUEUE_GROUP_CALLS = 256;
/** Commits of unordered calls in flight at once (pipelining over the pool). */
const ENQUEUE_CONCURRENT_COMMITS = 2;

export type GroupCommitDeps = {
  db(): Promise<Db>;
  queue(): DeliveryQueueConnection;
  /** Q2: how long a commit waits for Redis before answering `queued: false`. */
  queueTimeoutMs: number;
  /** F2/F3: whether an add may be sent now (a Redis known down is not waited for). */
  redis(): RedisAvailability;
  logger: Logger;
};

export type GroupCommit = {
  /** Commits one call's prepared items with whichever calls share its group; never rejects. */
  submit(prepared: PreparedItem[]): Promise<CallOutcome>;
  /** Resolves once every call submitted so far has its answer. */
  drain(): Promise<void>;
};

export function createGroupCommit(deps: GroupCommitDeps): GroupCommit {
  const run = (calls: PreparedItem[][]) => commitGroup(deps, calls);
  const commits = createBatcher<PreparedItem[], CallOutcome>({ maxBatch: ENQUEUE_GROUP_CALLS, maxConcurrent: ENQUEUE_CONCURRENT_COMMITS, run });
  // Calls with ordered rows commit one group at a time, in call order, so one producer's
  // sequences follow the order its enqueue calls were made (not which commit won a race).
  const orderedCommits = createBatcher<PreparedItem[], CallOutcome>({ maxBatch: ENQUEUE_GROUP_CALLS, maxConcurrent: 1, run });
  return {
    submit(prepared) {
      const ordered = prepared.some((p) => p.rows.some((r) => r.ordered));
      return (ordered ? orderedCommits : commits).submit(prepared).catch((error: unknown): CallOutcome => ({ error }));
    },
    async drain() {
      await Promise.all([commits.drain(), orderedCommits.drain()]);
    },
  };
}

/** One group's commit: the steps after prepare, in order. A throw fails every call of the group. */
async function commitGroup(deps: GroupCommitDeps, calls: PreparedItem[][]): Promise<CallOutcome[]> {
  const db = await deps.db();
  const rows = calls.flatMap((items) => items.flatMap((p) => p.rows));
  // Store: one statement (one transaction beyond its size, or with ordered or keyed rows): all of these calls or none.
  const storing = storeGroup(db, calls, rows);
  storing.catch(() => undefined); // awaited below, once the bodies are built
  // While Postgres stores the rows (the statement is sent by then): the unordered rows' job
  // bodies, and when every row is to be inserted (nothing keyed or ordered) their jobs, staged to
  // be sent after the commit (not one job alone: it is one script call, no pipeline to build).
  await nextTurn();
  writeJobBodies(rows);
  const staged =
    rows.length > 1 && rows.every((r) => !r.ordered && r.idempotencyKey == null) && deps.redis().state() === 'up' ? stageJobs(deps.queue, rows) : undefined;
  const stored = await storing;
  // Number: ordered rows' bodies and jobs carry the sequences the commit gave them (SEC-H7).
  numberOrderedRows(rows, stored.sequences);
  // Add jobs: every stored row gets its job, whatever happens to a sibling call.
  const inserted = rows.filter((r) => stored.inserted.has(r.id));
  const queued = await addStoredJobs(
    deps.queue,
    inserted,
    deps.queueTimeoutMs,
    deps.logger,
    deps.redis(),
    inserted.length === rows.length ? staged : undefined,
  );
  // Answer: each call its own ids or its own error.
  return answerCalls(calls, stored, queued);
}

/** After the I/O the current turn started (a query written to its socket). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
