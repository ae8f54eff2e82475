import { describe, expect, it } from 'vitest';
import { createDeliveryIdFactory, newDeliveryId } from '../../../src/contract/deliveryId.ts';

describe('newDeliveryId', () => {
  it('Q1: dlv_<ULID>: 26 Crockford base32 characters, time-ordered prefix, no ":" or ".", never all digits', () => {
    const ids = Array.from({ length: 2000 }, () => newDeliveryId());
    for (const id of ids) {
      expect(id).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(id).not.toMatch(/[:.]/);
    }
    expect(new Set(ids).size).toBe(ids.length);
    // the first 10 characters encode the millisecond time (48 bits), as a ULID does
    expect(createDeliveryIdFactory()(0).slice(4, 14)).toBe('0000000000');
    expect(createDeliveryIdFactory()(1_700_000_000_000).slice(4, 14)).toBe('01HF7YAT00');
    expect(createDeliveryIdFactory()(2 ** 48 - 1).slice(4, 14)).toBe('7ZZZZZZZZZ');
  });

  it('Q1: 1,000 ids made in one millisecond come out sorted (monotonic, so `deliveries list` order is creation order)', () => {
    const next = createDeliveryIdFactory();
    const ids = Array.from({ length: 1000 }, () => next(1_700_000_000_000));
    expect(new Set(ids).size).toBe(1000);
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => id.slice(4, 14) === '01HF7YAT00')).toBe(true);
  });

  it('Q1: a clock that steps back keeps ids increasing; a later millisecond starts fresh', () => {
    const next = createDeliveryIdFactory();
    const a = next(2_000);
    const b = next(1_000); // clock stepped back
    const c = next(3_000);
    expect(a < b && b < c).toBe(true);
    expect(b.slice(4, 14)).toBe(a.slice(4, 14));
    expect(c.slice(4, 14)).not.toBe(a.slice(4, 14));
  });

  it('Q1: the shared generator is monotonic across calls at the real clock', () => {
    const ids = Array.from({ length: 5000 }, () => newDeliveryId());
    expect([...ids].sort()).toEqual(ids);
  });

  it('rejects a time outside the 48-bit range', () => {
    expect(() => createDeliveryIdFactory()(-1)).toThrow(RangeError);
    expect(() => createDeliveryIdFactory()(2 ** 48)).toThrow(RangeError);
  });
});
