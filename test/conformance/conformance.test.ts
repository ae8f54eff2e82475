import { describe, expect, it } from 'vitest';
import { DEFAULT_VECTORS_DIR, OWN_VECTORS_DIR, loadVectors, runConformance, runVector, validateVector } from './harness.ts';

/**
 * The run adapter's two surfaces declare every capability the kit's vectors use (buffered and
 * incremental streaming, lossless 64-bit JSON), so no vector may skip: a skip is a failure here.
 */
const KIT_VECTOR_COUNT = 51;

function cases(dir: string): Array<[string, unknown]> {
  return loadVectors(dir).map(({ file, vector }) => [file.replace(/\.json$/, ''), vector]);
}

for (const [label, dir] of [
  ['shared CTK vectors', process.env.CTK_VECTORS_DIR ?? DEFAULT_VECTORS_DIR],
  ['own CTK vectors', OWN_VECTORS_DIR],
] as const) {
  describe(`I2: AGENT-HOOKS-0.1 conformance — ${label}`, () => {
    for (const [name, vector] of cases(dir)) {
      it(`I2: ${name}`, async () => {
        expect(validateVector(vector)).toBeNull();
        const r = await runVector(vector, name);
        expect(r.detail).toBe('');
        expect(r.status).toBe('pass');
      });
    }

    it('I2: the harness run reports zero failures and zero skips', async () => {
      const report = await runConformance(dir);
      expect(report.failed).toBe(0);
      expect(report.skipped).toBe(0);
      expect(report.passed).toBe(report.results.length);
      if (dir === DEFAULT_VECTORS_DIR) expect(report.results.length).toBe(KIT_VECTOR_COUNT);
    });
  });
}

describe('I2: the harness never reports vacuous conformance', () => {
  it('I2: an empty vector directory is an error, not a pass', () => {
    expect(() => loadVectors(`${OWN_VECTORS_DIR}/../fixtures/golden`)).toThrow(/no AH-CTK/);
  });

  it('I2: a vector that breaks the grammar fails instead of running', async () => {
    const r = await runVector({
      id: 'AH-CTK-999',
      title: 'x',
      spec_clause: '5',
      scenario: { input: { content: 'x', role: 'user' } },
      interceptor_script: [],
      expect: {},
    });
    expect(r.status).toBe('fail');
    expect(r.detail).toMatch(/invalid vector/);
  });

  it('I2: an expectation the host does not meet is reported as a failure', async () => {
    const vector = {
      id: 'AH-CTK-998',
      title: 'deliberately wrong expectation',
      spec_clause: '6',
      capabilities: [],
      scenario: { input: { content: 'hi', role: 'user' } },
      interceptor_script: [{ at: 'input', return: { decision: 'deny', reason: 'ctk:x' } }],
      expect: { interceptions: [], run_outcome: 'completed' },
    };
    const r = await runVector(vector);
    expect(r.status).toBe('fail');
    expect(r.detail).toMatch(/run_outcome == "blocked", want "completed"/);
  });
});
