/**
 * The operators' replay (Q10), one loop for `hookrelay replay` and the console: pick candidates
 * (ids or a filter), then per batch claim each row (`failed`/`held` → `queued`, a new generation,
 * the same delivery id so receivers dedupe on `webhook-id`) and add its job (`replayDeliveries`,
 * paced by an optional rate and reporting each batch). A delivered row is never a candidate. Rows
 * claimed but not added to Redis stay `queued` in the ledger and the worker's reconciler adds
 * their jobs (Q2): nothing is lost when Redis is down. Skip reasons are codes
 * (`ReplaySkipCode`): each edge (CLI, console) words them itself.
 */
import type { Queue } from 'bullmq';
import { ReplayStatusError } from '../contract/errors.ts';
import type { Db } from '../store/db.ts';
import { getDeliveryRow, listDeliveries, type DeliveryFilter } from '../store/deliveriesRepo.ts';
import { scopedEndpointKey } from '../contract/endpoint.ts';
import { claimForReplay, replayableStatuses, sequencedIdsInOrder, traceContextsOf } from '../store/replayRepo.ts';
import { activeTracer, inSpan, parseTraceContext, ROOT_CONTEXT, serializeTraceContext, SpanKind } from '../observability/tracing.ts';
import { addDeliveryJobs } from '../queue/jobs.ts';
import type { DeliveryJobData } from '../queue/types.ts';

/** Claim and enqueue this many rows per round trip. */
export const REPLAY_BATCH = 100;
const PAGE = 1_000;

/**
 * Why a row was not replayed: `already_delivered`; `accepted_by_qstash` (replayable only when
 * accepted rows are included); `not_replayable` (any other status, in `status`); `taken` (delivered
 * or replayed since it was selected); `other_queue` (the row is another queue's: replay it with that HOOKRELAY_QUEUE).
 */
export type ReplaySkipCode = 'already_delivered' | 'accepted_by_qstash' | 'not_replayable' | 'taken' | 'other_queue';

export type ReplaySkip = { id: string; skip: ReplaySkipCode; status?: string };

/** One id's result. */
export type ReplayResult =
  | { id: string; result: 'replayed' | 'not_queued'; generation: number }
  | { id: string; result: 'would_replay'; status: string; hookId: string; eventType: string }
  | ({ result: 'skipped' } & ReplaySkip)
  | { id: string; result: 'unknown' };

/** The candidates of a replay by id: unknown ids and rows not replayable are reported, not fatal. */
export async function replayCandidatesByIds(
  db: Db,
  ids: readonly string[],
  includeAccepted: boolean,
  queue?: string,
): Promise<{ candidates: string[]; skipped: ReplaySkip[]; unknown: string[] }> {
  const candidates: string[] = [];
  const skipped: ReplaySkip[] = [];
  const unknown: string[] = [];
  const allowed = replayableStatuses(includeAccepted);
  for (const id of [...new Set(ids)]) {
    const row = await getDeliveryRow(db, id);
    if (!row) unknown.push(id);
    else if (row.status === 'delivered') skipped.push({ id, skip: 'already_delivered' });
    else if (queue !== undefined && row.queue !== null && row.queue !== queue) skipped.push({ id, skip: 'other_queue' });
    else if (row.status === 'accepted_by_qstash' && !allowed.includes(row.status)) skipped.push({ id, skip: 'accepted_by_qstash' });
    else if (!allowed.includes(row.status)) skipped.push({ id, skip: 'not_replayable', status: row.status });
    else candidates.push(id);
  }
  return { candidates, skipped, unknown };
}

/**
 * Every id matching the filter (status `failed` unless it names `held` / `accepted_by_qstash`),
 * newest first, paged by keyset so a huge ledger is not read at once.
 */
export async function replayCandidatesByFilter(db: Db, filter: DeliveryFilter, includeAccepted: boolean): Promise<string[]> {
  const status = typeof filter.status === 'string' ? filter.status : 'failed';
  if (!replayableStatuses(includeAccepted).includes(status)) {
    throw new ReplayStatusError(status, includeAccepted);
  }
  const ids: string[] = [];
  let beforeId: string | undefined;
  for (;;) {
    const { limit: _limit, beforeId: _before, ...rest } = filter;
    const page = await listDeliveries(db, { ...rest, status, limit: PAGE, ...(beforeId ? { beforeId } : {}) });
    ids.push(...page.map((d) => d.id));
    if (page.length < PAGE) return ids;
    beforeId = page.at(-1)?.id;
  }
}

/** What a dry run would replay (present rows only), for a preview. */
export async function previewReplay(
  db: Db,
  candidates: readonly string[],
): Promise<Array<Extract<ReplayResult, { result: 'would_replay' }> & { lastErrorClass: string | null; createdAt: Date }>> {
  const rows = await Promise.all(candidates.map((id) => getDeliveryRow(db, id)));
  return rows
    .filter((r): r is NonNullable<typeof r> => r !== undefined)
    .map((r) => ({
      id: r.id,
      result: 'would_replay' as const,
      status: r.status,
      hookId: r.hookId,
      eventType: r.eventType,
      lastErrorClass: r.lastErrorClass,
      createdAt: r.createdAt,
    }));
}

