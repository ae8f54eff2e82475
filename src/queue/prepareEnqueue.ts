/**
 * Enqueue step 1, prepare: every item of a call validated and turned into its ledger rows (one per
 * matching webhook, hook order) before anything is stored (D4b, Q8). The event is serialized once:
 * the unstorable-text check (D10) and the payload cap (Q8) read those bytes, and the INSERT stores
 * them as they are. Job bodies are not built here (see enqueueBodies.ts: they are built while
 * Postgres stores the rows).
 */
import { assertPrintableId } from '../contract/terminalText.ts';
import { EventValidationError } from '../contract/errors.ts';
import { IngestEventSchema, serializeEventJson } from '../contract/events.ts';
import { endpointKey } from '../contract/endpoint.ts';
import { parseTenant } from '../contract/tenant.ts';
import { isControlHook, type ParsedSerializedHook } from '../contract/hook.ts';
import { isDeliveryEventType } from '../contract/hookTypes.ts';
import { matchesHook } from '../contract/matcher.ts';
import { assertStorableEvent, isStorableText } from '../contract/storableText.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import { assertTemplateSources, parseSerializedHooks } from '../contract/validate.ts';
import { newDeliveryId, type NewDelivery } from '../store/deliveriesRepo.ts';
import { assertPayloadWithinCap } from './payloadCap.ts';
import type { DeliveryJobAttempt, EnqueueInput } from './types.ts';
import { isObject } from '../util/isObject.ts';

/** What a producer checks every item against (resolved once, when it is created). */
export type EnqueueRules = {
  maxPayloadBytes: number;
  templateEnv: TemplateEnvPattern;
  /** The default for fetch webhooks whose config names no `ordering`. */
  orderingDefault: 'operation' | 'none';
  /** The producer's queue: each row carries it, so only that queue's reconciler and replays send it. */
  queue: string;
};

/** A ledger row and what its job carries, so the worker's first attempt reads nothing back. */
export type PreparedRow = NewDelivery & {
  hook: ParsedSerializedHook;
  payload: Record<string, unknown>;
  /** The event's JSON, serialized once (stored as the row's payload). */
  payloadJson: string;
  /** The hook's JSON, once per hook (stored as the row's hook and carried by the job). */
  hookJson: string;
  /** Numbered at commit (SEC-H7) (its body, which carries the number, is built then). */
  ordered: boolean;
  endpointKey: string;
  /** Built by writeJobBodies / numberOrderedRows; absent, the job carries the id only and the worker builds the body from the row. */
  job?: DeliveryJobAttempt;
};
export type PreparedItem = { rows: PreparedRow[]; idempotencyKey: string | undefined };

/** What every row of one hook shares, worked out once per hook per call. */
type PreparedHook = { hook: ParsedSerializedHook; json: string; endpointKey: string; ordered: boolean };

/**
 * Validates the items and builds their rows. Items of one call often share one hooks array: it is
 * validated once (nothing can change it during this synchronous pass).
 */
export function prepareItems(items: readonly EnqueueInput[], rules: EnqueueRules): PreparedItem[] {
  const hooksSeen = new Map<unknown, PreparedHook[]>();
  return items.map((item) => prepareItem(item, rules, hooksSeen));
}

function prepareItem(input: EnqueueInput, rules: EnqueueRules, hooksSeen: Map<unknown, PreparedHook[]>): PreparedItem {
  if (typeof input.operationId !== 'string' || input.operationId === '') throw new TypeError('enqueue: operationId must be a non-empty string');
  if (!isDeliveryEventType(input.type)) throw new TypeError(`enqueue: unknown hook type ${JSON.stringify(input.type)}`);
  if (input.idempotencyKey !== undefined && (typeof input.idempotencyKey !== 'string' || input.idempotencyKey === '')) {
    throw new TypeError('enqueue: idempotencyKey must be a non-empty string when given');
  }
  // Text Postgres cannot store is refused here, so it never reaches (and fails) a shared INSERT.
  if (!isStorableText(input.operationId)) assertStorableEvent(input.operationId, 'enqueue', 'operationId');
  assertPrintableId(input.operationId, 'enqueue', 'operationId');
  if (input.idempotencyKey !== undefined && !isStorableText(input.idempotencyKey)) assertStorableEvent(input.idempotencyKey, 'enqueue', 'idempotencyKey');
  const tenant = parseTenant(input.tenant, 'enqueue: tenant');
  const event = normalizeEvent(input);
  const payloadJson = serializeCheckedEvent(event, rules.maxPayloadBytes);
  const occurredAt = parseOccurredAt(input.occurredAt);
  let hooks = hooksSeen.get(input.hooks);
  if (hooks === undefined) {
    hooks = prepareHooks(input.hooks, rules);
    hooksSeen.set(input.hooks, hooks);
  }
  const rows: PreparedRow[] = [];
  for (const h of hooks) {
    if (h.hook.type !== input.type || !matchesHook(h.hook, event)) continue;
    rows.push({
      id: newDeliveryId(),
      ordered: h.ordered,
      operationId: input.operationId,
      tenant,
      queue: rules.queue,
      eventType: input.type,
      hookId: h.hook.id,
      hook: h.hook,
      hookJson: h.json,
      transport: h.hook.webhook.delivery,
      payload: event,
      payloadJson,
      idempotencyKey: input.idempotencyKey ?? null,
      endpointKey: h.endpointKey,
      occurredAt,
    });
  }
  return { rows, idempotencyKey: input.idempotencyKey };
}

