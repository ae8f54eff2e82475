import { CriticalHookDeliveryError, type CriticalFailure, type DispatchReport, type NotAcceptedDelivery } from '../contract/errors.ts';
import { assertStorableEvent } from '../contract/storableText.ts';
import type { Db } from '../store/db.ts';
import { finishOperation, getOperation, loadOperationHooks } from '../store/operationsRepo.ts';
import { withReadableError } from '../util/errorMessage.ts';
import { withDefined } from '../util/withDefined.ts';
import type { CompleteOperationInput } from './operationStoreTypes.ts';

/** Completion reasons that map to a stored status other than `completed`. */
const STATUS_BY_REASON: Record<string, string> = { error: 'error', interrupted: 'interrupted', parked: 'parked' };

/** What the terminal dispatches left behind: critical failures, other errors, deliveries not accepted. */
type TerminalOutcomes = { failures: CriticalFailure[]; others: unknown[]; notAccepted: NotAcceptedDelivery[] };

/** One terminal dispatch; its errors are collected (not thrown) so the next dispatch and unregister still run. */
async function dispatchCollecting(
  input: CompleteOperationInput,
  hooks: unknown[] | undefined,
  collected: TerminalOutcomes,
  type: 'onComplete' | 'onError',
  event: Record<string, unknown>,
): Promise<void> {
  try {
    const report = await input.dispatcher.dispatch(input.operationId, type, event, hooks);
    if (report) collected.notAccepted.push(...report.notAccepted);
  } catch (error) {
    if (error instanceof CriticalHookDeliveryError) {
      collected.failures.push(...error.failures);
      collected.others.push(...error.otherErrors);
    } else collected.others.push(error);
  }
}

/** D6: critical stays critical; the other errors of both dispatches travel with it. */
function throwCollected(collected: TerminalOutcomes): void {
  if (collected.failures.length > 0) throw new CriticalHookDeliveryError(collected.failures, collected.others);
  if (collected.others.length > 0) throw collected.others[0];
}

/**
 * D2 terminal lifecycle: persist first, then `onComplete` (and `onError` only for reason
 * `error`); a CriticalHookDeliveryError is rethrown so a queue step is retried; then
 * unregister with the reason (an emitter's agent_shutdown maps it: `done` → `completed`,
 * `error` → `error`, `interrupted` / `max_steps` / `cost_limit` → `cancelled`) — except for
 * `parked` (waiting on an async tool): no hooks, no unregister, the session stays open.
 */
export async function completeOperation(db: () => Promise<Db>, input: CompleteOperationInput): Promise<DispatchReport> {
  assertStorableEvent({ operationId: input.operationId, event: input.event }, 'completeOperation', '');
  const d = await db();
  await finishOperation(d, input.operationId, STATUS_BY_REASON[input.reason] ?? 'completed', input.reason);
  if (input.reason === 'parked') return { notAccepted: [] };
  const record = await getOperation(d, input.operationId);
  // D9a: nothing stored → undefined, so the in-memory onComplete / onError hooks run (queue mode too).
  const hooks = await loadOperationHooks(d, input.operationId);
  const base = { ...(record?.userId ? { userId: record.userId } : {}), ...input.event, operationId: input.operationId };
  const collected: TerminalOutcomes = { failures: [], others: [], notAccepted: [] };
  // The run's error (any shape) becomes a readable errorMessage + raw errorDetail (errorMessage.ts).
  const failed = { ...base, ...withDefined({ error: input.error }) };
  const hasError = input.error !== undefined || ['error', 'errorMessage', 'errorDetail'].some((k) => base[k as keyof typeof base] !== undefined);
  try {
    await dispatchCollecting(input, hooks, collected, 'onComplete', {
      ...(input.reason === 'error' && hasError ? withReadableError(failed) : base),
      reason: input.reason,
    });
    if (input.reason === 'error') await dispatchCollecting(input, hooks, collected, 'onError', withReadableError(failed));
  } finally {
    input.dispatcher.unregister(input.operationId, { reason: input.reason }); // agent_shutdown says how it ended
  }
  throwCollected(collected);
  return { notAccepted: collected.notAccepted };
}
