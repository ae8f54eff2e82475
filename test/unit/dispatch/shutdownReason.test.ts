import { describe, expect, it } from 'vitest';
import { SummarySchema } from '../../../src/contract/agentHooks.ts';
import { shutdownReasonFor } from '../../../src/dispatch/shutdownReason.ts';

describe('I4: completion reasons at agent_shutdown (summary.reason)', () => {
  it('I4: done → completed, error → error, interrupted / max_steps / cost_limit → cancelled', () => {
    expect(shutdownReasonFor('done')).toBe('completed');
    expect(shutdownReasonFor('error')).toBe('error');
    expect(shutdownReasonFor('interrupted')).toBe('cancelled');
    expect(shutdownReasonFor('max_steps')).toBe('cancelled');
    expect(shutdownReasonFor('cost_limit')).toBe('cancelled');
  });

  it('I4: a reason hookrelay does not know is never reported as a success', () => {
    for (const r of ['', 'weird', 'toString', '__proto__', 'constructor']) expect(shutdownReasonFor(r)).toBe('error');
  });

  it('I4: every mapped value is one the contract allows', () => {
    for (const r of ['done', 'error', 'interrupted', 'max_steps', 'cost_limit', 'other']) {
      expect(SummarySchema.safeParse({ reason: shutdownReasonFor(r) }).success).toBe(true);
    }
  });
});
