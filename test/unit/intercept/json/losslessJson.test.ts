/** I1: lossless JSON at the trust boundaries — read without losing integer precision (vectors 090/091/095). */
import { describe, expect, it } from 'vitest';
import { canonicalizeJcs, parseJsonLossless, parseWireVerdict, validateEnvelope, AgentContextBuilder } from '../../../../src/intercept/index.ts';

describe('I1: lossless JSON at the trust boundaries', () => {
  it('an integer beyond 2^53 stays exact (a bigint) where JSON.parse rounds it', () => {
    const text = '{"a":9007199254740993,"b":18446744073709551616,"c":9007199254740991,"d":1.5,"e":-0,"f":1e3}';
    expect((JSON.parse(text) as { a: number }).a).toBe(9007199254740992); // the silent rounding this prevents
    const v = parseJsonLossless(text) as Record<string, unknown>;
    expect(v.a).toBe(9007199254740993n);
    expect(v.b).toBe(18446744073709551616n);
    expect(v.c).toBe(9007199254740991); // safe integers stay numbers
    expect(v.d).toBe(1.5);
    expect(Object.is(v.e, -0)).toBe(true);
    expect(v.f).toBe(1000);
  });

  it('duplicate member names are an error (I-JSON), as is malformed text', () => {
    expect(() => parseJsonLossless('{"a":1,"a":2}')).toThrow();
    expect(() => parseJsonLossless('{"a":')).toThrow();
  });

  it('a bigint in a context is context-invalid by name, never canonicalized', () => {
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'x' });
    const ctx = b.preToolCall({ id: 't', name: 'wire', args: { id: 9007199254740993n as unknown as number } });
    const check = validateEnvelope(ctx);
    expect(check.ok).toBe(false);
    expect(!check.ok && check.detail).toMatch(/^\$\.(target|tool_call\.args)\.id: integer exceeds 2\^53/);
    expect(() => canonicalizeJcs({ id: 5n })).toThrow(/bigint is not an I-JSON value/);
  });

  it('the verdict gate accepts a bigint transform value as JSON (its domain is judged where it would land)', () => {
    const r = parseWireVerdict(parseJsonLossless('{"decision":"transform","transform":{"path":"$target.amount","value":9007199254740993}}'));
    expect(r.ok).toBe(true);
    expect(r.ok && r.verdict.transform?.value).toBe(9007199254740993n);
  });
});
