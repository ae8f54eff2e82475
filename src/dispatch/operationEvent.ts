import { OperationIdMismatchError } from '../contract/errors.ts';
import { isObject } from '../util/isObject.ts';

/**
 * The tool-call methods take the operation id from their first argument when the event (or tool
 * context) lacks one, as LobeHub's dispatcher does; an event naming a different operation is an
 * `OperationIdMismatchError`. Returns a copy: the caller's object is never mutated.
 * `allowOther`: another operation's tool call may be reviewed by this operation's hooks
 * (`evaluateAfterToolCall` in the rounds of a deferred result, P4/L3).
 */
export function withOperationId<T extends object>(operationId: string, event: T, opts: { allowOther?: boolean } = {}): T & { operationId: string } {
  if (typeof operationId !== 'string' || operationId === '') throw new TypeError('operationId must be a non-empty string');
  if (!isObject(event)) throw new TypeError('event must be an object');
  const given = (event as { operationId?: unknown }).operationId;
  if (given === undefined) return { ...event, operationId };
  if (given !== operationId && !(opts.allowOther === true && typeof given === 'string' && given !== '')) throw new OperationIdMismatchError(operationId, given);
  return event as T & { operationId: string };
}
