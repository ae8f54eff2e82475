/**
 * After an operator's endpoint change is committed (disable, hold, enable): wait until every
 * live worker read the endpoints table again (isolation/policyAcks.ts), so "disabled" means no
 * worker admits another delivery to it. Redis not answering is reported, never waited on forever.
 */
import { confirmPolicyApplied, type PolicyConfirmation } from '../isolation/policyAcks.ts';
import type { OperatorQueue } from './operatorQueue.ts';

/** How long `endpoints disable` and the console wait for the workers unless told otherwise. */
export const DEFAULT_CONFIRM_TIMEOUT_MS = 10_000;

/** `undefined` when Redis did not answer (the change stands in Postgres; workers apply it within their refresh). */
export async function confirmEndpointChange(operator: OperatorQueue, timeoutMs: number = DEFAULT_CONFIRM_TIMEOUT_MS): Promise<PolicyConfirmation | undefined> {
  // The operator's queue's endpoint prefix (its resolved configuration), where the workers acknowledge.
  const keyPrefix = operator.keys.endpointPrefix;
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
