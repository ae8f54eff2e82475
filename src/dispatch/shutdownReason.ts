import type { z } from 'zod';
import type { SummarySchema } from '../contract/agentHooks.ts';

/** AGENT-HOOKS-0.1 `agent_shutdown.summary.reason`: `completed`, `error` or `cancelled`. */
export type ShutdownReason = z.infer<typeof SummarySchema>['reason'];

/**
 * How an operation's completion reason (`completeOperation`, `onComplete.reason`) reads at
 * `agent_shutdown`: `done` is the only success; a run the host or a user stopped before the agent
 * finished (`interrupted`, `max_steps`, `cost_limit`) is `cancelled`; `error` and any
 * reason hookrelay does not know are `error`, so an unknown ending is never reported as a success.
 */
const SHUTDOWN_BY_COMPLETION: Readonly<Record<string, ShutdownReason>> = {
  done: 'completed',
  error: 'error',
  interrupted: 'cancelled',
  max_steps: 'cancelled',
  cost_limit: 'cancelled',
};

export function shutdownReasonFor(completionReason: string): ShutdownReason {
  return Object.hasOwn(SHUTDOWN_BY_COMPLETION, completionReason) ? SHUTDOWN_BY_COMPLETION[completionReason]! : 'error';
}
