/**
 * DOOR-1 (F1): the spool's lines — a call's rows round-trip with the same ids; a crash in the
 * middle of a write (a last line without its newline) is skipped, not stored; a line whose
 * checksum does not match is reported, never stored; counts need no parse.
 */
import { describe, expect, it } from 'vitest';
import type { PreparedRow } from '../../../src/queue/prepareEnqueue.ts';
import { countSpoolLines, decodeSpoolSegment, encodeSpoolRecord } from '../../../src/queue/spoolFormat.ts';

function row(id: string, extra: Partial<PreparedRow> = {}): PreparedRow {
  const hook = { id: 'audit', type: 'onComplete', webhook: { url: 'https://hooks.example.com/a', headers: { authorization: 'Bearer ${HOOK_TOKEN}' } } };
  const payload = { operationId: 'op-1', note: 'ünïcode ✓' };
  return {
    id,
    operationId: 'op-1',
    eventType: 'onComplete',
    hookId: 'audit',
    hook: hook as never,
    hookJson: JSON.stringify(hook),
    transport: 'fetch',
    payload,
    payloadJson: JSON.stringify(payload),
    idempotencyKey: null,
    endpointKey: 'https://hooks.example.com',
    occurredAt: new Date('2026-01-02T03:04:05.678Z'),
    ordered: false,
    ...extra,
  };
}

describe('DOOR-1 (F1): spool segment lines', () => {
  it('DOOR-1 (F1): a call round-trips with the same ids, the hook and event JSON as enqueued, templates unresolved', () => {
    const bytes = Buffer.concat([encodeSpoolRecord([row('dlv_A'), row('dlv_B', { ordered: true })]), encodeSpoolRecord([row('dlv_C')])]);
    const decoded = decodeSpoolSegment(bytes);
    expect(decoded.tornTail).toBe(false);
    expect(decoded.corrupt).toEqual([]);
    expect(decoded.records.map((r) => r.map((x) => [x.id, x.ordered]))).toEqual([
      [
        ['dlv_A', false],
        ['dlv_B', true],
      ],
      [['dlv_C', false]],
    ]);
    const first = decoded.records[0]![0]!;
    expect(first.occurredAt).toEqual(new Date('2026-01-02T03:04:05.678Z'));
    expect(first.payload).toEqual({ operationId: 'op-1', note: 'ünïcode ✓' });
    expect(JSON.stringify(first.hook)).toContain('${HOOK_TOKEN}');
    expect(countSpoolLines(bytes)).toBe(2);
  });

  it('DOOR-1 (F1): a last line cut by a crash mid-write is skipped (its call never returned); the calls before it stand', () => {
    const whole = encodeSpoolRecord([row('dlv_A')]);
    const cut = encodeSpoolRecord([row('dlv_B')]).subarray(0, 40);
    const decoded = decodeSpoolSegment(Buffer.concat([whole, cut]));
    expect(decoded.tornTail).toBe(true);
    expect(decoded.records.flat().map((r) => r.id)).toEqual(['dlv_A']);
    expect(countSpoolLines(Buffer.concat([whole, cut]))).toBe(1);
  });

  it('DOOR-1 (F1): a line whose checksum does not match is reported with its number and never stored; the lines around it are', () => {
    const bad = Buffer.from(encodeSpoolRecord([row('dlv_B')]));
    bad[bad.length - 5] = bad[bad.length - 5]! ^ 0x01; // one bit flipped inside the JSON
    const decoded = decodeSpoolSegment(Buffer.concat([encodeSpoolRecord([row('dlv_A')]), bad, encodeSpoolRecord([row('dlv_C')])]));
    expect(decoded.records.flat().map((r) => r.id)).toEqual(['dlv_A', 'dlv_C']);
    expect(decoded.corrupt.map((c) => c.line)).toEqual([2]);
  });
});
