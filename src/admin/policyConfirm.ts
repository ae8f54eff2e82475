/**
 * After an operator's endpoint change is committed (disable, hold, enable): wait until every
 * live worker read the endpoints table again (isolation/policyAcks.ts), so "disabled" means no
 * worker admits another delivery to it. Redis not answering is reported, never waited on forever.
 */
import type { Settings } from '../config/settings.ts';
import { confirmPolicyApplied, type PolicyConfirmation } from '../isolation/policyAcks.ts';
import { deliveryQueueKeys } from '../queue/queueKeys.ts';
import type { OperatorQueue } from './operatorQueue.ts';

/** How long `endpoints disable` and the console wait for the workers unless told otherwise. */
export const DEFAULT_CONFIRM_TIMEOUT_MS = 10_000;

/** `undefined` when Redis did not answer (the change stands in Postgres; workers apply it within their refresh). */
export async function confirmEndpointChange(
  operator: OperatorQueue,
  settings: Pick<Settings, 'HOOKRELAY_QUEUE'>,
  timeoutMs: number = DEFAULT_CONFIRM_TIMEOUT_MS,
): Promise<PolicyConfirmation | undefined> {
  // The prefix the operator's queue was opened with (its resolved configuration), where the workers acknowledge.
  const keyPrefix = deliveryQueueKeys(operator.queuePrefix, settings.HOOKRELAY_QUEUE).base;
  let timer: NodeJS.Timeout | undefined;
  try {
    const redis = await operator.redis();
    return await Promise.race([
      confirmPolicyApplied(redis, keyPrefix, { timeoutMs }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs + 3_000);
      }),
    ]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
