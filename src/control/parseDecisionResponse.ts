import { ToolCallDecisionSchema, type ToolCallDecision } from '../contract/decision.ts';

/** R5: a decision body over this many bytes (whitespace included) is `response_too_large`. */
export const MAX_DECISION_RESPONSE_BYTES = 65_536;

export type ToolCallHookResponse =
  | { status: 'ignored' }
  | { status: 'success'; decision: ToolCallDecision }
  | { status: 'error'; code: 'invalid_response' | 'response_too_large' };

const IGNORED: ToolCallHookResponse = { status: 'ignored' };
const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/**
 * R5-order after the status check: size → fatal UTF-8 decode → JSON parse (fails: a
 * notification) → top-level `decision` (absent: a notification) → value check. Pure.
 */
export function parseToolCallHookResponse(body: Uint8Array | string): ToolCallHookResponse {
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  if (bytes.byteLength > MAX_DECISION_RESPONSE_BYTES) return { status: 'error', code: 'response_too_large' };
  let text: string;
  try {
    text = fatalUtf8.decode(bytes);
  } catch {
    return { status: 'error', code: 'invalid_response' };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return IGNORED; // R4: invalid JSON (an empty body included) is a notification
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json) || !Object.hasOwn(json, 'decision')) return IGNORED;
  const parsed = ToolCallDecisionSchema.safeParse(json);
  if (!parsed.success) return { status: 'error', code: 'invalid_response' };
  return { status: 'success', decision: parsed.data };
}
