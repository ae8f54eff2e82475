/**
 * A2: what an approval is bound to. The emitter's `jcs-sha256` identity names one emission: it
 * hashes the context's `timestamp` and `sequence`, and a run resumed after a restart presents the
 * same call again under new ones (and a new session). An approval is bound to the call instead:
 * the same JCS-SHA256 over the same projection (interception point, agent, tool call id, name and
 * arguments — every member the identity covers), with the emission stamps fixed and the session
 * named by the operation. Changed arguments, another call id, another point, agent or operation
 * all give another identity; the same call presented again gives the same one.
 */
import type { AgentContext } from '../contract/agentHooks.ts';
import { jcsSha256Identity } from '../intercept/identity.ts';

/** The stamps every approval identity is computed with (the emission's own are not reproducible). */
const FIXED_TIMESTAMP = '1970-01-01T00:00:00Z';
const FIXED_SEQUENCE = 0;

/** A run adapter's session `<operationId>/<uuid>` (one per run of the operation). */
const RUN_SESSION_SUFFIX = /\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The operation a session belongs to: the run adapter and the integrations mint `<operationId>/<uuid>`
 * per run; the dispatcher's tool seam uses the operation id itself (I4).
 */
export function operationOfSession(sessionId: string): string {
  return sessionId.replace(RUN_SESSION_SUFFIX, '') || sessionId;
}

/** `sha256:<hex>` over the call as presented, emission stamps fixed, session = the operation. */
export function approvalIdentity(context: AgentContext, operationId: string): string {
  return jcsSha256Identity({
    ...context,
    timestamp: FIXED_TIMESTAMP,
    sequence: FIXED_SEQUENCE,
    session: { id: operationId },
  });
}