/**
 * An operator's replay says the receivers may be back: the open breakers of the replayed rows'
 * endpoints probe at once (Q10) instead of after a cooldown that may outlast the replayed
 * deliveries' deadlines. A failed probe still opens them again. Best effort (Redis may be away).
 */
export type ReplayProbe = (endpointKeys: readonly string[]) => Promise<unknown>;

/**
 * Claim and enqueue one batch (≤ REPLAY_BATCH ids). A row delivered or replayed since it was
 * selected is skipped; `not_queued` rows are queued in the ledger (the reconciler adds them).
 */
export async function replayBatch(
  db: Db,
  queue: Queue<DeliveryJobData>,
  batch: readonly string[],
  includeAccepted: boolean,
  probe?: ReplayProbe,
): Promise<ReplayResult[]> {
  if (activeTracer() === undefined) return claimAndEnqueue(db, queue, batch, includeAccepted, undefined, probe);
  // A replay is a new trace, linked to each original one; the replayed attempts continue it.
  const links = (await traceContextsOf(db, batch)).flatMap((stored) => {
    const sc = parseTraceContext(stored);
    return sc ? [{ context: sc }] : [];
  });
  return inSpan('hookrelay.replay', { kind: SpanKind.PRODUCER, parent: ROOT_CONTEXT, links, attributes: { 'hookrelay.deliveries': batch.length } }, (span) =>
    claimAndEnqueue(db, queue, batch, includeAccepted, serializeTraceContext(span), probe),
  );
}

async function claimAndEnqueue(
  db: Db,
  queue: Queue<DeliveryJobData>,
  batch: readonly string[],
  includeAccepted: boolean,
  trace: string | undefined,
  probe: ReplayProbe | undefined,
): Promise<ReplayResult[]> {
  // A row is replayed into its own queue only (its worker sends it); another queue's row is left.
  const claimed = await claimForReplay(db, batch, includeAccepted, trace, queue.name);
  const keys = [...new Set(claimed.flatMap((c) => (c.endpointKey ? [scopedEndpointKey(c.tenant, c.endpointKey)] : [])))];
  if (probe && keys.length > 0) await probe(keys).catch(() => undefined);
  const taken = new Set(claimed.map((c) => c.id));
  const results: ReplayResult[] = batch.filter((id) => !taken.has(id)).map((id) => ({ id, result: 'skipped' as const, skip: 'taken' as const }));
  try {
    await addDeliveryJobs(
      queue,
      claimed.map((c) => ({ deliveryId: c.id, generation: c.generation })),
    );
    results.push(...claimed.map((c) => ({ id: c.id, result: 'replayed' as const, generation: c.generation })));
  } catch {
    results.push(...claimed.map((c) => ({ id: c.id, result: 'not_queued' as const, generation: c.generation })));
  }
  return results;
}

export type ReplayOptions = {
  /** Take `accepted_by_qstash` rows too (Q12). */
  includeAccepted: boolean;
  /** Deliveries per second at most (batches shrink to it and wait between them); none = as fast as it goes. */
  rate?: number;
  /** Each replayed endpoint's open breaker probes now, once per call (Q10). */
  probe?: ReplayProbe;
  /** After each batch: its results, and how many candidates are done. */
  onBatch?: (results: readonly ReplayResult[], done: number) => void;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Replay keeps order (Q10, SEC-H7). The ordered candidates are claimed in (operation, hook,
 * sequence) order (SEC-H7: an order is one hook's) — they take the places ordered candidates had, unordered ones keep theirs — so
 * sequence n is queued again no later than n+1 and the worker's turn keeper holds n+1 behind it.
 */
export async function orderForReplay(db: Db, candidates: readonly string[]): Promise<string[]> {
  if (candidates.length === 0) return [];
  const ordered = await sequencedIdsInOrder(db, candidates);
  if (ordered.length === 0) return [...candidates];
  const isOrdered = new Set(ordered);
  let next = 0;
  return candidates.map((id) => (isOrdered.has(id) ? (ordered[next++] as string) : id));
}

/** Replay every candidate, batch after batch (≤ REPLAY_BATCH, fewer under a rate), ordered deliveries in sequence order. */
export async function replayDeliveries(db: Db, queue: Queue<DeliveryJobData>, requested: readonly string[], options: ReplayOptions): Promise<ReplayResult[]> {
  const candidates = await orderForReplay(db, [...new Set(requested)]);
  const results: ReplayResult[] = [];
  const probed = new Set<string>();
  const probe: ReplayProbe | undefined = options.probe
    ? (keys) => {
        const fresh = keys.filter((k) => !probed.has(k));
        for (const k of fresh) probed.add(k);
        return fresh.length > 0 ? options.probe!(fresh) : Promise.resolve();
      }
    : undefined;
  const batchSize = Math.max(1, Math.min(REPLAY_BATCH, options.rate ?? REPLAY_BATCH));
  for (let i = 0; i < candidates.length; i += batchSize) {
    const started = Date.now();
    const batch = candidates.slice(i, i + batchSize);
    const outcome = await replayBatch(db, queue, batch, options.includeAccepted, probe);
    results.push(...outcome);
    options.onBatch?.(outcome, Math.min(candidates.length, i + batch.length));
    if (options.rate) {
      const wait = (batch.length / options.rate) * 1000 - (Date.now() - started);
      if (wait > 0) await sleep(wait);
    }
  }
  return results;
}
