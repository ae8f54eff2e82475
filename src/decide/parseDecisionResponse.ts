import type { ToolCallDecision } from '../contract/decision.ts';
import { sanitizeStorableText } from '../contract/storableText.ts';
import { hasDuplicateJsonKey } from './duplicateJsonKeys.ts';
import { isObject } from '../util/isObject.ts';

/** R5: a decision body over this many bytes (whitespace included) is `response_too_large`. */
export const MAX_DECISION_RESPONSE_BYTES = 65_536;

export type ToolCallHookResponse =
  | { status: 'ignored' }
  | { status: 'success'; decision: ToolCallDecision }
  | { status: 'error'; code: 'invalid_response' | 'response_too_large' };

const IGNORED: ToolCallHookResponse = Object.freeze({ status: 'ignored' } as const);
const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/**
 * R5-order after the status check: size → fatal UTF-8 decode → JSON parse (fails: a
 * notification) → top-level `decision` (absent: a notification) → value check, where a body
 * that repeats any key (ambiguous JSON) is `invalid_response` like an invalid value. Pure.
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
  if (!isObject(json) || !Object.hasOwn(json, 'decision')) return IGNORED;
  // Ambiguous JSON (a key given twice, at any depth): parsers disagree on which value counts.
  if (hasDuplicateJsonKey(text)) return INVALID;
  return checkDecision(json as Record<string, unknown>);
}

const ALLOW: ToolCallHookResponse = Object.freeze({ status: 'success', decision: Object.freeze({ decision: 'allow' }) } as const);
const INVALID: ToolCallHookResponse = Object.freeze({ status: 'error', code: 'invalid_response' } as const);

/**
 * The value step (R5-order, R6), equivalent to `ToolCallDecisionSchema` but without zod on the
 * hot path: `{decision:'allow'}` (any other key ignored, `reason` whatever its type) or
 * `{decision:'deny'}` with an optional string `reason` (present and not a string, `null`
 * included → invalid). Only `decision` and a deny's `reason` are kept.
 */
function checkDecision(json: Record<string, unknown>): ToolCallHookResponse {
  const { decision } = json;
  if (decision === 'allow') return ALLOW;
  if (decision !== 'deny') return INVALID;
  if (!Object.hasOwn(json, 'reason') || json.reason === undefined) return { status: 'success', decision: { decision: 'deny' } };
  return typeof json.reason === 'string' ? { status: 'success', decision: { decision: 'deny', reason: sanitizeStorableText(json.reason) } } : INVALID;
}
