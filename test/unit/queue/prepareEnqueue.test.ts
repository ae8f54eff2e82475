/**
 * PERF-38 (issue 38): the enqueue's prepare step checks each event in one pass over its
 * serialized bytes (D10 unstorable text, Q8 cap) and skips zod for the common event, with the
 * same verdicts and messages as the walk over the value it replaced.
 */
import { describe, expect, it } from 'vitest';
import { EventValidationError, PayloadTooLargeError } from '../../../src/contract/errors.ts';
import { assertStorableEvent } from '../../../src/contract/storableText.ts';
import { parseTemplateEnvPattern } from '../../../src/contract/templateSources.ts';
import { prepareItems, type EnqueueRules } from '../../../src/queue/prepareEnqueue.ts';
import type { EnqueueInput } from '../../../src/queue/types.ts';

const rules: EnqueueRules = { maxPayloadBytes: 262_144, templateEnv: parseTemplateEnvPattern('none'), orderingDefault: 'none', queue: 'test-queue' };
const hooks = [{ id: 'h', type: 'onComplete' as const, webhook: { url: 'https://hooks.example.com/x' } }];
const item = (event: Record<string, unknown>, extra: Partial<EnqueueInput> = {}): EnqueueInput => ({
  operationId: 'op-1',
  type: 'onComplete',
  event,
  hooks,
  ...extra,
});
const prepare = (event: Record<string, unknown>, extra: Partial<EnqueueInput> = {}, r = rules) => prepareItems([item(event, extra)], r);

/** What the walk over the value said (the check before issue 38), for the event as prepare stores it. */
function walkVerdict(event: Record<string, unknown>): string | undefined {
  try {
    assertStorableEvent({ ...event, operationId: 'op-1' }, 'enqueue');
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

describe('PERF-38 prepare: one pass over the serialized event', () => {
  it('PERF-38 D10: NUL and lone surrogates in values and keys are refused with the path the walk named', () => {
    const bad: Record<string, unknown>[] = [
      { note: 'a\u0000b' },
      { metadata: { notes: ['ok', 'fine', 'x\u0000'] } },
      { ['k\u0000']: 1 },
      { deep: { list: [{ s: '\ud800' }] } },
      { low: 'x\udc00y' },
      { both: ['\ud83d\ude00', 'tail\ud83d'] },
    ];
    for (const event of bad) {
      const expected = walkVerdict(event);
      expect(expected).toBeDefined();
      expect(() => prepare(event)).toThrow(EventValidationError);
      expect(() => prepare(event)).toThrow(expected as string);
    }
  });

  it('PERF-38 D10: text that only looks like an escape, control characters and paired surrogates are stored as given', () => {
    const fine: Record<string, unknown>[] = [
      { literal: '\\u0000 and \\ud800 written out' },
      { backslashes: '\\\\u0000' },
      { control: '\u0001\u001f\b\t\n' },
      { emoji: '\ud83d\ude00 ünïcödé 中文' },
      { big: 9007199254740993n.toString(), n: 1.5e300 },
    ];
    for (const event of fine) {
      expect(walkVerdict(event)).toBeUndefined();
      const [prepared] = prepare(event);
      const row = prepared?.rows[0];
      // The payload the INSERT stores is the event's own JSON, serialized once.
      expect(row?.payloadJson).toBe(JSON.stringify({ ...event, operationId: 'op-1' }));
      expect(JSON.parse(row?.payloadJson ?? 'null')).toEqual({ ...event, operationId: 'op-1' });
    }
  });

  it('PERF-38 Q8: the cap is counted in UTF-8 bytes of that same JSON', () => {
    const event = { text: 'é'.repeat(100) };
    const bytes = Buffer.byteLength(JSON.stringify({ ...event, operationId: 'op-1' }), 'utf8');
    expect(() => prepare(event, {}, { ...rules, maxPayloadBytes: bytes })).not.toThrow();
    const error = (() => {
      try {
        prepare(event, {}, { ...rules, maxPayloadBytes: bytes - 1 });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as PayloadTooLargeError).sizeBytes).toBe(bytes);
  });

  it('PERF-38 D10: an event both unstorable and too deep (or cyclic) reports the unstorable text first, as before', () => {
    const cyclic: Record<string, unknown> = { s: 'x\u0000' };
    cyclic.self = cyclic;
    expect(() => prepare(cyclic)).toThrow(walkVerdict({ s: 'x\u0000' }) as string);
    const plainCycle: Record<string, unknown> = { s: 'ok' };
    plainCycle.self = plainCycle;
    expect(() => prepare(plainCycle)).toThrow(/cycle/);
  });

  it('PERF-38 D10: stepIndex / callIndex pass without zod only when zod would pass them; zod words every refusal', () => {
    for (const ok of [{}, { stepIndex: 0 }, { stepIndex: 7, callIndex: 0 }, { stepIndex: undefined }]) expect(() => prepare(ok)).not.toThrow();
    for (const bad of [{ stepIndex: -1 }, { stepIndex: 1.5 }, { callIndex: '1' }, { stepIndex: 2 ** 60 }, { callIndex: Number.NaN }, { stepIndex: null }]) {
      expect(() => prepare(bad)).toThrow(/^enqueue: invalid event \((stepIndex|callIndex): /);
    }
  });

  it('PERF-38: operationId and idempotencyKey are checked as before; the hooks of a call are validated once and shared by its rows', () => {
    expect(() => prepare({}, { operationId: 'op\u0000' })).toThrow('enqueue: operationId: contains a NUL');
    expect(() => prepare({}, { idempotencyKey: 'k\ud800' })).toThrow('enqueue: idempotencyKey: contains a unpaired UTF-16 surrogate');
    const prepared = prepareItems([item({ a: 1 }), item({ a: 2 }, { operationId: 'op-2' })], rules);
    const [first, second] = prepared.map((p) => p.rows[0]);
    expect(first?.hook).toBe(second?.hook);
    expect(first?.hookJson).toBe(JSON.stringify(first?.hook));
    expect(first?.id).not.toBe(second?.id);
  });
});