/** A call's hooks: validated (D4b, W2), controls left out, each with what its rows share. */
function prepareHooks(raw: EnqueueInput['hooks'], rules: EnqueueRules): PreparedHook[] {
  // E4: a reserved id only on the environment hooks queue-mode dispatch marked itself; a caller's is refused.
  const hooks = parseSerializedHooks(raw as readonly unknown[], { allowMarkedEnvironmentHooks: true });
  assertTemplateSources(hooks, rules.templateEnv, { allowMarkedEnvironmentHooks: true }); // W2: refused before anything is stored
  return hooks
    .filter((hook) => !isControlHook(hook))
    .map((hook) => ({ hook, json: hookJson(hook), endpointKey: endpointKey(hook.webhook), ordered: isOrdered(hook, rules.orderingDefault) }));
}

/**
 * D10/Q8 in one pass over the serialized bytes: the event's JSON, refused when it carries text
 * Postgres cannot store (JSON.stringify writes NUL and lone surrogates as `\u` escapes, so JSON
 * without one has none) or when it is over the cap. The error names the path, as the walk over
 * the value always did; a value too deep or not serializable reports its unstorable text first.
 */
function serializeCheckedEvent(event: Record<string, unknown>, maxPayloadBytes: number): string {
  let json: string;
  try {
    // D10: too deep (or cyclic) is a typed error, never a raw RangeError from JSON.stringify.
    json = serializeEventJson(event, 'enqueue: event');
  } catch (error) {
    assertStorableEvent(event, 'enqueue');
    throw error;
  }
  // Rare: some escape is in the text; the parsed bytes say which string (the path) is bad, if any.
  if (json.includes('\\u')) assertStorableEvent(JSON.parse(json), 'enqueue');
  assertPayloadWithinCap(json, maxPayloadBytes);
  return json;
}

/**
 * The hook's own `ordering`, else the producer's default — for fetch webhooks only
 * (QStash sends on its own schedule; the schema refuses `ordering: 'operation'` with it).
 */
function isOrdered(hook: ParsedSerializedHook, orderingDefault: 'operation' | 'none'): boolean {
  const own = hook.webhook.ordering;
  if (own !== undefined) return own === 'operation';
  return orderingDefault === 'operation' && hook.webhook.delivery === 'fetch';
}

/** A parsed hook's JSON, once per parsed object (hookrelay's own, never mutated). */
const hookJsonCache = new WeakMap<ParsedSerializedHook, string>();
function hookJson(hook: ParsedSerializedHook): string {
  let json = hookJsonCache.get(hook);
  if (json === undefined) {
    json = JSON.stringify(hook);
    hookJsonCache.set(hook, json);
  }
  return json;
}

/** What IngestEventSchema accepts for `stepIndex` / `callIndex`, checked without zod (anything else goes to zod for its message). */
function isIndex(value: unknown): boolean {
  return value === undefined || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0);
}

/** D10: any object with a string operationId (taken from the input when the event has none). */
function normalizeEvent(input: EnqueueInput): Record<string, unknown> {
  const raw: unknown = input.event;
  if (!isObject(raw)) throw new EventValidationError('enqueue: event must be an object');
  const given = (raw as Record<string, unknown>).operationId;
  // D10: the event is stored under input.operationId; an event naming another operation
  // would tell the receiver the other id. A caller bug, refused, never guessed between.
  if (given !== undefined && given !== input.operationId) {
    const shown = typeof given === 'string' ? JSON.stringify(given.slice(0, 200)) : `(a ${given === null ? 'null' : typeof given})`;
    throw new EventValidationError(
      `enqueue: event.operationId ${shown} does not match operationId ${JSON.stringify(input.operationId.slice(0, 200))}: leave it out or give the same id`,
    );
  }
  const event = given === undefined ? { ...(raw as Record<string, unknown>), operationId: input.operationId } : (raw as Record<string, unknown>);
  // The common event (string operationId, indexes absent or integers ≥ 0) passes without zod.
  if (isIndex(event.stepIndex) && isIndex(event.callIndex)) return event;
  const checked = IngestEventSchema.safeParse(event);
  if (!checked.success) {
    const fields = checked.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new EventValidationError(`enqueue: invalid event (${fields})`);
  }
  return event;
}

/** D10: the dates a payload's ISO `occurredAt` and a Postgres timestamptz both hold (years 1-9999). */
const EARLIEST_OCCURRED_AT_MS = new Date('0001-01-01T00:00:00.000Z').getTime();
const LATEST_OCCURRED_AT_MS = new Date('9999-12-31T23:59:59.999Z').getTime();

function parseOccurredAt(value: Date | string | undefined): Date {
  if (value === undefined) return new Date();
  const date = value instanceof Date ? value : new Date(value);
  const ms = date.getTime();
  // Out of range failed later as a StorageError from the INSERT, naming nothing.
  if (Number.isNaN(ms) || ms < EARLIEST_OCCURRED_AT_MS || ms > LATEST_OCCURRED_AT_MS)
    throw new EventValidationError('enqueue: occurredAt must be a valid date between 0001-01-01 and 9999-12-31 (a Date or an ISO 8601 string)');
  return date;
}
