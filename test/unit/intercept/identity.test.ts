import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  canonicalizeJcs,
  createIdentityProvider,
  HostErrorFailure,
  jcsSha256Identity,
  projectIdentityPreimage,
  validateEnvelope,
  type AgentContext,
} from '../../../src/intercept/index.ts';

type Fixture = { id: string; ctx: AgentContext; expect: { canonical_json?: string; context_identity?: string; error?: string } };
const golden = JSON.parse(readFileSync(join(import.meta.dirname, '../../conformance/fixtures/golden/identity.json'), 'utf8')) as { fixtures: Fixture[] };

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof HostErrorFailure ? err.reason : `unexpected ${String(err)}`;
  }
  return undefined;
}

const base = {
  spec: 'agent-hooks/0.1',
  interception_point: 'pre_tool_call',
  timestamp: '2026-01-01T00:00:00.000Z',
  sequence: 3,
  agent: { id: 'a', framework: 'test' },
  session: { id: 's' },
};
function toolCtx(args: Record<string, unknown>): AgentContext {
  return { ...base, tool_call: { id: 'tc', name: 't', args }, target: args } as unknown as AgentContext;
}

describe('I1: jcs-sha256 golden identity vectors', () => {
  const positives = golden.fixtures.filter((f) => f.expect.canonical_json !== undefined);
  const negatives = golden.fixtures.filter((f) => f.expect.error !== undefined);

  it('I1: the golden file carries positives and negatives', () => {
    expect(positives.length).toBeGreaterThanOrEqual(16);
    expect(negatives.length).toBeGreaterThanOrEqual(2);
  });

  for (const f of positives) {
    it(`I1: ${f.id} reproduces the canonical bytes and the identity`, () => {
      // canonical_json pins the RFC 8785 bytes of the whole fixture; the identity hashes its ctx_rc projection.
      expect(canonicalizeJcs(f.ctx)).toBe(f.expect.canonical_json);
      expect(jcsSha256Identity(f.ctx)).toBe(f.expect.context_identity);
    });
  }

  for (const f of negatives) {
    it(`I1: ${f.id} is rejected as ${f.expect.error}`, () => {
      expect(reasonOf(() => jcsSha256Identity(f.ctx))).toBe(f.expect.error);
    });
  }

  it('I1: optional and namespaced members never perturb the identity (G-05 = G-05b)', () => {
    const g05 = golden.fixtures.find((f) => f.id.startsWith('G-05-'));
    const g05b = golden.fixtures.find((f) => f.id.startsWith('G-05b'));
    expect(g05?.expect.context_identity).toBe(g05b?.expect.context_identity);
  });
});

describe('I1: RFC 8785 canonical JSON', () => {
  it('I1: sorts members by UTF-16 code units, not code points', () => {
    expect(canonicalizeJcs({ '\ue000': 1, '\u{10000}': 2, a: 3, '': 4 })).toBe('{"":4,"a":3,"\u{10000}":2,"\ue000":1}');
  });

  it('I1: serializes numbers per ECMA-262 and -0 as 0', () => {
    expect(canonicalizeJcs([1.0, -0, 1e21, 1e-7, 0.000001, 123456789.125, -5])).toBe('[1,0,1e+21,1e-7,0.000001,123456789.125,-5]');
  });

  it('I1: escapes minimally and keeps non-ASCII verbatim', () => {
    expect(canonicalizeJcs({ s: 'a"b\\c\n\u0001é€😀\u2028' })).toBe('{"s":"a\\"b\\\\c\\n\\u0001é€😀\u2028"}');
  });

  it('I1: ±(2^53−1) are inside the domain; one past either bound is context_invalid', () => {
    expect(canonicalizeJcs([9007199254740991, -9007199254740991])).toBe('[9007199254740991,-9007199254740991]');
    expect(reasonOf(() => canonicalizeJcs({ id: 2 ** 53 }))).toBe('host_error:context_invalid');
    expect(reasonOf(() => canonicalizeJcs({ id: -(2 ** 53) }))).toBe('host_error:context_invalid');
  });

  it('I1: NaN and ±Infinity are rejected, never rewritten to null', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(reasonOf(() => canonicalizeJcs({ x: [bad] }))).toBe('host_error:context_invalid');
      expect(reasonOf(() => jcsSha256Identity(toolCtx({ x: bad })))).toBe('host_error:context_invalid');
    }
  });

  it('I1: lone surrogates in values or member names are rejected', () => {
    expect(reasonOf(() => canonicalizeJcs({ s: 'a\ud800' }))).toBe('host_error:context_invalid');
    expect(reasonOf(() => canonicalizeJcs({ s: '\udc00b' }))).toBe('host_error:context_invalid');
    expect(reasonOf(() => canonicalizeJcs({ 'k\ud83d': 1 }))).toBe('host_error:context_invalid');
    expect(canonicalizeJcs({ s: '\ud83d\ude00' })).toBe('{"s":"😀"}');
  });

  it('I1: nesting deeper than 128 levels fails closed instead of overflowing', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 127; i++) deep = [deep];
    expect(() => canonicalizeJcs(deep)).not.toThrow(); // 128 levels: at the bound
    let deeper: unknown = deep;
    for (let i = 0; i < 100_000; i++) deeper = [deeper];
    expect(reasonOf(() => canonicalizeJcs(deeper))).toBe('host_error:context_invalid');
    expect(validateEnvelope(toolCtx({ d: deeper })).ok).toBe(false);
  });

  it('I1: values that are not JSON (undefined element, bigint, functions, Dates) are rejected', () => {
    expect(reasonOf(() => canonicalizeJcs([undefined]))).toBe('host_error:context_invalid');
    expect(reasonOf(() => canonicalizeJcs({ n: 1n }))).toBe('host_error:context_invalid');
    expect(reasonOf(() => canonicalizeJcs({ d: new Date(0) }))).toBe('host_error:context_invalid');
  });
});

describe('I1: identity providers', () => {
  it('I1: the identity is a function of ctx_rc only and changes when the target changes', () => {
    const a = jcsSha256Identity(toolCtx({ url: 'x' }));
    const withOptional = { ...toolCtx({ url: 'x' }), trace: { trace_id: 'abc' }, extensions: { acme: { k: 1 } } } as AgentContext;
    expect(jcsSha256Identity(withOptional)).toBe(a);
    expect(jcsSha256Identity(toolCtx({ url: 'y' }))).not.toBe(a);
    expect(a).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('I1: refuses a guessed preimage — unknown or missing interception_point', () => {
    expect(reasonOf(() => jcsSha256Identity({ ...toolCtx({}), interception_point: 'pre_anything' }))).toBe('host_error:context_invalid');
  });

  it('I1: custom provider names must match ^[a-z][a-z0-9_-]*$ and must not start with jcs', () => {
    expect(() => createIdentityProvider('hmac-sha256-k1', () => 'x')).not.toThrow();
    for (const bad of ['jcs-custom', 'jcs', 'Upper', '1abc', 'has space', '']) {
      expect(() => createIdentityProvider(bad, () => 'x')).toThrow(TypeError);
    }
  });
});

describe('I1: ctx_rc projection', () => {
  it('I1: G-05 hashes exactly the canonical bytes of its projection, which equal G-05b', () => {
    const g05 = golden.fixtures.find((f) => f.id.startsWith('G-05-')) as Fixture;
    const g05b = golden.fixtures.find((f) => f.id.startsWith('G-05b')) as Fixture;
    expect(canonicalizeJcs(projectIdentityPreimage(g05.ctx))).toBe(g05b.expect.canonical_json);
  });
});
