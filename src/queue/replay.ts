/**
 * Q10: replay, as `hookrelay replay` and the console both do it — pick candidates (ids or a
 * filter), then per batch claim each row (`failed`/`held` → `queued`, a new generation, the same
 * delivery id so receivers dedupe on `webhook-id`) and add its job. A delivered row is never a
 * candidate. Rows claimed but not added to Redis stay `queued` in the ledger and the worker's
 * reconciler adds their jobs (Q2): nothing is lost when Redis is down.
 */
import type { Queue } from 'bullmq';
import type { Db } from '../store/db.ts';
import { getDeliveryRow, listDeliveries, type DeliveryFilter } from '../store/deliveriesRepo.ts';
import { claimForReplay, replayableStatuses, traceContextsOf } from '../store/replayRepo.ts';
import { activeTracer, inSpan, parseTraceContext, ROOT_CONTEXT, serializeTraceContext, SpanKind } from '../observability/tracing.ts';
import { addDeliveryJobs } from './jobs.ts';
import type { DeliveryJobData } from './types.ts';

/** Claim and enqueue this many rows per round trip. */
export const REPLAY_BATCH = 100;
const PAGE = 1_000;

export type ReplaySkip = { id: string; reason: string };

/** One id's result. */
export type ReplayResult =
  | { id: string; result: 'replayed' | 'not_queued'; generation: number }
  | { id: string; result: 'would_replay'; status: string; hookId: string; eventType: string }
  | { id: string; result: 'skipped'; reason: string }
  | { id: string; result: 'unknown' };

/** A filter replay asked for a status that cannot be replayed (usage, nothing changed). */
export class ReplayStatusError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayStatusError';
  }
}

/** The candidates of a replay by id: unknown ids and rows not replayable are reported, not fatal. */
export async function replayCandidatesByIds(
  db: Db,
  ids: readonly string[],
  includeAccepted: boolean,
): Promise<{ candidates: string[]; skipped: ReplaySkip[]; unknown: string[] }> {
  const candidates: string[] = [];
  const skipped: ReplaySkip[] = [];
  const unknown: string[] = [];
  const allowed = replayableStatuses(includeAccepted);
  for (const id of [...new Set(ids)]) {
    const row = await getDeliveryRow(db, id);
    if (!row) unknown.push(id);
    else if (row.status === 'delivered') skipped.push({ id, reason: 'already delivered' });
    else if (!allowed.includes(row.status)) {
      skipped.push({
        id,
        reason: row.status === 'accepted_by_qstash' ? 'accepted by QStash (add --include-accepted)' : `status ${row.status} is not replayable`,
      });
    } else candidates.push(id);
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
    throw new ReplayStatusError(
      `only failed and held deliveries${includeAccepted ? ' and accepted_by_qstash ones' : ''} can be replayed (got status ${status})`,
    );
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
 * endpoints probe at once (issue 25) instead of after a cooldown that may outlast the replayed
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
  const claimed = await claimForReplay(db, batch, includeAccepted, trace);
  const keys = [...new Set(claimed.flatMap((c) => (c.endpointKey ? [c.endpointKey] : [])))];
  if (probe && keys.length > 0) await probe(keys).catch(() => undefined);
  const taken = new Set(claimed.map((c) => c.id));
  const results: ReplayResult[] = batch
    .filter((id) => !taken.has(id))
    .map((id) => ({ id, result: 'skipped' as const, reason: 'delivered or replayed since it was selected' }));
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
