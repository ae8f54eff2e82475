import { describe, expect, it } from 'vitest';
import { newDeliveryId } from '../../../src/contract/deliveryId.ts';

describe('newDeliveryId', () => {
  it('Q1: dlv_<ULID>: 26 Crockford base32 characters, time-ordered prefix, no ":" or ".", never all digits', () => {
    const ids = Array.from({ length: 2000 }, () => newDeliveryId());
    for (const id of ids) {
      expect(id).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(id).not.toMatch(/[:.]/);
    }
    expect(new Set(ids).size).toBe(ids.length);
    // the first 10 characters encode the millisecond time (48 bits), as a ULID does
    expect(newDeliveryId(0).slice(4, 14)).toBe('0000000000');
    expect(newDeliveryId(1_700_000_000_000).slice(4, 14)).toBe('01HF7YAT00');
    expect(newDeliveryId(2 ** 48 - 1).slice(4, 14)).toBe('7ZZZZZZZZZ');
  });
});
