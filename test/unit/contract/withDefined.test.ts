import { describe, expect, expectTypeOf, it } from 'vitest';
import { withDefined } from '../../../src/util/withDefined.ts';

describe('ARCH-spreads: withDefined drops the undefined members, as ...(x !== undefined ? { x } : {}) did', () => {
  it('ARCH-spreads keeps every defined member (null, 0, empty string and false too) in the order given, drops only undefined', () => {
    const out = withDefined({ a: undefined, b: null, c: 0, d: '', e: false, f: 'x', g: undefined });
    expect(out).toEqual({ b: null, c: 0, d: '', e: false, f: 'x' });
    expect(Object.keys(out)).toEqual(['b', 'c', 'd', 'e', 'f']);
    expect('a' in out).toBe(false);
    expect(withDefined({})).toEqual({});
  });

  it('ARCH-spreads gives the same object as the conditional spreads it replaces', () => {
    for (const [id, stepIndex] of [
      ['call_1', 2],
      [undefined, 0],
      ['call_2', undefined],
      [undefined, undefined],
    ] as const) {
      const before = { name: 'n', ...(id !== undefined ? { id } : {}), ...(stepIndex !== undefined ? { stepIndex } : {}) };
      const after = { name: 'n', ...withDefined({ id, stepIndex }) };
      expect(after).toEqual(before);
      expect(Object.keys(after)).toEqual(Object.keys(before));
    }
  });

  it('ARCH-spreads types: a member that may be undefined is optional without undefined in its type; one that may not stays required', () => {
    const maybe = (v: number): number | undefined => (v > 0 ? v : undefined);
    const out = withDefined({ id: 'x', count: maybe(1), label: undefined as string | undefined });
    expectTypeOf(out).toEqualTypeOf<{ id: string; count?: number; label?: string }>();
    expect(out).toEqual({ id: 'x', count: 1 });
  });
});
