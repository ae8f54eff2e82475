/**
 * Step 1 of a delivery (processor.ts), `readTarget`: what one attempt is about. The hot path
 * takes it from the job the producer added (hook, payload bytes and counters travel in it:
 * nothing re-serialized), once the ledger says the row may still be attempted in that generation
 * (F3: one batched read of its status, no payload — a job added late, after its row was
 * delivered by the reconciler's job, is acknowledged without a request); a job without them
 * (re-added by the reconciler or a replay), of an older generation, or re-run after a stall reads
 * its ledger row, and gets no target when the row is already delivered, failed or accepted
 * (never sent again).
 */
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import { endpointKey, scopedEndpointKey } from '../../contract/endpoint.ts';
import { DEFAULT_TENANT } from '../../contract/tenant.ts';
import type { ParsedSerializedHook } from '../../contract/hook.ts';
import { timeoutMs } from '../../contract/webhook.ts';
import { buildDeliveryBody } from '../../notify/deliveryBody.ts';
import type { DeliveryJobAttempt, DeliveryJobData } from '../../queue/types.ts';
import type { ClaimedDelivery } from '../../store/deliveriesRepo.ts';
import type { HookCache } from './hookCache.ts';
import type { LedgerWriter } from './ledgerWriter.ts';
import type { PostgresWait } from '../postgresWait.ts';
import type { OrderedTarget } from './ordering.ts';
import { isObject } from '../../util/isObject.ts';

/** One attempt's subject, from the job (hot path) or from the ledger row. */
export type AttemptTarget = {
  id: string;
  operationId: string;
  hookId: string;
  /** undefined when the stored hook no longer validates (a permanent configuration failure). */
  hook: ParsedSerializedHook | undefined;
  /** Why `hook` is undefined (field paths and rules, never values). */
  hookProblem: string | undefined;
  /** The payload JSON, sent byte for byte as enqueued; undefined when the row's payload is gone (pruned by retention). */
  body: string | undefined;
  emailUserId: string | undefined;
  attemptCount: number;
  generationAttemptCount: number;
  generation: number;
  /** The enqueueing (or replaying) span's W3C trace context, stored with the delivery. */
  trace: string | undefined;
  /** Q3: this generation's deadline (ms), once its clock started. */
  deadlineAtMs: number | undefined;
  /** Its sequence among the ordered deliveries of its operation and hook (SEC-H7); undefined when unordered. */
  sequence: number | undefined;
  /** N1: whose endpoint state (N2) its attempts use. */
  tenant: string;
};

export type TargetSource = { ledger: LedgerWriter; gate: PostgresWait; hooks: HookCache };

/** The job's target, or undefined when its row says it is finished (or unknown). */
export async function readTarget(source: TargetSource, job: Job<DeliveryJobData>): Promise<AttemptTarget | undefined> {
  const data = job.data;
  const deliveryId = data?.deliveryId ?? job.id;
  if (typeof deliveryId !== 'string') throw new UnrecoverableError('delivery job without a delivery id');
  // A stalled re-run may have delivered already (its outcome written, the ack lost): ask the ledger.
  const fromJob = data?.attempt !== undefined && typeof data.generation === 'number' && !(job.stalledCounter > 0);
  // F3: the job's data is trusted only while its row may still be attempted in the job's generation.
  const current = fromJob ? await source.gate.run(() => source.ledger.claimableGeneration(deliveryId)) : undefined;
  if (fromJob && current === undefined) return undefined;
  const target =
    fromJob && current === data.generation
      ? targetFromJob(deliveryId, data.generation, data.attempt as DeliveryJobAttempt, source.hooks)
      : await targetFromLedger(source, deliveryId);
  if (target && typeof data?.deadlineAt === 'number' && data.generation === target.generation) target.deadlineAtMs ??= data.deadlineAt;
  return target;
}

function targetFromJob(id: string, generation: number, data: DeliveryJobAttempt, hooks: HookCache): AttemptTarget {
  const hook = hooks.parse(data.hook);
  return {
    id,
    operationId: data.operationId,
    hookId: hook?.id ?? '(invalid)',
    hook,
    hookProblem: hook === undefined ? hooks.problem(data.hook) : undefined,
    body: data.body,
    emailUserId: data.emailUserId,
    attemptCount: data.attemptCount,
    generationAttemptCount: data.generationAttemptCount,
    generation,
    trace: data.trace,
    deadlineAtMs: undefined,
    sequence: data.sequence,
    tenant: data.tenant ?? DEFAULT_TENANT,
  };
}

async function targetFromLedger(source: TargetSource, id: string): Promise<AttemptTarget | undefined> {
  const row = await source.gate.run(() => source.ledger.load(id));
  if (!row) return undefined;
  return targetFromRow(row, source.hooks);
}

function targetFromRow(row: ClaimedDelivery, hooks: HookCache): AttemptTarget {
  const hook = hooks.parseValue(row.hook);
  const event = isObject(row.payload) ? row.payload : undefined;
  const built = hook && event ? buildDeliveryBody({ hook, event, deliveryId: row.id, occurredAt: row.occurredAt, sequence: row.sequence }) : undefined;
  return {
    id: row.id,
    operationId: row.operationId,
    hookId: row.hookId,
    hook,
    hookProblem: hook === undefined ? hooks.problem(row.hook) : undefined,
    body: built?.body,
    emailUserId: built?.emailUserId,
    attemptCount: row.attemptCount,
    generationAttemptCount: row.generationAttemptCount,
    generation: row.generation,
    trace: row.traceContext ?? undefined,
    deadlineAtMs: row.deadlineAt?.getTime(),
    sequence: row.sequence ?? undefined,
    tenant: row.tenant,
  };
}

/** What the turn keeper needs of an ordered target. */
export function orderedTarget(target: AttemptTarget, hook: ParsedSerializedHook, sequence: number): OrderedTarget {
  return {
    id: target.id,
    generation: target.generation,
    tenant: target.tenant,
    operationId: target.operationId,
    hookId: hook.id,
    sequence,
    onFailure: hook.webhook.onFailure ?? 'continue',
    deadlineAtMs: target.deadlineAtMs,
  };
}

/** A parsed hook's endpoint key, once per parsed object (the hook cache shares them across jobs). */
const endpointKeys = new WeakMap<ParsedSerializedHook, string>();
function endpointOf(hook: ParsedSerializedHook): string {
  let key = endpointKeys.get(hook);
  if (key === undefined) {
    key = endpointKey(hook.webhook);
    endpointKeys.set(hook, key);
  }
  return key;
}

/** N2: the key of the target's tenant's state for its hook's endpoint. */
export function stateKeyOf(target: AttemptTarget, hook: ParsedSerializedHook): string {
  return scopedEndpointKey(target.tenant, endpointOf(hook));
}

export function hookTimeoutMs(hook: ParsedSerializedHook | undefined): number {
  return hook ? timeoutMs(hook.webhook) : 0;
}
