/**
 * A1: the context an approval stores and shows: the queue's `approvalRedactor` (the context as
 * presented when there is none), as JSON, text Postgres cannot store replaced, and withheld with
 * a marker past a size cap — never the raw context when a redactor is set, never an unbounded row.
 */
import type { AgentContext, JsonValue } from '../contract/agentHooks.ts';
import { sanitizeStorableValue } from '../contract/storableText.ts';
import { toJsonValue } from '../intercept/json/toJsonValue.ts';

/** The display redaction: any JSON the approver should see of the call. */
export type ApprovalDisplayRedactor = (context: AgentContext) => unknown | Promise<unknown>;

/** Bytes of display context stored per approval. */
const MAX_DISPLAY_CONTEXT_BYTES = 65_536;

export async function displayContext(context: AgentContext, redactor: ApprovalDisplayRedactor | undefined): Promise<JsonValue> {
  const shown = redactor === undefined ? context : await redactor(structuredClone(context));
  let json: string;
  let value: JsonValue;
  try {
    value = toJsonValue(shown);
    json = JSON.stringify(value);
  } catch {
    return { withheld: 'the approval redactor returned a value without a JSON form' };
  }
  if (json === undefined) return null;
  if (Buffer.byteLength(json, 'utf8') > MAX_DISPLAY_CONTEXT_BYTES) {
    return { withheld: `context larger than ${MAX_DISPLAY_CONTEXT_BYTES} bytes`, interception_point: context.interception_point };
  }
  return sanitizeStorableValue(value);
}
